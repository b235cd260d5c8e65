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

// TestUDPAddrInUse: the game node's UDP socket and the hub's UDP port are
// bound with the other listeners, before any role starts: a UDP port in
// use fails Start with that socket's name and error, before the embedded
// NATS server starts (so no node registers), with no ready file and
// nothing left running; the same config without the clash then starts,
// with the UDP addresses in Ready.
func TestUDPAddrInUse(t *testing.T) {
	for _, tc := range []struct {
		name  string // the socket's name, in the error
		set   func(c *system.Config, addr string)
		check func(r system.Ready) bool
	}{
		{"node_udp", func(c *system.Config, a string) { c.Node.UDPAddr = a },
			func(r system.Ready) bool { return r.NodeUDP != "" }},
		{"hub_udp", func(c *system.Config, a string) { c.Roles, c.Hub.Addr = system.RoleHub, a },
			func(r system.Ready) bool { return r.Hub != "" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := testConfig(dir)
			cfg.ReadyFile = filepath.Join(t.TempDir(), "ready.json")
			tc.set(&cfg, takeUDPOnly(t))
			before := goleak.IgnoreCurrent()
			s, err := system.Start(t.Context(), cfg)
			if err == nil {
				s.Close()
				t.Fatal("Start succeeded with a UDP port in use")
			}
			if !errors.Is(err, syscall.EADDRINUSE) || !strings.Contains(err.Error(), tc.name+" listener") {
				t.Errorf("Start: got %v, want the %s listener's EADDRINUSE", err, tc.name)
			}
			if _, err := os.Stat(filepath.Join(dir, "nats")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("data dir has nats/ (%v): the backbone started before the UDP socket was bound", err)
			}
			if _, err := os.Stat(cfg.ReadyFile); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("ready file: got %v, want none", err)
			}
			goleak.VerifyNone(t, goleak.IgnoreTopFunction(kcploop.KCPSchedulerGoroutine), before)
			tc.set(&cfg, "127.0.0.1:0")
			s = start(t, cfg)
			if r := s.Ready(); !tc.check(r) {
				t.Errorf("Ready after the clash: %+v", r)
			}
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
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
