// Package bench holds Switchboard's load generators, behind
// `switchboard bench …`. They drive a running server over its real
// protocols with the same client code games use (package client/rooms), and
// read the server's own figures (CPU, tick lateness) from its /metrics.
//
// A run starts one goroutine per simulated player plus one for progress
// lines; RunRooms returns only after every one of them has ended.
package bench
