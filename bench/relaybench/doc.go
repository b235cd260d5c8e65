// Package relaybench is `switchboard bench relay`: it offers UDP traffic
// through a relay node (or the bare forwarder of shared/baselines) and
// measures loss, latency and the server's CPU per datagram.
//
// Unlike package bench, which is client code driving the public APIs, it
// seals its own allocations with the relay secret (package tokens) until
// the relay REST API hands them out, and sends and receives with
// internal/udpio; so it is a package of its own.
//
// Run runs one receiving goroutine and one sending goroutine and
// returns after both ended; it closes the sockets it opened.
package relaybench
