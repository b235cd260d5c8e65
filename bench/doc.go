// Package bench holds Switchboard's load generators, behind
// `switchboard bench …`. They drive a running server over its real
// protocols with the same client code games use (package client/rooms), and
// read the server's own figures (CPU, tick lateness) from its /metrics.
//
// A run starts one goroutine per simulated player plus one for progress
// lines; RunRooms returns only after every one of them has ended.
// RunControl (the control plane alone: auth token, login, join, over
// plain HTTP) starts ControlConfig.Concurrency flow goroutines and one
// that creates rooms ahead, and returns after all of them have ended.
package bench
