package node_test

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/node"
)

// dialFrom opens a raw TCP connection to the node from ip (127.0.0.0/8
// is all loopback on Linux), and sends nothing.
func (e *env) dialFrom(ip string) net.Conn {
	e.t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	addr := strings.TrimSuffix(strings.TrimPrefix(e.url, "ws://"), node.Path)
	c, err := d.Dial("tcp", addr)
	if err != nil {
		e.t.Fatalf("dial from %s: %v", ip, err)
	}
	e.t.Cleanup(func() { c.Close() })
	return c
}

// expectRefused waits for the node to close c without a byte.
func expectRefused(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if b, err := io.ReadAll(c); err != nil || len(b) > 0 {
		t.Fatalf("refused connection read %q, %v; want EOF", b, err)
	}
}

func (e *env) waitPending(n int) {
	e.t.Helper()
	waitFor(e.t, "pending connections", func() bool {
		return e.counter("switchboard_node_connections_pending") == float64(n)
	})
}

// Connections that wait for their handshake are capped by source and in
// total from the TCP accept on; a handshake or a close frees the place.
func TestPendingCaps(t *testing.T) {
	e := newEnv(t, false, func(c *node.Config) { c.MaxPendingPerSource, c.MaxPending = 2, 3 })
	a1 := e.dialFrom("127.0.0.1")
	e.dialFrom("127.0.0.1")
	e.waitPending(2)
	expectRefused(t, e.dialFrom("127.0.0.1"))
	if got := e.counter("switchboard_node_connections_refused_total", "reason", "pending_per_source"); got != 1 {
		t.Fatalf("refused pending_per_source = %v, want 1", got)
	}
	b1 := e.dialFrom("127.0.0.2") // another source
	e.waitPending(3)
	expectRefused(t, e.dialFrom("127.0.0.3"))
	if got := e.counter("switchboard_node_connections_refused_total", "reason", "pending_total"); got != 1 {
		t.Fatalf("refused pending_total = %v, want 1", got)
	}

	a1.Close() // a close frees its place
	e.waitPending(2)
	b1.Close()
	e.waitPending(1)

	// An upgraded connection waits for its handshake too; HELLO frees it.
	rec := record("room-1", nil)
	e.join(rec, 0)
	e.waitPending(1)
	up := e.dial()
	e.waitPending(2)
	expectRefused(t, e.dialFrom("127.0.0.1"))
	up.nc.Close()
	e.waitPending(1)
}
