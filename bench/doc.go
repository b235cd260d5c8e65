// Package bench holds Switchboard's load generators, behind
// `switchboard bench …`. They drive a running server over its real
// protocols with the same client code games use (package client/rooms), and
// read the server's own figures (CPU, tick lateness) from its /metrics.
// It is client code: it links no server package.
//
// A bot that fails returns a [*StageError] (the step it failed at and the
// SDK's error); [Failures] counts them by [Reason], so that a run reports
// "20 × logging in: … 429 …" rather than twenty lines, and RunRooms returns
// [ErrPlayersFailed] when any player failed.
//
// A run starts one goroutine per simulated player plus one for progress
// lines; RunRooms returns only after every one of them has ended.
package bench
