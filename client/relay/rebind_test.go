package relay_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/client/relay"
	"github.com/switchboardgg/switchboard/internal/faultproxy"
	"github.com/switchboardgg/switchboard/internal/impair"
)

// proxy serves an impair proxy in front of the stack's relay UDP port.
func (s *stack) proxy(t *testing.T) (*impair.Proxy, string) {
	t.Helper()
	return s.proxyTo(t, s.RelayUDP)
}

// proxyTo serves an impair proxy in front of target, a UDP address.
func (s *stack) proxyTo(t *testing.T, target string) (*impair.Proxy, string) {
	t.Helper()
	p, err := impair.New(impair.Config{Target: target, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(ln) }()
	t.Cleanup(func() {
		p.Close()
		if err := <-served; !errors.Is(err, impair.ErrClosed) {
			t.Errorf("proxy Serve: %v", err)
		}
	})
	return p, ln.LocalAddr().String()
}

// connectedPair returns a host made with hostCfg and a joiner connected
// to it, each having heard the other.
func connectedPair(t testing.TB, s *stack, hostCfg, joinCfg *relay.Config) (host, peer *relay.Conn) {
	t.Helper()
	ctx := ctxT(t)
	host, err := s.client(t, "host", hostCfg).Host(ctx, relay.AllocateRequest{MaxConnections: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Close() })
	peer, err = s.client(t, "peer", joinCfg).Join(ctx, host.JoinCode())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Close() })
	if err := peer.Send(ctx, host.ID(), []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if msg, _ := recv(t, host); msg != "hi" {
		t.Fatalf("host got %q", msg)
	}
	return host, peer
}

// flows sends numbered messages from a to b until one arrives, and
// returns it.
func flows(t *testing.T, a, b *relay.Conn, to relay.AllocationID) string {
	t.Helper()
	buf := make([]byte, relay.DefaultMaxPayload)
	for i := 0; i < 200; i++ {
		if err := a.Send(t.Context(), to, fmt.Appendf(nil, "m%d", i)); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		n, _, err := b.Recv(ctx, buf)
		cancel()
		if err == nil {
			return string(buf[:n])
		}
	}
	t.Fatalf("nothing arrives from %s: %v", a.ID(), a.Err())
	return ""
}

// TestNATRebinding: the NAT in front of the host remaps its port
// mid-session (impair's Rebind). The relay node answers the host's next
// message from the new address with ERROR 3; the host re-binds with a
// larger nonce and the session goes on, both ways.
func TestNATRebinding(t *testing.T) {
	s := startStack(t)
	p, addr := s.proxy(t)
	hostCfg := &relay.Config{}
	relay.SetUDPAddr(hostCfg, addr)
	host, peer := connectedPair(t, s, hostCfg, nil)
	if err := p.Rebind(); err != nil {
		t.Fatal(err)
	}
	flows(t, host, peer, peer.ID())
	ev := waitEvent(t, host, relay.EventRebound)
	if !errors.Is(ev.Err, relay.ErrClientMismatch) {
		t.Fatalf("rebound because %v, want ErrClientMismatch", ev.Err)
	}
	flows(t, peer, host, host.ID())
	if st := host.Stats(); st.Rebinds != 1 {
		t.Fatalf("host stats %+v, want 1 re-bind", st)
	}
	if st := p.Stats(); st.Rebinds != 1 {
		t.Fatalf("proxy stats %+v", st)
	}
}

// TestRebindNewSocket: Rebind opens a new socket (a new source port, as
// after a network change) and binds there; peers keep their connection.
func TestRebindNewSocket(t *testing.T) {
	s := startStack(t)
	for _, tr := range []relay.Transport{relay.TransportUDP, relay.TransportWebSocket} {
		t.Run(string(tr), func(t *testing.T) {
			host, peer := connectedPair(t, s, nil, &relay.Config{Transport: tr})
			if err := peer.Rebind(t.Context()); err != nil {
				t.Fatal(err)
			}
			if msg := flows(t, peer, host, host.ID()); msg != "m0" {
				t.Fatalf("first message after the re-bind is %q, want m0 (none lost)", msg)
			}
			flows(t, host, peer, peer.ID())
			waitEvent(t, peer, relay.EventRebound)
			if st := peer.Stats(); st.Rebinds != 1 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

// TestCarrierLost: the joiner's WebSocket goes through a TCP proxy that
// severs it, then stalls it. Either way the Conn opens a new connection
// and re-binds there (a severed one at once, a silent one after
// Config.DeadAfter), and the session goes on.
func TestCarrierLost(t *testing.T) {
	s := startStack(t)
	u, err := url.Parse(s.RelayWS)
	if err != nil {
		t.Fatal(err)
	}
	fp, err := faultproxy.New(faultproxy.Config{Target: u.Host, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- fp.Serve(ln) }()
	t.Cleanup(func() {
		fp.Close()
		<-served
	})
	cfg := &relay.Config{Transport: relay.TransportWebSocket, KeepAlive: 200 * time.Millisecond, DeadAfter: time.Second}
	relay.SetWSAddr(cfg, ln.Addr().String())
	host, peer := connectedPair(t, s, nil, cfg)

	if n := fp.SeverAll(); n != 1 {
		t.Fatalf("severed %d connections, want 1", n)
	}
	ev := waitEvent(t, peer, relay.EventRebound)
	if !strings.Contains(ev.Err.Error(), "carrier broke") {
		t.Fatalf("re-bound because %v", ev.Err)
	}
	flows(t, peer, host, host.ID())
	flows(t, host, peer, peer.ID())

	fp.StallAll(faultproxy.Both, time.Hour)
	ev = waitEvent(t, peer, relay.EventRebound)
	if !strings.Contains(ev.Err.Error(), "no answer from the relay node") {
		t.Fatalf("re-bound because %v", ev.Err)
	}
	flows(t, peer, host, host.ID())
	flows(t, host, peer, peer.ID())
	if st := peer.Stats(); st.Rebinds != 2 {
		t.Fatalf("stats %+v, want 2 re-binds", st)
	}
}
