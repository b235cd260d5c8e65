// Package httpapi is the HTTP plumbing shared by control's APIs (the
// player and server APIs of package control, the rooms API of package
// roomsapi, the P2P API of package p2papi and the relay API of package
// relayapi): the endpoint wrapper (authentication, deadline, panic
// recovery, error JSON, logging, metrics), the error JSON and its codes,
// strict body decoding, the keyed rate limiter, the [Limits] the rooms
// and P2P APIs share, field validation, and the commands to nodes over
// the backbone.
//
// It owns no routes: control keeps the mux and the route table, and each
// API package contributes its [Route]s.
//
// # Goroutines
//
// None. Every function runs in the goroutine of the request that calls
// it; [Limiter] and [Metrics] are safe for concurrent use.
package httpapi
