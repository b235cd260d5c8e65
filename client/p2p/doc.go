// Package p2p is the Go SDK for peers of a Switchboard P2P network: a
// logged-in client joins a network by name or join code through the API
// (/p2p/v1, with a login session of package client/session), connects
// to the network's hub over TLS, sees the other peers come and go, and
// sends them messages, requests and broadcasts through the hub. The wire
// is docs/protocol/p2p.md (package protocol/p2pwire).
//
// # Flow
//
//	sc, _ := session.Login(ctx, apiURL, "alice", authToken, nil)
//	peer, _ := p2p.Join(ctx, sc, p2p.JoinRequest{Network: "lobby"}, nil)
//	defer peer.Close()
//	go func() { for ev := range peer.Events() { … joined, left … } }()
//	peer.Broadcast(ctx, p2p.Envelope{Header: "chat", Payload: []byte("hi")})
//	for m := range peer.Messages() {
//		if m.IsRequest() { m.Respond(ctx, p2p.Envelope{Payload: …}) }
//	}
//
// # Security
//
// The hub's certificate is verified with Config.RootCAs when given, and
// otherwise pinned to the SHA-256 fingerprint the API returned with the
// ticket (a hub with a self-signed certificate). The hub stamps the
// sender of every message: From cannot be forged by another peer. The
// ticket is a credential; the package never logs it, nor payloads.
//
// # Goroutines and who closes what
//
// A [Peer] runs two goroutines: a reader (decodes frames, keeps the peer
// set, fills Messages and Events, answers the hub's PING, hands answers
// to waiting requests, resumes a lost connection) and a pinger (PING every Config.PingInterval; the
// reader gives up on a hub silent for three intervals). Writes are made
// by the calling goroutine under a lock, each bounded by
// Config.WriteTimeout; a failed write closes the socket (the reader then
// resumes). While resuming, the reader also runs a short-lived watcher
// that stops a dial in progress when the peer is closed. [Peer.Close]
// says GOODBYE, closes the socket and waits for both goroutines; the
// reader closes Messages and Events when it stops. Messages and Events
// must be drained: when one is full the reader waits, and the hub drops
// a peer that reads too slowly (ERROR slow_consumer).
//
// # Errors
//
// The join call fails with a *session.APIError matching ErrBanned,
// ErrJoinCodeRequired, ErrNotAllowed, ErrHubUnavailable or the session
// sentinels. The hub's ERRORs are [*HubError]s matching ErrUnknownPeer,
// ErrKicked, ErrNetworkFull, …: a request's fails that request, a
// closing one ends the connection ([Peer.Err]), any other arrives as an
// EventError. Calls on an ended connection fail with ErrClosed.
//
// # Resuming
//
// When the connection is lost (not ended by the hub, not closed by the
// caller), the reader reconnects with the resume token of the last
// WELCOME within the hub's resume window (30 s by default): the peer id
// stays, the other peers see no leave, and what the hub queued meanwhile
// is delivered. Events says EventDisconnected, then EventResumed; sends
// in between fail with ErrDisconnected. When the window passes or the hub
// refuses, the connection ends ([Peer.Err]).
//
// # UDP
//
// When the hub's WELCOME carries a UDP session (a key id and a 32-byte
// secret; docs/protocol/p2p.md §11), Connect opens one UDP socket
// (Config.UDPAddr) and registers with the hub's UDP port (the TLS port's
// number): REGISTER, sealed with the session's peer→hub key, repeated
// every Config.RegisterRetry until REGISTERED, then every PingInterval
// (keeping NAT mappings open) and at once when the local addresses
// change. [Peer.Registered] is closed at the first answer and
// [Peer.PublicEndpoint] is what the hub saw. The hub checks each new
// endpoint of the peer (its first, and each NAT rebinding) with a
// PATH_CHALLENGE; the UDP reader answers it at once with a PATH_RESPONSE
// from the same socket (docs/protocol/p2p.md §12.4), counted in
// UDPStats.PathChallenges. [Peer.SendUDP] and
// [Peer.BroadcastUDP] send an envelope as one UDP_MESSAGE, or, over
// 1,104 bytes, as JUMBO fragments of 1,024 bytes paced at
// Config.JumboRate, up to [MaxJumboSize] (16,256,000 bytes; larger is
// ErrTooLarge). Received UDP messages arrive on Messages with
// Message.UDP set; they are never waited for: a full Messages drops them
// (UDPStats.DroppedQueueFull). Jumbo messages are reassembled within
// Config.JumboMemory per sender and Config.JumboTotalMemory in all, and
// dropped (UDPStats.JumboTimedOut) when no chunk came for
// Config.JumboTimeout; nothing is retransmitted. Datagrams that do not
// open (forged, another key, replayed) are dropped and counted,
// never answered.
//
// The UDP side adds two goroutines: the UDP reader (opens, dispatches,
// reassembles, answers PING and PATH_CHALLENGE) and the keeper (REGISTER). The TLS reader
// stops them, and the extensions, before it closes Messages and Events.
//
// # Reliable channels
//
// [Peer.SendReliable] sends an envelope on Ch1, Ch2 (bulk: KCP's standard
// timers) or Realtime (KCP's no-delay mode) as RELIABLE datagrams
// (docs/protocol/p2p.md §13), over the path sendDatagram picks;
// [Peer.Reliable] delivers what other peers sent, with its channel. Each
// (peer, channel) is one KCP conversation, opened on the first message
// either way, on one internal/kcploop.Loop per Peer; one delivery
// goroutine reads whole messages from the conversations in turn (so no
// channel's backlog queues ahead of another's), fills Reliable, and
// closes conversations idle for ReliableConfig.IdleTimeout. A
// conversation also closes when its peer leaves (what had arrived is
// still delivered). SendReliable blocks while the conversation's send
// queue is full, until ctx ends. Bounds: BulkSendQueue and
// RealtimeSendQueue segments queued per conversation, the receive
// windows (BulkWindow, RealtimeWindow segments), ReliableConfig.MaxMessage
// per message, MaxConversations. The loop and the delivery goroutine
// (reliable_peer.go, channels.go) are stopped with the other extensions
// when the connection ends, which closes Reliable.
//
// # Hooks (for this package's UDP extensions)
//
// Reliable channels (RELIABLE, KCP) and direct paths (hole punching) are
// built inside this package on these unexported names, which stay
// stable:
//
//   - Sending. p.sendDatagram(to, kind, rest) (Path, error) seals a routed
//     datagram of any kind (rest = the kind's fields, at most
//     p2pwire.MaxRoutedRest bytes) and sends it to peer to over the
//     current path: the direct path installed for the peer when its up
//     flag is set, else the hub (routing header `to`); a failed direct
//     send falls back to the hub. p.broadcastDatagram(kind, rest) goes
//     through the hub to the whole network. p.sealTo(sealer, addr, plain)
//     seals a whole plaintext (routing header included) with any sealer
//     and sends it from the peer's socket (punch probes). All serialize
//     on one lock and allocate nothing.
//   - Direct paths. A *directPath{peer, path (PathDirectUDP or
//     PathDirectTCP), keyID, side (internal/p2pseal.PairSide: the pair
//     key), writeTCP} with setRemote(addr) and up.Store(true) is
//     installed with p.setDirectPath(d) and removed with
//     p.clearDirectPath(d); p.directPath(peer) returns the current one.
//     A UDP path's key id is registered for receiving: datagrams under it
//     are opened with d.side.Open and come as from d.peer on
//     PathDirectUDP. Direct datagrams have route_flags 0 (the
//     sender is the other end). A punched TCP connection's reader hands
//     each plaintext to p.dispatchDatagram(PathDirectTCP, peer, {}, 0,
//     plain, now); writeTCP writes one (its framing is the punch code's).
//   - Receiving. p.handleDatagrams(kind, h) registers h for received
//     datagrams of kind (RELIABLE → reliable channels; the punch kinds
//     0x25–0x3F, once p2pwire defines them → punch). h gets an
//     *inDatagram: Kind, From (stamped by the hub, or the direct path's
//     peer), Broadcast, Path (which path it came on), Src (UDP source),
//     KeyID and Rest (the fields after the routing header, valid during
//     the call only). It runs on the reader: it must not block. Messages
//     to the application go through p.deliverUDP(m) (never waits).
//   - Socket and endpoints. p.udpConn() is the socket (nil without UDP;
//     write only through the calls above), p.udpLocal() its bound
//     address (the port REGISTER announces), p.candidates() the local
//     candidates registered, [Peer.PublicEndpoint] the hub-observed one.
//   - Lifecycle. An extension appends a start function to the package
//     variable extensions from an init function: Connect calls it with
//     the peer (UDP up, readers not yet running; p.udp is nil without
//     UDP) and keeps the stop function it returns; the stops run in
//     reverse order when the connection ends, before Messages and Events
//     close.
//
// # Hole punching
//
// [Peer.Punch] (punch.go, tcppunch.go) asks the hub for a punch; the hub
// offers both sides a pair key and each other's registered endpoints
// (PUNCH_OFFER, handled on the TLS reader). A UDP punch registers the pair
// key as a direct path that is not yet up, probes every candidate and the
// public endpoint each Config.ProbeInterval, answers probes with acks and
// is confirmed at the first ack; a TCP punch connects from the registered
// UDP port number to the other's public endpoint (and listens there) until
// one connection opens, then exchanges sealed probes on it. Either way the
// path is then up and every send to the peer takes it; each side reports
// the outcome to the hub and emits EventPath. Goroutines: one per punch
// the other side asked for (the caller's goroutine runs its own), one
// keeper per up path (keep-alive probes; after Config.DirectTimeout
// without an ack the path is removed and EventPath says PathHub), and one
// reader per punched TCP connection. The punch extension's stop closes the
// TCP connections and waits for all of them.
package p2p
