// Package p2p is the P2P hub's TLS side (issue 10): peers connect over TLS
// 1.3, authenticate with a sealed hub ticket, join a network, see its other
// peers come and go, and send each other messages, requests and responses
// and broadcasts through the hub, which stamps who sent them. The wire is
// protocol/p2pwire (docs/protocol/p2p.md). Its UDP port (issue 11, udp.go
// and stun.go) routes sealed datagrams between the same peers.
//
// # Admission
//
// The first frame must be HELLO within Config.HelloTimeout (which also
// bounds the TLS handshake). Its ticket is opened with the deployment's
// [tokens.HubKeyring]: no lookup; the ticket names the user, the network,
// the peer id and this hub (a ticket for another hub is refused). With a
// resume token from an earlier WELCOME, a peer that lost its connection
// gets its peer id back within Config.ResumeWindow: the others see no
// leave, and what was queued for it meanwhile is delivered. With
// Config.AllowAnonymous (development only) a ticket AnonymousPrefix+NAME
// joins network NAME as user "anonymous".
//
// # Routing
//
// The reader handles every whole frame in its read buffer in place, reads
// the clock once per such batch, decodes the routing header only
// (p2pwire.DecodeRouting), looks the destination up in the sender's network
// (or reuses the last one while the network's version holds), and appends
// the stamped frame — length, kind, flags, from, then the rest of the body
// as it arrived — to the destination's send queue. Nothing is allocated per
// routed message (TestRouteAllocatesNothing). A destination outside the
// sender's network is an unknown peer. Request/response correlation is the
// peers': the hub routes REQUEST and RESPONSE like MESSAGE, and puts the
// message id in any ERROR about them so the requester fails at once; the
// SDK owns timeouts and cancellation.
//
// # Limits
//
// Every per-peer send queue is bounded in bytes (Config.SendQueueBytes): a
// peer whose queue would overflow is dropped with ERROR slow_consumer, and
// the senders never wait for it. Per peer, a token bucket bounds routed
// messages per second and another routed bytes per second; a per-network
// bucket bounds the bytes of all its peers; over either, the message is
// dropped with ERROR rate_limited or quota_exceeded and the connection
// stays. The per-peer buckets belong to the connection: a resumed peer
// starts with full ones (a reconnect costs a TLS handshake, and the
// network's bucket still holds). Frames are at most Config.MaxFrameSize, networks at most
// Config.MaxPeersPerNetwork peers, the hub at most Config.MaxConns
// connections. Nothing logged holds a ticket, a token or a payload.
//
// # Peer sets and events
//
// After WELCOME a peer gets PEER_SET, then PEER_EVENTS coalesced per
// write: each peer's pending events are a map from peer id to joined or
// left, where a join and a leave of the same peer cancel out, sent sorted
// with the network's version (bumped on every join and leave) before the
// queued messages of the same write.
//
// # UDP
//
// [Hub.ServeUDP] serves one UDP socket, bound to the TLS listener's port
// number. Every peer gets a fresh key id and 32-byte secret at join
// (kept across resumes, forgotten when it leaves), sent in WELCOME; the
// hub's side of the keys comes from internal/p2pseal (HKDF labels,
// ChaCha20-Poly1305 of internal/sealed, replay window). One reader reads
// batches (internal/udpio, recvmmsg), finds each datagram's peer by its key
// id (no lookup by address), opens it, moves the peer's endpoint to the
// source of its newest datagram (NAT rebinding) and checks a new endpoint
// before sending there freely (pathcheck.go: a PATH_CHALLENGE, and at most
// 3 times the bytes from it until the answer), answers REGISTER and PING, and stamps and
// re-seals every routed kind for its destination or for every other
// registered peer of the network, into an out batch written with sendmmsg
// once per read batch. Nothing is allocated per datagram in steady state
// (TestUDPRouteAllocatesNothing). Per peer: a datagram token bucket
// (Config.PeerDatagramRate, a broadcast counts per recipient), the path
// check's fixed-size state and datagram/byte counters ([Hub.PeerUDP],
// shown by the server API). STUN
// binding requests are answered (pion/stun) at most
// Config.STUNRatePerSource a second per source address and
// Config.STUNRate in all. Nothing unauthenticated is answered otherwise,
// and drops are counted by reason, never reported (no ERROR on UDP).
//
// # Hole punching
//
// PUNCH_REQUEST is handled on the requester's reader (punch.go): checked
// against a per-peer token bucket (Config.PunchRate, burst
// DefaultPunchBurst), the requester's punches in flight
// (Config.MaxPunchesPerPeer) and both peers' UDP registrations; the hub
// then draws a punch id, a pair key id that is no peer's hub key id and a
// 32-byte secret, and queues PUNCH_OFFER to both sides. PUNCH_RESULTs are
// counted (switchboard_hub_punches_total). The broker's state is a map
// under its own lock, a leaf in the lock order; a peer's entries go when
// it leaves its network. The hub never sees the punched traffic.
//
// # Goroutines and who closes what
//
// [Hub.Serve] runs the accept loop on a listener and closes it. Each
// connection has one goroutine that does the handshake and then reads, and
// once admitted one writer that swaps the peer's queue for an empty buffer
// and writes everything queued in one Write (coalescing). A detached peer
// has a timer for its resume window. [Hub.Shutdown] sends every peer ERROR
// shutting_down and waits for the goroutines; [Hub.Close] closes every
// connection at once. Both close the listeners and the UDP socket (its
// ServeUDP then returns ErrServerClosed); the goroutines are tracked and
// joined. ServeUDP's reader is the caller's goroutine, like Serve's
// accept loop.
//
// # Lock order
//
// Hub.mu, then network.mu, then peer.mu; the reader holds a network's read
// lock while it queues to that network's peers. The UDP reader takes
// Hub.kmu (key id → peer) alone, then a network's read lock while it
// routes, then a peer's UDP mutex (its rate bucket, its candidates, its
// path check), one peer's at a time.
package p2p
