// Package certs loads, reloads and generates the TLS certificates of
// Switchboard's TCP listeners: the HTTP API (https), the game node's
// WebSocket (wss), and later the relay's wss and the P2P hub. It is the
// one place that reads certificate files, so that every listener of every
// pillar is configured the same way (DESIGN.md, "Shared building blocks").
//
// A [Store] holds one certificate and key loaded from PEM files. Its
// [Store.TLSConfig] serves whatever certificate was loaded last, so
// [Store.Reload] (on SIGHUP, say) changes the certificate of every
// listener at once, new handshakes only; a failed reload keeps the old
// certificate. [SelfSigned] writes a self-signed certificate for
// development (`switchboard dev --tls`) and keeps using it across restarts
// while it is valid for the requested hosts. [Fingerprint] is the SHA-256
// of a certificate as clients pin it.
//
// The package starts no goroutines and holds no package-level state. A
// Store is safe for concurrent use; nothing in it needs closing.
package certs
