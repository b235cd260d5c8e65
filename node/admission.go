package node

import (
	"net"
	"net/netip"
	"sync"
)

// Refusal reasons, the label values of
// switchboard_node_connections_refused_total.
const (
	refusedPendingSource = "pending_per_source" // the source has MaxPendingPerSource connections waiting for their handshake
	refusedPendingTotal  = "pending_total"      // MaxPending connections wait for their handshake
	refusedMaxConns      = "max_connections"    // MaxConnections upgraded connections (HTTP 503)
)

var refusedReasons = []string{refusedPendingSource, refusedPendingTotal, refusedMaxConns}

// admission counts the connections that wait for their im.game.v1
// handshake, from the accept to the handshake or the close, in total and
// by source, and refuses the accepts beyond Config.MaxPending and
// Config.MaxPendingPerSource. It tracks the net.Conn the listener
// returned, which is the one http.Server hands to ConnState and Hijack,
// without wrapping it (the writer's writev needs the *net.TCPConn).
type admission struct {
	maxTotal, maxSource int

	mu       sync.Mutex
	bySource map[netip.Prefix]int
	conns    map[net.Conn]netip.Prefix
}

func newAdmission(maxTotal, maxSource int) *admission {
	return &admission{
		maxTotal:  maxTotal,
		maxSource: maxSource,
		bySource:  make(map[netip.Prefix]int),
		conns:     make(map[net.Conn]netip.Prefix),
	}
}

// admit counts c as waiting for its handshake, or returns why it is
// refused.
func (a *admission) admit(c net.Conn) string {
	src := sourceOf(c.RemoteAddr())
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case len(a.conns) >= a.maxTotal:
		return refusedPendingTotal
	case a.bySource[src] >= a.maxSource:
		return refusedPendingSource
	}
	a.bySource[src]++
	a.conns[c] = src
	return ""
}

// release stops counting c: its handshake is done, or it is closed.
// Releasing a connection twice, or one admit did not count, does nothing.
func (a *admission) release(c net.Conn) {
	a.mu.Lock()
	defer a.mu.Unlock()
	src, ok := a.conns[c]
	if !ok {
		return
	}
	delete(a.conns, c)
	if n := a.bySource[src] - 1; n > 0 {
		a.bySource[src] = n
	} else {
		delete(a.bySource, src)
	}
}

// pending returns the connections waiting for their handshake.
func (a *admission) pending() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.conns)
}

// sourceOf is the key of a connection's source: its IPv4 address, or the
// /64 of its IPv6 address (the prefix one subscriber or host gets, RFC
// 6177). An address that is not IP (a unix socket's) is one source.
func sourceOf(addr net.Addr) netip.Prefix {
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil {
		return netip.Prefix{}
	}
	a := ap.Addr().Unmap().WithZone("")
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p
	}
	return netip.PrefixFrom(a, 32)
}

// admitListener refuses, by closing them at once, the accepts that the
// admission does not count.
type admitListener struct {
	net.Listener
	s *Server
}

// Accept returns the next connection the admission counts.
func (l admitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if reason := l.s.adm.admit(c); reason != "" {
			l.s.m.refused[reason].Inc()
			c.Close()
			continue
		}
		return c, nil
	}
}
