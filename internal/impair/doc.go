// Package impair is a UDP proxy that impairs the datagrams it forwards,
// for the tests of everything that speaks UDP (node/udp, p2p, relay,
// internal/kcploop). A test serves a [Proxy] on a 127.0.0.1:0 socket in
// front of its server, points its clients at the proxy, and lets the
// proxy lose, duplicate, reorder, delay and black-hole their datagrams,
// and rebind their source address, while it checks what arrives. It is
// the UDP counterpart of internal/faultproxy.
//
// The proxy behaves like a NAT: each client address gets its own
// upstream socket, so the target sees one source address per client and
// its answers go back to that client. It never alters a datagram's bytes
// and never merges or splits datagrams.
//
// # Faults and what a test can rely on
//
// Faults are set per direction: Up is client→target, Down is
// target→client ([Config.Up], [Config.Down], [Proxy.SetFaults]).
//
//   - Loss: each datagram is dropped with probability Faults.Loss.
//   - Duplication: a datagram that is not lost is sent twice with
//     probability Faults.Duplicate (each copy is delayed on its own).
//   - Delay and jitter: each copy waits Faults.Delay plus a uniform
//     draw in [0, Faults.Jitter). Jitter can reorder datagrams.
//   - Reordering: with probability Faults.Reorder a copy is held back a
//     further Faults.ReorderDelay, so the datagrams behind it overtake it.
//   - Blackout: [Proxy.SetBlackout] drops everything arriving in one or
//     both directions until it is turned off (datagrams already waiting
//     for their delay still leave).
//   - Rebinding: [Proxy.Rebind] replaces every client's upstream socket
//     with a new one on a new port, as a NAT that remaps does: the target
//     sees the client's next datagrams from a new address, and answers
//     sent to the old address are lost.
//
// With Jitter and Reorder zero, a direction keeps the order of the
// datagrams it forwards. Every datagram that is not lost, black-holed or
// refused for a limit arrives, exactly once (twice if duplicated), with
// its bytes unchanged, unless the operating system drops it. Every
// decision is counted in [Stats].
//
// # Replaying a failing test
//
// Each direction draws its decisions from its own generator seeded by
// (Config.Seed, direction), in the order datagrams arrive in that
// direction. Given the same seed, the same faults and the same arrival
// order, the same datagrams are lost, duplicated and reordered, so a
// failing run can be replayed by logging its seed ([Proxy.Seed]).
//
// # Bounds
//
// Datagrams longer than Config.MaxDatagram are dropped and counted. At
// most Config.QueueDepth datagrams (both directions together) wait for
// their delay, each in a buffer of MaxDatagram bytes drawn from a free
// list; a datagram that finds the queue full is dropped and counted as
// overflow. At most Config.MaxClients client addresses get an upstream
// socket; datagrams from others are dropped and counted. A datagram sent
// without delay is forwarded from the reader's own buffer: no
// allocation per datagram either way once the free list is warm.
//
// # Goroutines and closing
//
// [New] starts nothing. [Proxy.Serve] reads the caller's client-facing
// socket until [Proxy.Close]; the first Serve starts one scheduler that
// sends delayed datagrams. Each client's upstream socket has one reader
// goroutine. Serve closes its socket when it returns. Close closes every
// socket the proxy opened or was given, and joins every goroutine.
package impair
