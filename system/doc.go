// Package system builds, starts and drains the roles of one Switchboard
// process from a [Config]: the embedded NATS server or the connection to
// a deployment's, a backbone connection and store per role, the signing
// key, the control plane (every HTTP API on control's hardened
// http.Server, with the relay REST API), the game node, the relay node
// (data plane, registry heartbeat, releases to the store; relay.go), the
// P2P hub, the admin listener, TLS on every TCP
// listener, the data dir (lock, node id, server key, certificate) and the
// ready file. It is the only wiring: `switchboard dev`, every `switchboard
// serve ROLE`, internal/teststack and the end-to-end tests all start a
// process through [Start], so that a setting means the same everywhere.
// The relay and hub roles are one more start function each (startRelay in
// relay.go, startHub in hub.go) on the same helpers (listen, connect,
// serve).
//
// It owns nothing of the roles' behaviour: control, node and store own
// that, and system only hands them their configuration, connections and
// listeners.
//
// # Lifecycle
//
// [Start] locks the data dir (one process per data dir: a second one gets
// a [*LockedError] naming the owner's pid), binds the TCP listeners of
// the game node, the API, the hub and the admin listener, the game node's
// UDP socket, the hub's UDP port (the hub's TLS port number, unless
// p2p.Config.DisableUDP) and the relay's UDP, WebSocket and DTLS
// listeners before it starts anything, the backbone included (so that an
// address in use registers no node and leaves nothing running), starts
// every role and returns once all of them serve; only then is the ready file written. [System.Drain] stops the game node first (its players get
// ERROR 10), then the HTTP servers, then closes the rest;
// [System.Close] closes everything at once. Both remove the ready file
// and unlock the data dir, and Close is idempotent.
//
// # Goroutines
//
// One serve loop per listener (the roles' own goroutines are theirs),
// a relay node's registry heartbeat and the writer of its releases to
// the store, and the store's write probe (backbone.Probe), whose last outcome
// [System.Health] reports to both /healthz; all tracked and joined by
// Close. [System.Done] is closed when one of them fails on its own — the
// probe does when the embedded NATS server keeps a write error until
// restart (a full disk) — and the caller (cmd/switchboard) then drains
// and exits non-zero. System
// reads no signals, flags or environment: the caller calls
// [System.ReloadTLS] on SIGHUP and Drain on SIGTERM.
//
// # Who closes what
//
// System closes every listener it binds and every listener handed to it
// in Config, on error too; the backbone connections and the embedded
// server it started; and the files it wrote that describe a running
// process (the ready file, the lock's pid). The node id, the server key
// and the certificate stay in the data dir for the next start.
package system
