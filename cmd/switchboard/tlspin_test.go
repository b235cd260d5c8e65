package main

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/switchboardgg/switchboard/internal/certs"
)

// TestPinnedTLS: with a ready file's fingerprint the client verbs reach a
// server whose certificate no CA signed, and refuse any other certificate.
func TestPinnedTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	fp := certs.Fingerprint(srv.Certificate().Raw)
	other := "00" + fp[2:]
	if other == fp {
		other = "11" + fp[2:]
	}
	tests := []struct {
		name, fp string
		ok       bool
	}{
		{"pinned", fp, true},
		{"other certificate", other, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := httpClient(pinnedTLS(tc.fp))
			defer c.CloseIdleConnections()
			resp, err := c.Get(srv.URL)
			if err == nil {
				resp.Body.Close()
			}
			if (err == nil) != tc.ok {
				t.Errorf("got error %v, want ok %v", err, tc.ok)
			}
		})
	}
	if pinnedTLS("") != nil || httpClient(nil) != nil || roomsConfig(nil) != nil {
		t.Error("got a TLS configuration without a fingerprint, want the SDK defaults (nil)")
	}
}
