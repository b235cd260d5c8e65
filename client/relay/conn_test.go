package relay_test

import (
	"testing"

	"github.com/switchboardgg/switchboard/client/relay"
)

// TestHostJoinChat: a host on UDP and a joiner on WebSocket in one
// allocation exchange messages both ways; the host learns of the joiner
// and of its leaving.
func TestHostJoinChat(t *testing.T) {
	s := startStack(t)
	ctx := ctxT(t)
	host, err := s.client(t, "alice", nil).Host(ctx, relay.AllocateRequest{MaxConnections: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	if host.JoinCode() == "" || !host.IsHost() || host.Region() != "local" {
		t.Fatalf("host: code %q host %v region %q", host.JoinCode(), host.IsHost(), host.Region())
	}
	peer, err := s.client(t, "bob", &relay.Config{Transport: relay.TransportWebSocket}).Join(ctx, host.JoinCode())
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	if peer.HostID() != host.ID() {
		t.Fatalf("joiner's host %s, want %s", peer.HostID(), host.ID())
	}
	if ev := waitEvent(t, peer, relay.EventPeerConnected); ev.Peer != host.ID() {
		t.Fatalf("joiner's connected event for %s", ev.Peer)
	}
	if err := peer.Send(ctx, host.ID(), []byte("hello host")); err != nil {
		t.Fatal(err)
	}
	if msg, from := recv(t, host); msg != "hello host" || from != peer.ID() {
		t.Fatalf("host got %q from %s", msg, from)
	}
	if ev := waitEvent(t, host, relay.EventPeerConnected); ev.Peer != peer.ID() {
		t.Fatalf("host's connected event for %s", ev.Peer)
	}
	if err := host.Send(ctx, peer.ID(), []byte("hello peer")); err != nil {
		t.Fatal(err)
	}
	if msg, from := recv(t, peer); msg != "hello peer" || from != host.ID() {
		t.Fatalf("peer got %q from %s", msg, from)
	}
	peer.Close()
	if ev := waitEvent(t, host, relay.EventPeerDisconnected); ev.Peer != peer.ID() {
		t.Fatalf("host's disconnected event for %s", ev.Peer)
	}
}
