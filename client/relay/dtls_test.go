package relay_test

import (
	"slices"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/client/relay"
)

// TestDTLSChat: a host over DTLS, a joiner over UDP and one over
// WebSocket in one allocation; messages flow every way, the host hears of
// both, re-binds over a new DTLS connection (a new source port), and its
// leaving reaches the joiners.
func TestDTLSChat(t *testing.T) {
	s := startStack(t)
	ctx := ctxT(t)
	if !slices.Contains(relay.Transports(), relay.TransportDTLS) {
		t.Fatalf("transports %v lack dtls", relay.Transports())
	}
	if tr, err := relay.ParseTransport("DTLS"); err != nil || tr != relay.TransportDTLS {
		t.Fatalf("ParseTransport(DTLS) = %q, %v", tr, err)
	}
	host, err := s.client(t, "alice", &relay.Config{Transport: relay.TransportDTLS}).Host(ctx, relay.AllocateRequest{MaxConnections: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	if ep := host.Endpoint(); ep.ConnectionType != "dtls" || !ep.Secure || host.Transport() != relay.TransportDTLS {
		t.Fatalf("host endpoint %+v, transport %s", ep, host.Transport())
	}
	udpPeer, err := s.client(t, "bob", nil).Join(ctx, host.JoinCode())
	if err != nil {
		t.Fatal(err)
	}
	defer udpPeer.Close()
	wsPeer, err := s.client(t, "carol", &relay.Config{Transport: relay.TransportWebSocket}).Join(ctx, host.JoinCode())
	if err != nil {
		t.Fatal(err)
	}
	defer wsPeer.Close()
	for _, p := range []*relay.Conn{udpPeer, wsPeer} {
		if err := p.Send(ctx, host.ID(), []byte("hi from "+p.Endpoint().ConnectionType)); err != nil {
			t.Fatal(err)
		}
		if msg, from := recv(t, host); msg != "hi from "+p.Endpoint().ConnectionType || from != p.ID() {
			t.Fatalf("host got %q from %s", msg, from)
		}
		if err := host.Send(ctx, p.ID(), make([]byte, relay.DefaultMaxPayload)); err != nil {
			t.Fatal(err)
		}
		if msg, from := recv(t, p); len(msg) != relay.DefaultMaxPayload || from != host.ID() {
			t.Fatalf("%s peer got %d bytes from %s", p.Endpoint().ConnectionType, len(msg), from)
		}
	}
	if got := host.Peers(); len(got) != 2 {
		t.Fatalf("host's peers %v, want 2", got)
	}

	// A new DTLS connection from a new port, a larger nonce: the peers
	// keep talking to the host.
	if err := host.Rebind(ctx); err != nil {
		t.Fatal(err)
	}
	if msg := flows(t, udpPeer, host, host.ID()); msg != "m0" {
		t.Fatalf("first message after the re-bind is %q, want m0", msg)
	}
	flows(t, host, wsPeer, wsPeer.ID())

	host.Close()
	for _, p := range []*relay.Conn{udpPeer, wsPeer} {
		if ev := waitEvent(t, p, relay.EventPeerDisconnected); ev.Peer != host.ID() {
			t.Fatalf("disconnected event for %s, want the host", ev.Peer)
		}
	}
}

// TestDTLSWrongKey: a key that is not the allocation's fails the handshake
// (the relay derives the right one from the id), and Dial says so.
func TestDTLSWrongKey(t *testing.T) {
	s := startStack(t)
	ctx := ctxT(t)
	c := s.client(t, "alice", &relay.Config{Transport: relay.TransportDTLS})
	a, err := c.Allocate(ctx, relay.AllocateRequest{MaxConnections: 1})
	if err != nil {
		t.Fatal(err)
	}
	a.Key[0] ^= 1
	if conn, err := c.Dial(ctx, a); err == nil {
		conn.Close()
		t.Fatal("Dial with a wrong key succeeded")
	}
	a.Key[0] ^= 1
	conn, err := c.Dial(ctx, a)
	if err != nil {
		t.Fatalf("Dial with the right key: %v", err)
	}
	conn.Close()
}

// TestDTLSNATRebinding: the NAT in front of a DTLS host remaps its port
// mid-session. A DTLS connection is its peer's address (no connection
// ids), so the node drops the host's records from the new port; the host
// hears nothing back, re-dials after Config.DeadAfter (a new handshake
// from the new port) and re-binds with a larger nonce, and the session
// goes on both ways.
func TestDTLSNATRebinding(t *testing.T) {
	s := startStack(t)
	p, addr := s.proxyTo(t, s.RelayDTLS)
	hostCfg := &relay.Config{Transport: relay.TransportDTLS, KeepAlive: 300 * time.Millisecond, DeadAfter: time.Second}
	relay.SetUDPAddr(hostCfg, addr)
	host, peer := connectedPair(t, s, hostCfg, nil)
	if err := p.Rebind(); err != nil {
		t.Fatal(err)
	}
	flows(t, host, peer, peer.ID())
	waitEvent(t, host, relay.EventRebound)
	flows(t, peer, host, host.ID())
	if st := host.Stats(); st.Rebinds < 1 {
		t.Fatalf("host stats %+v, want a re-bind", st)
	}
}
