// Package relayapi serves the relay pillar's REST API: Unity Relay's
// allocations API under /relay/v1 (allocate, joincode, join, regions) and
// its QoS discovery under /qos/v1, so that an unmodified Unity game whose
// Relay SDK base path points at a Switchboard deployment works, and the
// server API's relay API keys under /server/v1/relay/keys. Package control
// mounts [Server.Handler] at /relay/ and /qos/ and [Server.Routes] beside
// its own routes.
//
// Beyond Unity's routes and fields it serves a join code's status (GET
// /relay/v1/joincode/{code}) and revocation (DELETE), a per-allocation
// idle timeout (idleTimeoutSeconds) and host migration: a host that opted
// in (hostMigration) leaves its code held after its death, and a peer that
// joined with it claims it for its own new allocation (POST
// /relay/v1/joincode with joinCode and previousAllocationId; joincodes.go,
// store/relaymigrate.go). Unity's SDK never sends these fields, so Unity
// games see Unity's API.
//
// The Unity-facing routes speak Unity's JSON, not ours: camelCase fields,
// the {meta, data, links} envelope, and problem-JSON errors with 15xxx
// codes (api.RelayProblem). Request bodies ignore unknown fields (Unity
// SDKs may send more) but refuse malformed JSON, wrong types, trailing
// data and a key given twice.
//
// Callers authenticate with a Bearer credential, tried in this order: a
// Switchboard access token (Config.AuthClient); a relay API key of a
// project ("srk1.…", created through the server API); a Unity
// Authentication token verified offline against Config.UnityKeys; any
// Bearer from Config.TrustedNetworks; and, only with
// Config.AllowAnonymous, no credential at all. The player a rate limit
// counts is the token's subject, or the source address under a shared
// project key or anonymously.
//
// relayapi keeps no state of its own: allocations, join codes and API keys
// live in package store's buckets, and the relay nodes in its registry
// (role relay). It never talks to a relay node: the connection data it
// seals (tokens.RelayKeyring) carries all a node needs to serve a BIND, and
// nodes report releases to the store themselves (see system).
//
// # Goroutines
//
// [New] starts nothing; handlers run in the goroutine of their request.
// The DB in Config belongs to the caller.
package relayapi
