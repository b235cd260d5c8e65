// Package backend is a Go client of Switchboard's server API
// (/server/v1), the calls a game backend makes with its server API key:
// create rooms, issue join tickets and auth tokens, start, close and kick.
// The CLI (`switchboard room …`, `switchboard ticket`) and the load
// generator use it too.
//
// It is built on package client/session and does not link the game-client
// SDK. Errors of the API come back as [*session.APIError], which matches
// session's sentinels (session.ErrNotFound, session.ErrUnauthenticated, …)
// with errors.Is; its Reason is one of package api's (api.ReasonRoomNotOpen,
// …). Error text names the call, never Go packages.
//
// A Client keeps no state beyond its configuration and starts no
// goroutines; it is safe for concurrent use.
package backend
