// Package relay is the data plane of a Unity-Relay-compatible relay node:
// it binds allocations to client addresses and forwards RELAY messages
// between a host and its joiners, over UDP, WebSocket and DTLS at once, as Unity
// Transport expects (reference unity-relay.md §1.8 and the checklist of
// §8; the behaviour is documented in docs/protocol/relay.md §15).
//
// It owns the allocations' live state (bound endpoint, nonce, peers, idle
// clocks, counters) and the QoS responder on the UDP port. It does not own
// the REST API, join codes or the registry of relay nodes (control does),
// the wire codec (protocol/relaywire) or the sealed connection data format
// (tokens.RelayKeyring): a BIND carries a blob sealed by the control plane
// that names the allocation, and the allocation's key is derived from the
// id, so the data plane never waits on control or NATS.
//
// Beyond Unity's protocol it serves Switchboard's host peer events: a host
// that sends PEERS_SUBSCRIBE (0x80) from its bound address is told, with
// PEER_EVENT (0x81), of every peer that connects or leaves
// (docs/protocol/relay.md §17). A Unity client never sends 0x80 and so
// never sees 0x81. An allocation's own idle timeout (from its blob) also
// holds open the WebSocket connection it is bound over.
//
// # Goroutines and ownership
//
// New starts nothing. ServePacket(pc) reads pc in the calling goroutine, a
// batch of datagrams per system call (internal/udpio), handles each inline,
// and sends what the batch produced for that socket in one batched write
// (answers, echoes and forwards to clients on other sockets or WebSocket
// connections leave at once). To use more cores, open several sockets on
// one port with SO_REUSEPORT and call ServePacket on each; Serve(ln) accepts WebSocket connections in
// the calling goroutine and runs two goroutines per connection (a reader
// that handles messages, a writer fed by a bounded queue). The first Serve
// or ServePacket starts one sweeper goroutine (timeouts). ServeDTLS(pc)
// reads pc in the calling goroutine and hands each datagram to its DTLS
// connection's bounded queue; each connection runs one goroutine
// (handshake, then reads; pion/dtls runs its own per connection, joined
// by its Close), which it ends when its peer goes quiet or closes, or its
// allocation is released. Close closes
// every socket and listener given to the server and every WebSocket and
// DTLS connection, and waits for every goroutine; Shutdown first sends the
// WebSocket connections a close frame and the DTLS ones a close_notify.
// The caller opens the sockets.
//
// # Concurrency
//
// Allocations live in lock-free maps; each allocation has its own mutex,
// taken only by messages from or to it (a host's before a joiner's), so
// unrelated allocations share no lock. Forwarding a RELAY between UDP and
// WebSocket clients allocates nothing; a DTLS record is sealed and opened
// by pion/dtls, which allocates per record. A host's PEER_EVENTs are sent
// under its mutex, so that they leave in the order of the changes they
// report.
package relay
