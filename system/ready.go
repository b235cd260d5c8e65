package system

import (
	"encoding/json"
	"fmt"
	"os"
)

// Ready is what a started [System] serves: the real addresses of its
// listeners as URLs, and what a client needs to trust them. It is also
// the JSON of Config.ReadyFile (docs/configuration.md). Empty fields are
// roles or listeners this process does not run.
type Ready struct {
	// API is the HTTP API's base URL, http:// or https://.
	API string `json:"api,omitempty"`
	// NodeWS is the bound game node WebSocket URL, ws:// or wss://, with
	// node.Path. Clients are told NodeConfig.PublicURL when set.
	NodeWS string `json:"node_ws,omitempty"`
	// NodeUDP is the game node's bound UDP address, HOST:PORT, when it
	// serves UDP. Clients are told NodeConfig.UDPPublic when set.
	NodeUDP string `json:"node_udp,omitempty"`
	// RelayUDP is the relay's bound UDP address, HOST:PORT.
	RelayUDP string `json:"relay_udp,omitempty"`
	// RelayWS is the relay's WebSocket URL, ws:// or wss://, path "/".
	RelayWS string `json:"relay_ws,omitempty"`
	// RelayDTLS is the relay's bound DTLS address, HOST:PORT (UDP).
	RelayDTLS string `json:"relay_dtls,omitempty"`
	// Admin is the admin listener's base URL.
	Admin string `json:"admin,omitempty"`
	// NATS is the NATS URL the roles use; the embedded server's when
	// NATS is embedded.
	NATS string `json:"nats,omitempty"`
	// Hub is the P2P hub's bound TLS address, HOST:PORT.
	Hub string `json:"hub,omitempty"`
	// HubID is the hub's node id (tickets name it).
	HubID string `json:"hub_id,omitempty"`
	// HubFingerprint is the SHA-256 fingerprint of the hub's certificate
	// (certs.Fingerprint), for clients that pin it.
	HubFingerprint string `json:"hub_tls_fingerprint_sha256,omitempty"`
	// NodeID is the game node's id.
	NodeID string `json:"node_id,omitempty"`
	// ServerKey is the server API key, with APIConfig.PublishServerKey
	// only.
	ServerKey string `json:"server_key,omitempty"`
	// TLS names the listeners that serve TLS ("node_ws", "api", "admin",
	// "relay_ws").
	TLS []string `json:"tls,omitempty"`
	// TLSFingerprint is the SHA-256 fingerprint of the certificate the
	// TLS listeners serve at start (certs.Fingerprint), for clients that
	// pin a self-signed certificate.
	TLSFingerprint string `json:"tls_fingerprint_sha256,omitempty"`
}

// writeReady writes r to path atomically (mode 0600: it may hold the
// server key).
func writeReady(path string, r Ready) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("system: ready file: %w", err)
	}
	if err := writeFileAtomic(path, append(b, '\n')); err != nil {
		return fmt.Errorf("system: ready file: %w", err)
	}
	return nil
}

// removeReady removes the ready file; a file already gone is fine.
func removeReady(path string) error {
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("system: remove ready file: %w", err)
	}
	return nil
}
