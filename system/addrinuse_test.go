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

// TestAddrInUse: every listener — the relay's, the game node's UDP
// socket, the hub's UDP port — is bound with the others before any role
// starts (system/doc.go), not inside its role once the embedded NATS
// server runs: an address in use fails Start with that listener's name
// and EADDRINUSE before NATS starts (so no node registers), with no ready
// file and nothing left running; the same config without the clash then
// starts, with the address in Ready.
func TestAddrInUse(t *testing.T) {
	for _, tc := range []struct {
		name  string // the listener's ready name, in the error
		take  func(t *testing.T) string
		set   func(c *system.Config, addr string)
		check func(r system.Ready) string // the address Ready reports
	}{
		{"relay_udp", takeUDP,
			func(c *system.Config, a string) { c.Relay.UDPAddr = a },
			func(r system.Ready) string { return r.RelayUDP }},
		{"relay_ws", takeTCP,
			func(c *system.Config, a string) { c.Relay.UDPAddr, c.Relay.WSAddr = "127.0.0.1:0", a },
			func(r system.Ready) string { return r.RelayWS }},
		{"relay_dtls", takeUDP,
			func(c *system.Config, a string) { c.Relay.UDPAddr, c.Relay.DTLSAddr = "127.0.0.1:0", a },
			func(r system.Ready) string { return r.RelayDTLS }},
		{"node_udp", takeUDP,
			func(c *system.Config, a string) { c.Node.UDPAddr = a },
			func(r system.Ready) string { return r.NodeUDP }},
		{"hub_udp", takeUDPOnly,
			func(c *system.Config, a string) { c.Roles, c.Hub.Addr = system.RoleHub, a },
			func(r system.Ready) string { return r.Hub }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := testConfig(dir)
			cfg.ReadyFile = filepath.Join(t.TempDir(), "ready.json")
			tc.set(&cfg, tc.take(t))
			before := goleak.IgnoreCurrent()
			s, err := system.Start(t.Context(), cfg)
			if err == nil {
				s.Close()
				t.Fatalf("Start succeeded with the %s address in use", tc.name)
			}
			if !errors.Is(err, syscall.EADDRINUSE) || !strings.Contains(err.Error(), tc.name+" listener") {
				t.Errorf("Start: got %v, want the %s listener's EADDRINUSE", err, tc.name)
			}
			// The embedded NATS server never started: it would have made
			// its store in the data dir.
			if _, err := os.Stat(filepath.Join(dir, "nats")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("data dir has nats/ (%v): the backbone started before the %s listener was bound", err, tc.name)
			}
			if _, err := os.Stat(cfg.ReadyFile); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("ready file: got %v, want none", err)
			}
			goleak.VerifyNone(t, goleak.IgnoreTopFunction(kcploop.KCPSchedulerGoroutine), before)
			// Every listener bound before the clash is closed and the data
			// dir unlocked: the same config without the clash starts.
			tc.set(&cfg, "127.0.0.1:0")
			s = start(t, cfg)
			if a := tc.check(s.Ready()); a == "" {
				t.Errorf("Ready after the clash: no %s address in %+v", tc.name, s.Ready())
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

// takeUDPOnly holds a UDP port whose number is free over TCP (the hub
// binds both), and returns its address.
func takeUDPOnly(t *testing.T) string {
	for range 20 {
		addr := takeUDP(t)
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			ln.Close()
			return addr
		}
	}
	t.Fatal("no UDP port whose TCP twin is free")
	return ""
}
