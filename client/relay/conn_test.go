package relay_test

import (
	"slices"
	"testing"

	"github.com/switchboardgg/switchboard/client/relay"
)

// TestHostJoinChat: a host on UDP and a joiner on WebSocket in one
// allocation. The host hears of the joiner from the relay's peer events
// before any message, sends first, and hears of its leaving.
func TestHostJoinChat(t *testing.T) {
	s := startStack(t)
	ctx := ctxT(t)
	host, err := s.client(t, "alice", nil).Host(ctx, relay.AllocateRequest{MaxConnections: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	if host.JoinCode() == "" || !host.IsHost() || host.Region() != "local" || host.Transport() != relay.TransportUDP {
		t.Fatalf("host: code %q host %v region %q transport %s", host.JoinCode(), host.IsHost(), host.Region(), host.Transport())
	}
	peer, err := s.client(t, "bob", &relay.Config{Transport: relay.TransportWebSocket}).Join(ctx, host.JoinCode())
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	if peer.HostID() != host.ID() || peer.IsHost() || peer.Endpoint().ConnectionType != "ws" {
		t.Fatalf("joiner's host %s (want %s), endpoint %+v", peer.HostID(), host.ID(), peer.Endpoint())
	}
	if ev := waitEvent(t, peer, relay.EventPeerConnected); ev.Peer != host.ID() {
		t.Fatalf("joiner's connected event for %s", ev.Peer)
	}
	if ev := waitEvent(t, host, relay.EventPeerConnected); ev.Peer != peer.ID() {
		t.Fatalf("host's connected event for %s", ev.Peer)
	}
	if got := host.Peers(); !slices.Equal(got, []relay.AllocationID{peer.ID()}) {
		t.Fatalf("host's peers %v", got)
	}
	if err := host.Send(ctx, peer.ID(), []byte("hello peer")); err != nil {
		t.Fatal(err)
	}
	if msg, from := recv(t, peer); msg != "hello peer" || from != host.ID() {
		t.Fatalf("peer got %q from %s", msg, from)
	}
	if err := peer.Send(ctx, host.ID(), []byte("hello host")); err != nil {
		t.Fatal(err)
	}
	if msg, from := recv(t, host); msg != "hello host" || from != peer.ID() {
		t.Fatalf("host got %q from %s", msg, from)
	}
	peer.Close()
	if ev := waitEvent(t, host, relay.EventPeerDisconnected); ev.Peer != peer.ID() {
		t.Fatalf("host's disconnected event for %s", ev.Peer)
	}
	if len(host.Peers()) != 0 {
		t.Fatalf("host's peers after the leave: %v", host.Peers())
	}
	if st := host.Stats(); st.Sent != 1 || st.Received != 1 || st.Dropped != 0 {
		t.Fatalf("host stats %+v", st)
	}
}

// TestHostWithoutPeerEvents: a host that does not subscribe (as with a
// relay node without peer events) learns of a peer from its first
// message and of its leaving from DISCONNECT.
func TestHostWithoutPeerEvents(t *testing.T) {
	s := startStack(t)
	ctx := ctxT(t)
	cfg := &relay.Config{}
	relay.DisablePeerEvents(cfg)
	host, err := s.client(t, "alice", cfg).Host(ctx, relay.AllocateRequest{MaxConnections: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	peer, err := s.client(t, "bob", nil).Join(ctx, host.JoinCode())
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	if len(host.Peers()) != 0 {
		t.Fatalf("host knows %v before any message", host.Peers())
	}
	if err := peer.Send(ctx, host.ID(), []byte("here")); err != nil {
		t.Fatal(err)
	}
	if msg, _ := recv(t, host); msg != "here" {
		t.Fatalf("host got %q", msg)
	}
	if ev := waitEvent(t, host, relay.EventPeerConnected); ev.Peer != peer.ID() {
		t.Fatalf("connected event for %s", ev.Peer)
	}
	peer.Close()
	if ev := waitEvent(t, host, relay.EventPeerDisconnected); ev.Peer != peer.ID() {
		t.Fatalf("disconnected event for %s", ev.Peer)
	}
}

// TestMixedCarriers: one allocation, a host on WebSocket and two peers,
// one on UDP and one on WebSocket: the host reaches both and hears both.
func TestMixedCarriers(t *testing.T) {
	s := startStack(t)
	ctx := ctxT(t)
	host, err := s.client(t, "host", &relay.Config{Transport: relay.TransportWebSocket}).Host(ctx, relay.AllocateRequest{MaxConnections: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	peers := map[relay.AllocationID]*relay.Conn{}
	for _, tr := range []relay.Transport{relay.TransportUDP, relay.TransportWebSocket} {
		p, err := s.client(t, "peer-"+string(tr), &relay.Config{Transport: tr}).Join(ctx, host.JoinCode())
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if got := p.Transport(); got != tr {
			t.Fatalf("transport %s, want %s", got, tr)
		}
		peers[p.ID()] = p
		waitEvent(t, host, relay.EventPeerConnected)
	}
	for id, p := range peers {
		if err := host.Send(ctx, id, []byte("to "+string(p.Transport()))); err != nil {
			t.Fatal(err)
		}
		if msg, from := recv(t, p); msg != "to "+string(p.Transport()) || from != host.ID() {
			t.Fatalf("%s peer got %q from %s", p.Transport(), msg, from)
		}
		if err := p.Send(ctx, host.ID(), []byte("from "+string(p.Transport()))); err != nil {
			t.Fatal(err)
		}
		if msg, from := recv(t, host); msg != "from "+string(p.Transport()) || from != id {
			t.Fatalf("host got %q from %s, want from the %s peer %s", msg, from, p.Transport(), id)
		}
	}
}
