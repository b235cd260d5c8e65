// Package control serves every HTTP API of Switchboard: it owns the mux
// and the route table, authentication (server API key, access tokens),
// player login and renewal (C0), auth tokens, the node list and drain,
// and /healthz. It mounts the APIs of the pillars beside its own routes:
// today package roomsapi (C1–C3 and the server room API under
// /server/v1/game/rooms) and package relayapi (Unity Relay's API under
// /relay/v1 and /qos/v1, relay API keys under /server/v1/relay/keys). The
// HTTP plumbing they share (endpoint wrapper, error JSON, body decoding,
// rate limiter, metrics) is control/internal/httpapi. The endpoints, their
// JSON and their limits are documented in docs/api.md.
//
// control keeps no state of its own: login sessions and the node
// registry live in package store's buckets, so any number of control
// processes can serve the same deployment. The mounted APIs say what
// they keep and how (package roomsapi: rooms, seats, join tickets, and
// the commands to game nodes). Request bodies are decoded strictly (see
// docs/api.md, conventions).
//
// It does not own the data plane: game nodes (package node) run the
// rooms and their sockets.
//
// # Goroutines
//
// [New] starts nothing. [Server.Handler] runs in the caller's HTTP server;
// [Server.Serve] runs a net/http server on a listener the caller owns
// until [Server.Shutdown] or [Server.Close]. The DB and backbone
// connection in Config belong to the caller, who closes them after the
// Server.
package control
