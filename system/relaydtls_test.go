package system_test

import (
	"errors"
	"testing"

	"github.com/switchboardgg/switchboard/system"
)

// TestRelayDTLSOnly: a DTLS address alone runs the relay role, listed in
// the ready state; a DTLS listener on all interfaces needs its public
// address.
func TestRelayDTLSOnly(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Relay = system.RelayConfig{DTLSAddr: "127.0.0.1:0"}
	s := start(t, cfg)
	r := s.Ready()
	if r.RelayDTLS == "" || r.RelayUDP != "" || r.RelayWS != "" {
		t.Fatalf("ready: relay_dtls %q, relay_udp %q, relay_ws %q; want DTLS only", r.RelayDTLS, r.RelayUDP, r.RelayWS)
	}

	cfg = testConfig(t.TempDir())
	cfg.Relay = system.RelayConfig{DTLSAddr: "0.0.0.0:0"}
	if s, err := system.Start(t.Context(), cfg); !errors.Is(err, system.ErrConfig) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("DTLS on all interfaces without a public address: got %v, want ErrConfig", err)
	}
}
