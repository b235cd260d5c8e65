// Package udp is the game node's UDP transport (docs/protocol/rooms-udp.md),
// beside the WebSocket one of package node: sealed datagrams
// (internal/sealed) in and out of one socket with batched reads and writes
// (internal/udpio), the handshake's HELLO or RESUME → WELCOME or ERROR as
// sealed datagrams, then reliable messages on one KCP conversation per
// session (internal/kcploop), FRAME (behind the highest input sequence
// number taken: the client's acknowledgement), PONG and unreliable CUSTOM
// as single sealed datagrams, and the clients' INPUTs from INPUTS
// datagrams that repeat them until acknowledged, each handed to the room
// once. The handshake's checks and the message dispatch
// are package node's ([node.Server.Seat], [node.Dispatcher]); the room
// rules are package rooms'.
//
// # Sessions
//
// A session is identified by its key, not its address: a SESSION
// datagram is routed by its key id (WELCOME.conv) and accepted only if it
// opens with that session's key and passes its replay window; an
// accepted datagram with a sequence number above every earlier one moves
// the session to its source address (NAT rebinding). A new address that
// is not validated gets a PATH_CHALLENGE and, until its PATH_RESPONSE
// comes from there, at most 3 times the bytes of the authenticated
// datagrams it sent (FRAMEs and unreliable messages beyond are dropped as
// if lost, KCP resends later); the handshake's address counts as
// validated, and so does a return to the last validated address
// (pathcheck.go). The session key is
// derived from the deployment's signing key and the HANDSHAKE's key id
// (protocol/roomudp), so nothing is looked up. A datagram that does not
// authenticate is dropped and counted by reason, never answered; the only
// answer to a datagram not yet tied to a session is the HANDSHAKE REPLY,
// once per accepted sequence number, to a HANDSHAKE padded to 1200 bytes.
// Until a seated session's first SESSION datagram arrives (it is then
// established: the address is proven) the node sends it only the reply
// and KCP, with a send window of 2 segments and at most 3 times the bytes
// of the attempt's HANDSHAKEs; unreliable messages (FRAME, CUSTOM) are
// dropped as if lost, so a HANDSHAKE from a forged or silent address gets
// no stream at tick rate and no resume's catch-up.
//
// A session ends when it sends no authenticated datagram for
// Config.IdleTimeout (the seat goes offline, reason timeout), when a
// seated handshake gets no SESSION datagram within
// Config.HandshakeTimeout (offline, network), after three invalid
// messages in a row (ERROR 6), when its KCP send queue is full (the room
// drops it, slow consumer) or when the room closes it (kick, room closed,
// drain: the final ERROR goes on KCP and the session lingers
// Config.Linger for KCP to deliver it).
//
// # Bounds
//
// New HANDSHAKEs (retransmissions of a known attempt are free): per
// source, an IPv4 address or IPv6 /64, Config.SourceHandshakeRate a second
// (beyond: dropped, reason source_rate, before any key derivation; the
// table of sources is fixed, see sourceLimiter), then for the whole node
// Config.HandshakeRate (beyond: busy).
// Config.MaxSessions sessions and Config.MaxPending handshakes; per
// session KCP's windows (roomudp.KCPWindow), Config.SendQueue segments
// queued, messages in of at most node.DefaultReadLimit bytes, and a read
// budget of Config.ReadRate bytes a second (authenticated datagrams
// beyond it are dropped, reason rate); one outgoing
// queue of Config.OutQueue datagrams shared by all sessions (a datagram
// that finds it full is dropped and counted; KCP retransmits its own).
//
// # Goroutines, concurrency and closing
//
// [New] starts nothing. [Server.Serve] reads in its own goroutine and
// starts three more: the writer (it drains the outgoing queue with
// batched writes, so that the datagrams the rooms queue in one tick leave
// in as few sendmmsg calls as the batch size allows), the KCP loop's
// timer wheel, and a janitor that ends idle and lingering sessions once a
// second. No goroutine per session. Rooms call a session's Send and Close
// from their own goroutines; sealing is safe for concurrent use and the
// outgoing queue has its own mutex. [Server.Close] closes the socket it
// was given, stops the four goroutines, waits for them and forgets every
// session (their seats go offline).
//
// # Metrics
//
// When Config.Registerer is set: switchboard_node_udp_sessions,
// switchboard_node_udp_datagrams_in_total, switchboard_node_udp_datagrams_out_total,
// switchboard_node_udp_write_batches_total,
// switchboard_node_udp_dropped_total{reason} (the reasons of
// rooms-udp.md §9, queue_full and unvalidated for outgoing datagrams among
// them), switchboard_node_udp_handshakes_total{result} (welcome, error,
// resent), switchboard_node_udp_path_checks_total{result} (validated,
// abandoned), switchboard_node_udp_inputs_total{result} and
// switchboard_node_udp_frame_repeats_total.
// The im.game.v1 message counters of package node (in, out, ERROR codes)
// count both transports: sessions report what they send with
// [node.Server.CountSent].
package udp
