// Package roomsapi serves the HTTP API of the rooms pillar's rooms: join,
// leave and find-my-room for players (C1–C3, /client/v1/game/…) and the
// server room API for game backends (/server/v1/game/rooms…). Package
// control mounts its [Server.Routes] beside its own (login, nodes, auth
// tokens, health), so that other pillars' APIs can be mounted the same way.
//
// [Server.Routes] returns route values of control's internal HTTP
// plumbing (control/internal/httpapi), as the issue asks for an internal
// package: only package control can mount them. Its HTTP tests run
// through control's mux (package control), which owns the login its
// client routes need.
//
// roomsapi keeps no state of its own: rooms, seats, login sessions and
// join tickets live in package store's buckets, so any number of control
// processes can serve the same deployment. Seats are taken with one
// compare-and-set of the room record, so concurrent joins never give one
// seat twice. Commands to game nodes (admit, start, close, kick, leave)
// go over the NATS backbone; when a node does not answer, the API answers
// 503 game_node_unavailable or, where the spec lets it, updates the
// record itself (C2, kick, close).
//
// # Goroutines
//
// [New] starts nothing; handlers run in the goroutine of their request.
// The DB and backbone connection in Config belong to the caller.
package roomsapi
