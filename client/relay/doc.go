// Package relay is the Go SDK of Switchboard's relay: a host allocates a
// relay allocation (choosing the region by measured round-trip time),
// shares a join code, and peers that join with it exchange datagrams with
// the host through the relay node, by allocation id. It speaks the relay
// REST API (/relay/v1, /qos/v1) with a login session of package
// client/session, and the Unity Relay message protocol
// (docs/protocol/relay.md, package protocol/relaywire) to the relay node
// over UDP or WebSocket. The guide is docs/sdk/relay-go.md.
//
// # Flow
//
//	sc, _ := session.Login(ctx, apiURL, "alice", authToken, nil)
//	rc := relay.New(sc, nil)
//	host, _ := rc.Host(ctx, relay.AllocateRequest{MaxConnections: 4}) // host.JoinCode()
//	// elsewhere:
//	peer, _ := rc.Join(ctx, code)
//	peer.Send(ctx, peer.HostID(), []byte("hi"))
//	n, from, _ := host.Recv(ctx, buf)
//
// # What it owns
//
// A [Client] makes the REST calls and dials [Conn]s; it starts nothing. A
// [Conn] owns one bound allocation: BIND (HMAC-signed, retransmitted
// until BIND_RECEIVED), for a joiner CONNECT_REQUEST until ACCEPTED or
// REJECTED, keep-alive PINGs, the peer set and its events, and re-binding
// with a larger nonce when the relay node reports another address (ERROR
// 3, a NAT that remapped), when the carrier breaks or goes silent, or on
// [Conn.Rebind]. A host also asks the node for peer events
// (PEERS_SUBSCRIBE, Switchboard's extension); on a node without them it
// learns of a peer from its first message and of its leaving from
// DISCONNECT.
//
// # Carriers
//
// Config.Transport picks the carrier: "udp" (one message per datagram, a
// connected socket), "ws" (one message per binary WebSocket message, to
// the allocation's wss or ws endpoint) or "dtls" (one message per DTLS 1.2
// record, to the dtls endpoint, authenticated by the allocation's key as
// pre-shared key and its id as identity; pion/dtls runs its own goroutines
// per connection, ended by the carrier's close). Each is an internal
// carrier in a file of its own (udp.go, ws.go, dtls.go).
//
// # Goroutines and who closes what
//
// A Conn runs a reader per carrier (decodes, keeps the peer set, queues
// messages for Recv and events for Events) and a keeper (PING every
// Config.KeepAlive, peer-event subscription, re-binds). Sends are made by
// the calling goroutine, serialized. [Conn.Close] sends CLOSE (releasing
// the allocation), closes the carrier, joins every goroutine and then
// closes Events. A Conn that ends by itself (a fatal ERROR, the host
// gone, a failed re-bind: [Conn.Err]) stops its goroutines too; Close is
// still the way to wait for them.
//
// # Errors
//
// REST calls fail with a *session.APIError that matches the sentinel of
// its 15xxx code (ErrJoinCodeNotFound, ErrRegionNotFound, …). The relay
// node's ERRORs are [*ServerError]s matching ErrTimedOut,
// ErrAllocationIDNotFound, …: a fatal one (1, 4) ends the Conn, others
// arrive as EventError. Dial fails with ErrBindTimeout, ErrRejected or a
// ServerError; calls on an ended Conn fail with ErrClosed.
//
// # Security
//
// The allocation key signs BIND and never leaves the process; it,
// the connection data and payloads are never logged.
package relay
