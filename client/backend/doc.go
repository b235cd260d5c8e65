// Package backend is a Go client of Switchboard's server API
// (/server/v1), the calls a game backend makes with its server API key:
// create rooms, issue join tickets and auth tokens, start, close and kick.
// The CLI (`switchboard room …`, `switchboard ticket`) and the load
// generator use it too.
//
// Errors of the API come back as [*rooms.APIError] from package
// client/rooms, so errors.Is works with the same sentinels
// (rooms.ErrNotFound, rooms.ErrUnauthenticated, …).
//
// A Client keeps no state beyond its configuration and starts no
// goroutines; it is safe for concurrent use.
package backend
