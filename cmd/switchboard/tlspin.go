package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gobwas/ws"

	"github.com/switchboardgg/switchboard/client/rooms"
	"github.com/switchboardgg/switchboard/client/session"
	"github.com/switchboardgg/switchboard/internal/certs"
)

// pinnedTLS returns a client TLS configuration that accepts exactly the
// certificate whose SHA-256 fingerprint (certs.Fingerprint's form) is fp,
// whatever signed it: what `dev --tls` writes into its ready file, so that
// the client verbs reach a system with a self-signed certificate. Nil when
// fp is empty (the system's certificate is then checked as usual).
func pinnedTLS(fp string) *tls.Config {
	if fp == "" {
		return nil
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The chain is not checked against system roots: the pin is the
		// check, done in VerifyConnection on the leaf.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("tls: the server sent no certificate")
			}
			if got := certs.Fingerprint(cs.PeerCertificates[0].Raw); !strings.EqualFold(got, fp) {
				return fmt.Errorf("tls: the server's certificate %s is not the one in the ready file (%s)", got, fp)
			}
			return nil
		},
	}
}

// httpClient returns the HTTP client of the client verbs: the SDK's
// default, trusting only the pinned certificate when tc is set.
func httpClient(tc *tls.Config) *http.Client {
	if tc == nil {
		return nil // the SDK's default client
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tc
	return &http.Client{Timeout: session.DefaultHTTPTimeout, Transport: tr}
}

// roomsConfig returns the game-client configuration of the client verbs
// (HTTP calls and the node's WebSocket), trusting only the pinned
// certificate when tc is set; nil means the SDK's defaults.
func roomsConfig(tc *tls.Config) *rooms.Config {
	if tc == nil {
		return nil
	}
	return &rooms.Config{HTTPClient: httpClient(tc), Dialer: &ws.Dialer{TLSConfig: tc}}
}
