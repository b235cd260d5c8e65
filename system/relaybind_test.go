package system_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/goleak"

	"github.com/switchboardgg/switchboard/internal/kcploop"
	"github.com/switchboardgg/switchboard/system"
)

// TestRelayAddrInUse: a relay listener whose address is taken fails Start
// with that listener's error before anything starts: the relay's
// listeners are bound with the other roles' (system/doc.go), not inside
// the relay role once the embedded NATS server runs. Nothing is left
// running, and the data dir is free for the next start.
func TestRelayAddrInUse(t *testing.T) {
	for _, tc := range []struct {
		name string // the listener's ready name, in the error
		take func(t *testing.T) string
		set  func(c *system.RelayConfig, addr string)
	}{
		{"relay_udp", takeUDP, func(c *system.RelayConfig, a string) { c.UDPAddr = a }},
		{"relay_ws", takeTCP, func(c *system.RelayConfig, a string) { c.UDPAddr, c.WSAddr = "127.0.0.1:0", a }},
		{"relay_dtls", takeUDP, func(c *system.RelayConfig, a string) { c.UDPAddr, c.DTLSAddr = "127.0.0.1:0", a }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := testConfig(dir)
			cfg.ReadyFile = filepath.Join(t.TempDir(), "ready.json")
			tc.set(&cfg.Relay, tc.take(t))
			before := goleak.IgnoreCurrent()
			s, err := system.Start(t.Context(), cfg)
			if err == nil {
				s.Close()
				t.Fatal("Start succeeded with a relay address in use")
			}
			if !errors.Is(err, syscall.EADDRINUSE) || !strings.Contains(err.Error(), tc.name+" listener") {
				t.Errorf("Start: got %v, want the %s listener's EADDRINUSE", err, tc.name)
			}
			// The embedded NATS server never started: it would have made
			// its store in the data dir.
			if _, err := os.Stat(filepath.Join(dir, "nats")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("data dir has nats/ (%v): the backbone started before the relay's listeners were bound", err)
			}
			if _, err := os.Stat(cfg.ReadyFile); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("ready file: got %v, want none", err)
			}
			goleak.VerifyNone(t, goleak.IgnoreTopFunction(kcploop.KCPSchedulerGoroutine), before)
			// Every listener bound before the clash is closed and the data
			// dir unlocked: the same config without the clash starts.
			cfg.Relay = system.RelayConfig{UDPAddr: "127.0.0.1:0", WSAddr: "127.0.0.1:0", DTLSAddr: "127.0.0.1:0"}
			s = start(t, cfg)
			if r := s.Ready(); r.RelayUDP == "" || r.RelayWS == "" || r.RelayDTLS == "" {
				t.Errorf("Ready after the clash: relay_udp %q, relay_ws %q, relay_dtls %q", r.RelayUDP, r.RelayWS, r.RelayDTLS)
			}
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
}

// takeUDP holds a UDP port for the test and returns its address.
func takeUDP(t *testing.T) string {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	return pc.LocalAddr().String()
}

// takeTCP holds a TCP port for the test and returns its address.
func takeTCP(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}
