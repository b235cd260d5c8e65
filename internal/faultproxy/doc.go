// Package faultproxy is a TCP proxy that injects network faults, for the
// chaos tests of the rooms pillar. A test starts a game node, serves a
// [Proxy] in front of it on 127.0.0.1:0, points the clients at the proxy
// (rewriting the host:port of ws_url) and lets the proxy sever, stall and
// delay their connections while it checks that lockstep frames stay
// identical and gapless.
//
// The proxy moves bytes and nothing else: it knows no HTTP or WebSocket,
// so the upgrade and every frame pass through untouched. Its faults only
// cut, pause or delay a connection; it never alters, drops from the middle
// or reorders a byte. What a client receives on a connection is always a
// prefix of what the other side sent on it.
//
// # Faults
//
//   - Sever: both sides of the connection are closed; each peer sees EOF
//     (or a reset, if it had unread data). Random at Faults.SeverRate per
//     connection per second, or at once with [Proxy.SeverAll].
//   - Blackout: [Proxy.SetBlackout] severs every connection and closes
//     new ones on accept until it is turned off, as when a peer's network
//     is down; a client that reconnects in a loop gets nowhere until then.
//   - Stall: one or both directions stop forwarding for a while without
//     closing anything, a black hole that only a peer's silence detection
//     notices. Random at Faults.StallRate with a duration in
//     [Faults.StallMin, Faults.StallMax], or with [Proxy.StallAll];
//     [Proxy.ResumeAll] ends them.
//   - Delay: every chunk (one read, at most Config.ChunkSize bytes) waits
//     a duration in [Faults.DelayMin, Faults.DelayMax] before it is
//     written, in order, without slowing the chunks behind it beyond that.
//
// Random faults are drawn from generators seeded by Config.Seed, and
// [Proxy.SetFaults] and [Proxy.SetFaultsEnabled] change them at runtime.
// Memory is bounded: each direction of a connection owns QueueDepth+1
// buffers of ChunkSize bytes, and while they all wait (stall, delay, slow
// reader) the proxy stops reading so TCP back-pressure reaches the sender.
// Half-closes are passed on.
//
// # Goroutines and closing
//
// [New] starts nothing. [Proxy.Serve] accepts on the caller's listener; the
// first Serve starts one fault scheduler. Each connection runs one
// goroutine that dials the target and then four: a reader and a writer per
// direction. A connection ends when both directions have ended, when a
// read or write fails, or when it is severed; then both sides are closed.
// [Proxy.Close] closes every listener and connection and joins every
// goroutine. Serve closes its listener when it returns.
package faultproxy
