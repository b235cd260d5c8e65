// Package p2p is the Go SDK for peers of a Switchboard P2P network: a
// logged-in client joins a network by name or join code through the API
// (/p2p/v1, with a login session of package client/session), connects
// to the network's hub over TLS, sees the other peers come and go, and
// sends them messages, requests and broadcasts through the hub. The wire
// is docs/protocol/p2p.md (package protocol/p2pwire).
//
// # Flow
//
//	sc, _ := session.Login(ctx, apiURL, "alice", authToken, nil)
//	peer, _ := p2p.Join(ctx, sc, p2p.JoinRequest{Network: "lobby"}, nil)
//	defer peer.Close()
//	go func() { for ev := range peer.Events() { … joined, left … } }()
//	peer.Broadcast(ctx, p2p.Envelope{Header: "chat", Payload: []byte("hi")})
//	for m := range peer.Messages() {
//		if m.IsRequest() { m.Respond(ctx, p2p.Envelope{Payload: …}) }
//	}
//
// # Security
//
// The hub's certificate is verified with Config.RootCAs when given, and
// otherwise pinned to the SHA-256 fingerprint the API returned with the
// ticket (a hub with a self-signed certificate). The hub stamps the
// sender of every message: From cannot be forged by another peer. The
// ticket is a credential; the package never logs it, nor payloads.
//
// # Goroutines and who closes what
//
// A [Peer] runs two goroutines: a reader (decodes frames, keeps the peer
// set, fills Messages and Events, answers the hub's PING, hands answers
// to waiting requests, resumes a lost connection) and a pinger (PING every Config.PingInterval; the
// reader gives up on a hub silent for three intervals). Writes are made
// by the calling goroutine under a lock, each bounded by
// Config.WriteTimeout; a failed write closes the socket (the reader then
// resumes). While resuming, the reader also runs a short-lived watcher
// that stops a dial in progress when the peer is closed. [Peer.Close]
// says GOODBYE, closes the socket and waits for both goroutines; the
// reader closes Messages and Events when it stops. Messages and Events
// must be drained: when one is full the reader waits, and the hub drops
// a peer that reads too slowly (ERROR slow_consumer).
//
// # Errors
//
// The join call fails with a *session.APIError matching ErrBanned,
// ErrJoinCodeRequired, ErrNotAllowed, ErrHubUnavailable or the session
// sentinels. The hub's ERRORs are [*HubError]s matching ErrUnknownPeer,
// ErrKicked, ErrNetworkFull, …: a request's fails that request, a
// closing one ends the connection ([Peer.Err]), any other arrives as an
// EventError. Calls on an ended connection fail with ErrClosed.
//
// # Resuming
//
// When the connection is lost (not ended by the hub, not closed by the
// caller), the reader reconnects with the resume token of the last
// WELCOME within the hub's resume window (30 s by default): the peer id
// stays, the other peers see no leave, and what the hub queued meanwhile
// is delivered. Events says EventDisconnected, then EventResumed; sends
// in between fail with ErrDisconnected. When the window passes or the hub
// refuses, the connection ends ([Peer.Err]).
//
// Not yet: the UDP half (P2P II).
package p2p
