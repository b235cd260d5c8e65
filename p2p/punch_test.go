package p2p

import (
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// registerUDP registers c on the hub's UDP port from a socket of its
// own, and returns that socket's address (the public endpoint the hub
// records).
func (th *testHub) registerUDP(c *client) netip.AddrPort {
	th.t.Helper()
	u := th.udp(c)
	u.register()
	return u.uc.LocalAddr().(*net.UDPAddr).AddrPort()
}

func TestPunchOffers(t *testing.T) {
	th := startHub(t, nil)
	alice, _ := th.join("alice", "lobby")
	bob, _ := th.join("bob", "lobby")
	expect[*p2pwire.PeerEvents](alice)
	pubA := th.registerUDP(alice)
	pubB := th.registerUDP(bob)

	alice.send(&p2pwire.PunchRequest{RequestID: 42, Transport: p2pwire.TransportUDP, TimeoutMS: 3000, Peer: bob.id()})
	oa := expect[*p2pwire.PunchOffer](alice)
	ob := expect[*p2pwire.PunchOffer](bob)
	if oa.PunchID == 0 || oa.PunchID != ob.PunchID || oa.KeyID != ob.KeyID || oa.Secret != ob.Secret {
		t.Fatalf("offers disagree:\n%+v\n%+v", oa, ob)
	}
	if oa.KeyID == alice.welcome.UDP.KeyID || oa.KeyID == bob.welcome.UDP.KeyID || oa.Secret == ([32]byte{}) {
		t.Fatalf("pair key %#x / %x", oa.KeyID, oa.Secret)
	}
	if oa.RequestID != 42 || ob.RequestID != 0 || !oa.Initiator() || ob.Initiator() {
		t.Fatalf("request ids %d, %d", oa.RequestID, ob.RequestID)
	}
	if oa.Peer != bob.id() || oa.Public != pubB || !slices.Equal(oa.Candidates, []netip.AddrPort{pubB}) {
		t.Fatalf("alice's offer names %s %s %v", oa.Peer, oa.Public, oa.Candidates)
	}
	if ob.Peer != alice.id() || ob.Public != pubA || !slices.Equal(ob.Candidates, []netip.AddrPort{pubA}) {
		t.Fatalf("bob's offer names %s %s %v", ob.Peer, ob.Public, ob.Candidates)
	}
	if oa.TimeoutMS != 3000 || ob.TimeoutMS != 3000 || oa.Transport != p2pwire.TransportUDP {
		t.Fatalf("timeouts %d %d", oa.TimeoutMS, ob.TimeoutMS)
	}
	// A second punch gets a fresh key.
	bob.send(&p2pwire.PunchRequest{RequestID: 1, Transport: p2pwire.TransportTCP, TimeoutMS: 3000, Peer: alice.id()})
	ob2 := expect[*p2pwire.PunchOffer](bob)
	oa2 := expect[*p2pwire.PunchOffer](alice)
	if ob2.PunchID == oa.PunchID || ob2.Secret == oa.Secret || oa2.Transport != p2pwire.TransportTCP || oa2.PunchID != ob2.PunchID {
		t.Fatalf("second punch %+v", ob2)
	}

	alice.send(&p2pwire.PunchResult{PunchID: oa.PunchID, Outcome: p2pwire.PunchUp})
	bob.send(&p2pwire.PunchResult{PunchID: oa.PunchID, Outcome: p2pwire.PunchUp})
	// A result for a punch one was not part of is ignored.
	carol, _ := th.join("carol", "lobby")
	carol.send(&p2pwire.PunchResult{PunchID: ob2.PunchID, Outcome: p2pwire.PunchFailed})
	carol.ping(1)
	alice.ping(2)
	bob.ping(3)
	if got := counterValue(t, th.h.m.punches["up"]); got != 2 {
		t.Errorf("punches up %v, want 2", got)
	}
	if got := counterValue(t, th.h.m.punches["failed"]); got != 0 {
		t.Errorf("punches failed %v, want 0 (carol's result is not counted)", got)
	}
	if got := counterValue(t, th.h.m.punches["offered"]); got != 2 {
		t.Errorf("punches offered %v, want 2", got)
	}
	th.h.punch.mu.Lock()
	inFlight := len(th.h.punch.punches)
	th.h.punch.mu.Unlock()
	if inFlight != 1 {
		t.Errorf("%d punches in flight, want 1 (the first has both results)", inFlight)
	}
}

func TestPunchRefused(t *testing.T) {
	th := startHub(t, func(c *Config) { c.MaxPunchesPerPeer = 2 })
	alice, _ := th.join("alice", "lobby")
	bob, _ := th.join("bob", "lobby")
	expect[*p2pwire.PeerEvents](alice)
	req := func(id uint64, to p2pwire.PeerID) {
		alice.send(&p2pwire.PunchRequest{RequestID: id, Transport: p2pwire.TransportUDP, TimeoutMS: 10000, Peer: to})
	}

	th.registerUDP(alice)
	req(1, bob.id())
	if e := alice.expectError(p2pwire.CodeNotRegistered, false); e.MessageID != 1 || e.Peer != bob.id() {
		t.Fatalf("not registered: %+v", e)
	}
	th.registerUDP(bob)
	req(2, "nobody~x")
	if e := alice.expectError(p2pwire.CodeUnknownPeer, false); e.MessageID != 2 {
		t.Fatalf("unknown peer: %+v", e)
	}
	req(3, alice.id())
	alice.expectError(p2pwire.CodeForbidden, false)
	other, _ := th.join("eve", "elsewhere")
	req(4, other.id())
	alice.expectError(p2pwire.CodeUnknownPeer, false)

	// Two in flight at most.
	req(5, bob.id())
	expect[*p2pwire.PunchOffer](alice)
	req(6, bob.id())
	expect[*p2pwire.PunchOffer](alice)
	req(7, bob.id())
	if e := alice.expectError(p2pwire.CodeRateLimited, false); e.MessageID != 7 {
		t.Fatalf("in flight: %+v", e)
	}
	alice.ping(1)
	if got := counterValue(t, th.h.m.punches["refused"]); got != 5 {
		t.Errorf("refused %v, want 5", got)
	}

	// When alice leaves, the broker forgets her punches and her limit.
	alice.send(&p2pwire.Goodbye{})
	expect[*p2pwire.PunchOffer](bob)
	expect[*p2pwire.PunchOffer](bob)
	expect[*p2pwire.PeerEvents](bob)
	th.h.punch.mu.Lock()
	n := len(th.h.punch.punches) + len(th.h.punch.byPeer) + len(th.h.punch.limits)
	th.h.punch.mu.Unlock()
	if n != 0 {
		t.Errorf("broker still holds %d entries after alice left", n)
	}
}

func TestPunchRateLimited(t *testing.T) {
	th := startHub(t, func(c *Config) { c.MaxPunchesPerPeer = 100 })
	alice, _ := th.join("alice", "lobby")
	bob, _ := th.join("bob", "lobby")
	expect[*p2pwire.PeerEvents](alice)
	th.registerUDP(alice)
	th.registerUDP(bob)
	offers, limited := 0, 0
	for i := range 20 {
		alice.send(&p2pwire.PunchRequest{RequestID: uint64(i + 1), Transport: p2pwire.TransportUDP, TimeoutMS: 1000, Peer: bob.id()})
	}
	for offers+limited < 20 {
		m, err := alice.read()
		if err != nil {
			t.Fatal(err)
		}
		switch m := m.(type) {
		case *p2pwire.PunchOffer:
			offers++
		case *p2pwire.Error:
			if m.Code != p2pwire.CodeRateLimited {
				t.Fatalf("error %s", m.Code)
			}
			limited++
		}
	}
	// The burst is DefaultPunchBurst; at one a second, 20 requests sent at
	// once cannot all pass, and the burst does.
	if offers < DefaultPunchBurst || limited == 0 {
		t.Errorf("%d offers, %d rate limited", offers, limited)
	}
}

// TestPunchExpires: a punch in flight counts against the requester's cap
// until its deadline, then no more; a result after that is not counted.
func TestPunchExpires(t *testing.T) {
	th := startHub(t, func(c *Config) { c.MaxPunchesPerPeer = 1 })
	alice, _ := th.join("alice", "lobby")
	bob, _ := th.join("bob", "lobby")
	expect[*p2pwire.PeerEvents](alice)
	th.registerUDP(alice)
	th.registerUDP(bob)
	req := func(id uint64, ms uint32) {
		alice.send(&p2pwire.PunchRequest{RequestID: id, Transport: p2pwire.TransportUDP, TimeoutMS: ms, Peer: bob.id()})
	}
	req(1, 50)
	o := expect[*p2pwire.PunchOffer](alice)
	req(2, 50)
	alice.expectError(p2pwire.CodeRateLimited, false) // one in flight already
	time.Sleep(1100 * time.Millisecond)               // past the deadline and its second of grace, and a token back
	bob.send(&p2pwire.PunchResult{PunchID: o.PunchID, Outcome: p2pwire.PunchFailed})
	req(3, 50)
	if o3 := expect[*p2pwire.PunchOffer](alice); o3.RequestID != 3 || o3.PunchID == o.PunchID {
		t.Fatalf("offer after the deadline: %+v", o3)
	}
	bob.ping(1)
	if got := counterValue(t, th.h.m.punches["failed"]); got != 0 {
		t.Errorf("a result after the deadline was counted (%v)", got)
	}
}

// A punch ends when both sides reported, not when one side reported
// twice: the requester could otherwise clear its punches in flight at
// once and keep the other side punching (up to a minute each) far beyond
// MaxPunchesPerPeer.
func TestPunchResultOncePerSide(t *testing.T) {
	th := startHub(t, func(c *Config) { c.MaxPunchesPerPeer = 1; c.PunchRate = -1 })
	alice, _ := th.join("alice", "lobby")
	bob, _ := th.join("bob", "lobby")
	expect[*p2pwire.PeerEvents](alice)
	th.registerUDP(alice)
	th.registerUDP(bob)
	alice.send(&p2pwire.PunchRequest{RequestID: 1, Transport: p2pwire.TransportUDP, TimeoutMS: 60000, Peer: bob.id()})
	o := expect[*p2pwire.PunchOffer](alice)
	expect[*p2pwire.PunchOffer](bob)
	alice.send(&p2pwire.PunchResult{PunchID: o.PunchID, Outcome: p2pwire.PunchFailed})
	alice.send(&p2pwire.PunchResult{PunchID: o.PunchID, Outcome: p2pwire.PunchFailed})
	alice.send(&p2pwire.PunchRequest{RequestID: 2, Transport: p2pwire.TransportUDP, TimeoutMS: 60000, Peer: bob.id()})
	if e := alice.expectError(p2pwire.CodeRateLimited, false); e.MessageID != 2 {
		t.Fatalf("second punch while bob still punches: %+v", e)
	}
	if got := counterValue(t, th.h.m.punches["failed"]); got != 1 {
		t.Errorf("punches failed %v, want 1 (alice's second result is not counted)", got)
	}
	// Bob's result ends the punch: alice may punch again.
	bob.send(&p2pwire.PunchResult{PunchID: o.PunchID, Outcome: p2pwire.PunchFailed})
	bob.ping(1)
	alice.send(&p2pwire.PunchRequest{RequestID: 3, Transport: p2pwire.TransportUDP, TimeoutMS: 60000, Peer: bob.id()})
	if o3 := expect[*p2pwire.PunchOffer](alice); o3.RequestID != 3 {
		t.Fatalf("third punch: %+v", o3)
	}
}
