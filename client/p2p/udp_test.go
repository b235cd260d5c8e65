package p2p_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/client/p2p"
	"github.com/switchboardgg/switchboard/internal/impair"
	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// connectUDP connects user with cfg tweaks and waits until the hub
// answered its REGISTER.
func (th *testHub) connectUDP(user, network string, tweak func(*p2p.Config)) *p2p.Peer {
	th.t.Helper()
	cfg := &p2p.Config{Logger: discard, UDPAddr: "127.0.0.1:0"}
	if tweak != nil {
		tweak(cfg)
	}
	p, err := p2p.Connect(context.Background(), th.ticket(user, network), cfg)
	if err != nil {
		th.t.Fatalf("connect %s: %v", user, err)
	}
	th.t.Cleanup(func() { _ = p.Close() })
	select {
	case <-p.Registered():
	case <-time.After(10 * time.Second):
		th.t.Fatalf("%s: not registered", user)
	}
	return p
}

// nextUDP returns the next message that came as UDP, skipping TLS ones.
func nextUDP(t *testing.T, p *p2p.Peer) *p2p.Message {
	t.Helper()
	for {
		if m := nextMessage(t, p); m.UDP {
			return m
		}
	}
}

// impairHub serves an impair proxy in front of the hub's UDP port.
func impairHub(t *testing.T, th *testHub) (*impair.Proxy, string) {
	t.Helper()
	px, err := impair.New(impair.Config{Target: th.addr, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { defer close(served); _ = px.Serve(uc) }()
	t.Cleanup(func() { _ = px.Close(); <-served })
	return px, uc.LocalAddr().String()
}

// UDP through the hub: registration, a message to one peer, a
// broadcast, the hub's per-peer counters, and the size limit.
func TestUDPThroughHub(t *testing.T) {
	th := startHub(t, nil)
	ctx := context.Background()
	alice := th.connectUDP("alice", "lobby", nil)
	bob := th.connectUDP("bob", "lobby", nil)
	carol := th.connectUDP("carol", "lobby", nil)
	if ep, ok := alice.PublicEndpoint(); !ok || ep != alice.UDPLocal() {
		t.Fatalf("alice's public endpoint %v (%v), bound to %v", ep, ok, alice.UDPLocal())
	}
	if alice.UDPConnPort() != alice.UDPLocal().Port() || len(alice.Candidates()) != 1 || alice.Candidates()[0] != alice.UDPLocal() {
		t.Fatalf("socket port %d, candidates %v", alice.UDPConnPort(), alice.Candidates())
	}
	if err := alice.SendUDP(ctx, bob.ID(), p2p.Envelope{Header: "pos", Pairs: []p2p.Pair{{Key: "b"}, {Key: "a", Value: "1"}}, Payload: []byte("x=1")}); err != nil {
		t.Fatal(err)
	}
	m := nextUDP(t, bob)
	if m.From != alice.ID() || m.Broadcast || m.Path != p2p.PathHub || m.Header != "pos" || string(m.Payload) != "x=1" || len(m.Pairs) != 2 || m.Pairs[0].Key != "a" || m.IsRequest() {
		t.Fatalf("bob got %+v", m)
	}
	if err := bob.BroadcastUDP(ctx, p2p.Envelope{Payload: []byte("all")}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*p2p.Peer{alice, carol} {
		if m := nextUDP(t, p); m.From != bob.ID() || !m.Broadcast || string(m.Payload) != "all" {
			t.Fatalf("%s got %+v", p.ID(), m)
		}
	}
	// A broadcast jumbo message reaches everyone whole.
	big := bytes.Repeat([]byte("0123456789"), 5000)
	if err := bob.BroadcastUDP(ctx, p2p.Envelope{Header: "big", Payload: big}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*p2p.Peer{alice, carol} {
		if m := nextUDP(t, p); m.From != bob.ID() || !m.Broadcast || m.Header != "big" || !bytes.Equal(m.Payload, big) {
			t.Fatalf("%s got %d bytes from %s (broadcast %v)", p.ID(), len(m.Payload), m.From, m.Broadcast)
		}
	}
	st, ok := th.h.PeerUDP("lobby", bob.ID())
	if !ok || st.DatagramsIn < 2 || st.DatagramsOut < 2 || st.Endpoint != bob.UDPLocal() {
		t.Fatalf("bob's counters on the hub: %+v", st)
	}
	if s := bob.UDPStats(); s.Received < 2 || s.Sent < 2 {
		t.Fatalf("bob's own counters %+v", s)
	}
	err := alice.SendUDP(ctx, bob.ID(), p2p.Envelope{Payload: make([]byte, p2p.MaxJumboSize)})
	if !errors.Is(err, p2p.ErrTooLarge) {
		t.Fatalf("an envelope over the jumbo maximum: %v", err)
	}
	t.Log(err)

	noUDP, err := p2p.Connect(ctx, th.ticket("dave", "lobby"), &p2p.Config{Logger: discard, DisableUDP: true})
	if err != nil {
		t.Fatal(err)
	}
	defer noUDP.Close()
	if err := noUDP.SendUDP(ctx, bob.ID(), p2p.Envelope{}); !errors.Is(err, p2p.ErrNoUDP) {
		t.Fatalf("SendUDP without UDP: %v", err)
	}
}

// One jumbo message of the largest size arrives whole.
func TestUDPJumbo16MB(t *testing.T) {
	th := startHub(t, nil)
	ctx := context.Background()
	slow := func(c *p2p.Config) { c.JumboRate = 4 << 20 } // the machine is shared: 4 s for 16 MB
	alice := th.connectUDP("alice", "lobby", slow)
	bob := th.connectUDP("bob", "lobby", slow)
	payload := make([]byte, p2p.MaxJumboSize-1) // an envelope of only a payload: one flags byte more
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	if err := alice.SendUDP(ctx, bob.ID(), p2p.Envelope{Payload: payload}); err != nil {
		t.Fatal(err)
	}
	var m *p2p.Message
	select {
	case m = <-bob.Messages():
	case <-time.After(30 * time.Second):
		t.Fatalf("no jumbo message; bob's counters %+v", bob.UDPStats())
	}
	if m.From != alice.ID() || !m.UDP || !bytes.Equal(m.Payload, payload) {
		t.Fatalf("bob got %d bytes from %s (UDP %v)", len(m.Payload), m.From, m.UDP)
	}
	if s := bob.UDPStats(); s.JumboReceived != 1 || s.JumboTimedOut != 0 {
		t.Fatalf("bob's counters %+v", s)
	}
	if s := alice.UDPStats(); s.JumboSent != 1 || s.Sent < uint64(p2pwire.JumboCount(p2p.MaxJumboSize)) {
		t.Fatalf("alice's counters %+v", s)
	}
}

// A jumbo message missing chunks is dropped after its timeout and
// counted; the next message arrives.
func TestUDPJumboLostChunkDropped(t *testing.T) {
	th := startHub(t, nil)
	ctx := context.Background()
	px, front := impairHub(t, th)
	alice := th.connectUDP("alice", "lobby", func(c *p2p.Config) { c.HubUDPAddr = front })
	bob := th.connectUDP("bob", "lobby", func(c *p2p.Config) { c.JumboTimeout = 300 * time.Millisecond })
	if err := px.SetFaults(impair.Up, impair.Faults{Loss: 0.2}); err != nil {
		t.Fatal(err)
	}
	// 100 chunks at 20 % loss: the chance that none is lost is 2e-10.
	if err := alice.SendUDP(ctx, bob.ID(), p2p.Envelope{Payload: make([]byte, 100*p2pwire.JumboChunkSize)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for bob.UDPStats().JumboTimedOut != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the incomplete jumbo message was not dropped: %+v (proxy %+v)", bob.UDPStats(), px.Stats())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := px.SetFaults(impair.Up, impair.Faults{}); err != nil {
		t.Fatal(err)
	}
	if err := alice.SendUDP(ctx, bob.ID(), p2p.Envelope{Payload: []byte("after")}); err != nil {
		t.Fatal(err)
	}
	if m := nextUDP(t, bob); string(m.Payload) != "after" {
		t.Fatalf("bob got %d bytes: the incomplete jumbo was delivered", len(m.Payload))
	}
	if s := bob.UDPStats(); s.JumboReceived != 0 {
		t.Fatalf("bob's counters %+v", s)
	}
}

// A peer whose NAT rebinds (a new source port) keeps sending and
// receiving through the hub.
func TestUDPRebinding(t *testing.T) {
	th := startHub(t, nil)
	ctx := context.Background()
	px, front := impairHub(t, th)
	alice := th.connectUDP("alice", "lobby", func(c *p2p.Config) { c.HubUDPAddr = front })
	bob := th.connectUDP("bob", "lobby", nil)
	before, _ := th.h.PeerUDP("lobby", alice.ID())
	if err := px.Rebind(); err != nil {
		t.Fatal(err)
	}
	if err := alice.SendUDP(ctx, bob.ID(), p2p.Envelope{Payload: []byte("from my new port")}); err != nil {
		t.Fatal(err)
	}
	if m := nextUDP(t, bob); string(m.Payload) != "from my new port" {
		t.Fatalf("bob got %q", m.Payload)
	}
	after, _ := th.h.PeerUDP("lobby", alice.ID())
	if after.Endpoint == before.Endpoint || !after.Endpoint.IsValid() {
		t.Fatalf("the hub still has alice at %v (was %v)", after.Endpoint, before.Endpoint)
	}
	if err := bob.SendUDP(ctx, alice.ID(), p2p.Envelope{Payload: []byte("found you")}); err != nil {
		t.Fatal(err)
	}
	if m := nextUDP(t, alice); string(m.Payload) != "found you" {
		t.Fatalf("alice got %q", m.Payload)
	}
	// The hub challenged her first endpoint and the new one, and she
	// answered: the new one is validated, and no datagram was held back.
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, _ := th.h.PeerUDP("lobby", alice.ID())
		if st.Validated && st.Endpoint == after.Endpoint {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("alice's endpoint on the hub %+v, not validated", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if s := alice.UDPStats(); s.PathChallenges < 2 {
		t.Fatalf("alice answered %d challenges, want one per endpoint", s.PathChallenges)
	}
}

// The hooks reliable channels and punching build on: a handler gets a
// routed kind with its sender and path; a direct path takes every send
// while it is up (and the hub sees none of it), and the hub again when it
// is down; a datagram under an unknown key is dropped and counted;
// extensions start and stop with the peer.
func TestUDPHooks(t *testing.T) {
	started := p2p.ExtensionStarted.Load()
	stopped := p2p.ExtensionStopped.Load()
	th := startHub(t, nil)
	ctx := context.Background()
	alice := th.connectUDP("alice", "lobby", nil)
	bob := th.connectUDP("bob", "lobby", nil)
	if p2p.ExtensionStarted.Load() != started+2 {
		t.Fatal("the extension did not start with each peer")
	}
	got := make(chan p2p.Received, 4)
	bob.HandleDatagrams(p2pwire.KindReliable, got)
	rel := []byte{byte(p2pwire.Channel(1)), 'k', 'c', 'p'}
	if path, err := alice.SendDatagram(bob.ID(), p2pwire.KindReliable, rel); err != nil || path != p2p.PathHub {
		t.Fatalf("send through the hub: %v, %v", path, err)
	}
	if r := <-got; r.From != alice.ID() || r.Path != p2p.PathHub || !bytes.Equal(r.Rest, rel) {
		t.Fatalf("handler got %+v", r)
	}

	secret := bytes.Repeat([]byte{3}, 32)
	_, removeA, err := alice.InstallDirectUDP(bob.ID(), 99, secret, bob.UDPLocal())
	if err != nil {
		t.Fatal(err)
	}
	downB, _, err := bob.InstallDirectUDP(alice.ID(), 99, secret, alice.UDPLocal())
	if err != nil {
		t.Fatal(err)
	}
	hubBefore, _ := th.h.PeerUDP("lobby", alice.ID())
	if path, err := alice.SendDatagram(bob.ID(), p2pwire.KindReliable, rel); err != nil || path != p2p.PathDirectUDP {
		t.Fatalf("send on the direct path: %v, %v", path, err)
	}
	if r := <-got; r.From != alice.ID() || r.Path != p2p.PathDirectUDP || !bytes.Equal(r.Rest, rel) {
		t.Fatalf("handler got %+v", r)
	}
	if err := alice.SendUDP(ctx, bob.ID(), p2p.Envelope{Payload: []byte("direct")}); err != nil {
		t.Fatal(err)
	}
	if m := nextUDP(t, bob); m.Path != p2p.PathDirectUDP || m.From != alice.ID() || string(m.Payload) != "direct" {
		t.Fatalf("bob got %+v", m)
	}
	// A jumbo message goes direct too.
	if err := alice.SendUDP(ctx, bob.ID(), p2p.Envelope{Payload: make([]byte, 5000)}); err != nil {
		t.Fatal(err)
	}
	if m := nextUDP(t, bob); m.Path != p2p.PathDirectUDP || len(m.Payload) != 5000 {
		t.Fatalf("bob got %d bytes on %s", len(m.Payload), m.Path)
	}
	hubAfter, _ := th.h.PeerUDP("lobby", alice.ID())
	if hubAfter.DatagramsIn-hubBefore.DatagramsIn > 1 { // at most a REGISTER refresh
		t.Fatalf("the hub saw alice's direct traffic: %+v → %+v", hubBefore, hubAfter)
	}
	// Bob's path is down: his sends go through the hub, and alice's
	// direct path still works for her.
	downB()
	if err := bob.SendUDP(ctx, alice.ID(), p2p.Envelope{Payload: []byte("via hub")}); err != nil {
		t.Fatal(err)
	}
	if m := nextUDP(t, alice); m.Path != p2p.PathHub || string(m.Payload) != "via hub" {
		t.Fatalf("alice got %+v", m)
	}
	removeA()
	if path, _ := alice.SendDatagram(bob.ID(), p2pwire.KindReliable, rel); path != p2p.PathHub {
		t.Fatalf("after removal the send took %v", path)
	}
	<-got
	// A datagram under a key bob does not have: dropped, counted.
	before := bob.UDPStats().DroppedUnauthenticated
	if err := alice.SealTo(bob.UDPLocal(), []byte{byte(p2pwire.KindPing), 0, 0, 0, 0, 0, 0, 0, 0, 1}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for bob.UDPStats().DroppedUnauthenticated == before {
		if time.Now().After(deadline) {
			t.Fatal("the datagram under an unknown key was not counted")
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = alice.Close()
	_ = bob.Close()
	if p2p.ExtensionStopped.Load() != stopped+2 {
		t.Fatal("the extension did not stop with each peer")
	}
}

// Every datagram from the hub duplicated on the way (internal/impair):
// the peer delivers each message once and counts the copies as replays.
func TestUDPReplayedDatagramsDropped(t *testing.T) {
	th := startHub(t, nil)
	ctx := context.Background()
	px, front := impairHub(t, th)
	alice := th.connectUDP("alice", "lobby", func(c *p2p.Config) { c.HubUDPAddr = front })
	bob := th.connectUDP("bob", "lobby", nil)
	if err := px.SetFaults(impair.Down, impair.Faults{Duplicate: 1}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := bob.SendUDP(ctx, alice.ID(), p2p.Envelope{Payload: []byte{byte(i)}}); err != nil {
			t.Fatal(err)
		}
		if m := nextUDP(t, alice); len(m.Payload) != 1 || m.Payload[0] != byte(i) {
			t.Fatalf("alice got %v, want [%d]", m.Payload, i)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for alice.UDPStats().DroppedReplay < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("replays not counted: %+v (proxy %+v)", alice.UDPStats(), px.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case m := <-alice.Messages():
		if m.UDP {
			t.Fatalf("a copy was delivered: %v", m.Payload)
		}
	case <-time.After(100 * time.Millisecond):
	}
}

// A change of the local addresses registers again at once, with the new
// candidates (the hub shows them), without waiting for the refresh.
func TestUDPReregistersOnAddressChange(t *testing.T) {
	th := startHub(t, nil)
	alice := th.connectUDP("alice", "lobby", func(c *p2p.Config) {
		c.AddrCheckInterval = 20 * time.Millisecond
		c.PingInterval = time.Minute // no refresh during the test
	})
	port := alice.UDPLocal().Port()
	moved := []netip.AddrPort{netip.AddrPortFrom(netip.MustParseAddr("192.0.2.7"), port)}
	alice.SetCandidateSource(func() []netip.AddrPort { return moved })
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, _ := th.h.PeerUDP("lobby", alice.ID())
		if len(st.Candidates) == 1 && st.Candidates[0] == moved[0] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hub has candidates %v, want %v", st.Candidates, moved)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
