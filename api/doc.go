// Package api is the vocabulary of Switchboard's HTTP APIs: the request
// and response bodies, the error envelope with its codes and reasons, and
// the fixed limits of every field. The server (package control and the
// API packages it mounts) and every SDK (client/session, client/rooms,
// client/backend, …) import these types, so that a JSON shape, a code or
// a limit is defined once.
//
// It uses the standard library only and holds no behaviour beyond JSON
// encoding: no HTTP client, no server, no goroutines. Protocol constants
// of im.game.v1 (subprotocol, version, seats per room, tick rates) are in
// package protocol/roomwire; the API's documentation is docs/api.md.
package api
