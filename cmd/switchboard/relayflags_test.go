package main

import (
	"testing"

	"github.com/switchboardgg/switchboard/system"
)

// TestDevDTLSAddr: dev serves DTLS beside a relay, on its host (loopback
// for all interfaces), port 7704 or a free one when the relay's is 0.
func TestDevDTLSAddr(t *testing.T) {
	for _, tc := range []struct {
		name    string
		udp, ws string
		want    string
	}{
		{"no relay", "", "", ""},
		{"fixed port", "127.0.0.1:7702", "", "127.0.0.1:7704"},
		{"free port", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"},
		{"all interfaces", "0.0.0.0:37000", "", "127.0.0.1:7704"},
		{"empty host", ":37000", "", "127.0.0.1:7704"},
		{"LAN address", "192.168.1.5:7702", "", "192.168.1.5:7704"},
		{"IPv6", "[::1]:0", "", "[::1]:0"},
		{"WebSocket only", "", "127.0.0.1:7703", "127.0.0.1:7704"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := devDTLSAddr(&system.RelayConfig{UDPAddr: tc.udp, WSAddr: tc.ws})
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
