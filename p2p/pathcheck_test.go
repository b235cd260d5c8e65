package p2p

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/internal/p2pseal"
	"github.com/switchboardgg/switchboard/internal/udpio"
	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// pathRig drives the hub's datagram handling directly, on a clock of its
// own (no sockets, no real time): a hub with peers joined over TLS, and
// their UDP keys.
type pathRig struct {
	t  *testing.T
	th *testHub
	s  *udpSock
	// now is the rig's clock, Unix nanoseconds.
	now int64
}

// rigPeer is one peer of the rig: its sides of the hub key.
type rigPeer struct {
	id   p2pwire.PeerID
	p    *peer
	side p2pseal.Side
}

func newPathRig(t *testing.T) *pathRig {
	th := startHub(t, nil)
	return &pathRig{t: t, th: th, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano(),
		s: &udpSock{out: make([]udpio.Message, 0, 64), plain: make([]byte, 0, p2pwire.MaxDatagramSize), stamp: make([]byte, 0, p2pwire.MaxOpenedSize)}}
}

func (r *pathRig) join(user string) *rigPeer {
	r.t.Helper()
	c, _ := r.th.join(user, "lobby")
	side, err := p2pseal.PeerSide(c.welcome.UDP.Secret[:], c.welcome.UDP.KeyID)
	if err != nil {
		r.t.Fatal(err)
	}
	r.th.h.mu.Lock()
	n := r.th.h.networks["lobby"]
	r.th.h.mu.Unlock()
	n.mu.RLock()
	p := n.peers[string(c.id())]
	n.mu.RUnlock()
	return &rigPeer{id: c.id(), p: p, side: side}
}

// out is a datagram the hub queued: where to, its size, and what it was.
type out struct {
	to   netip.AddrPort
	size int
	m    p2pwire.Message
}

// seal seals m with rp's key (taking the next sequence number).
func (r *pathRig) seal(rp *rigPeer, m p2pwire.Message) []byte {
	r.t.Helper()
	plain, err := m.AppendTo(nil)
	if err != nil {
		r.t.Fatal(err)
	}
	d, err := rp.side.Seal.Seal(nil, plain)
	if err != nil {
		r.t.Fatal(err)
	}
	return d
}

// send hands the hub d from src at the rig's clock and returns what it
// queued, opened with the key of the peer each went to (of to).
func (r *pathRig) send(d []byte, src netip.AddrPort, to ...*rigPeer) []out {
	r.t.Helper()
	r.s.out = r.s.out[:0]
	r.th.h.handleDatagram(r.s, d, src, r.now)
	var got []out
	for _, m := range r.s.out {
		var msg p2pwire.Message
		for _, rp := range to {
			if plain, _, err := rp.side.Open.Open(nil, m.Buf); err == nil {
				if msg, err = p2pwire.Decode(plain); err != nil {
					r.t.Fatalf("the hub sent %x: %v", plain, err)
				}
				break
			}
		}
		if msg == nil {
			r.t.Fatalf("a datagram to %v that none of the peers opens", m.Addr)
		}
		got = append(got, out{to: m.Addr, size: len(m.Buf), m: msg})
	}
	r.s.out = r.s.out[:0]
	return got
}

// kinds lists the kinds of os, with where each went.
func kinds(os []out) []string {
	var s []string
	for _, o := range os {
		s = append(s, o.m.Kind().String()+"→"+o.to.String())
	}
	return s
}

func (r *pathRig) challengeIn(os []out, to netip.AddrPort) (p2pwire.PathData, bool) {
	for _, o := range os {
		if c, ok := o.m.(*p2pwire.PathChallenge); ok && o.to == to {
			return c.Data, true
		}
	}
	return p2pwire.PathData{}, false
}

func (r *pathRig) stats(rp *rigPeer) UDPStats {
	st, ok := r.th.h.PeerUDP("lobby", string(rp.id))
	if !ok {
		r.t.Fatal("no such peer")
	}
	return st
}

// register makes rp's first endpoint src and answers the challenge.
func (r *pathRig) register(rp *rigPeer, src netip.AddrPort) {
	r.t.Helper()
	os := r.send(r.seal(rp, &p2pwire.Register{}), src, rp)
	data, ok := r.challengeIn(os, src)
	if !ok || len(os) != 2 || os[0].m.Kind() != p2pwire.KindPathChallenge || os[1].m.Kind() != p2pwire.KindRegistered {
		r.t.Fatalf("REGISTER answered with %v; want PATH_CHALLENGE then REGISTERED", kinds(os))
	}
	if os := r.send(r.seal(rp, &p2pwire.PathResponse{Data: data}), src, rp); len(os) != 0 {
		r.t.Fatalf("PATH_RESPONSE answered with %v", kinds(os))
	}
	if st := r.stats(rp); !st.Validated || st.Endpoint != src {
		r.t.Fatalf("after the answer: %+v", st)
	}
}

// The rules step by step: the first endpoint is challenged; the challenge
// goes again at most every 250 ms, with a datagram either way; a response
// from another source, or with other data, validates nothing; an older
// datagram from elsewhere moves nothing; what goes to an unvalidated
// endpoint keeps within 3 times what came from it; ten challenges, then
// the check is abandoned and the endpoint stays limited; a move back to
// the validated endpoint needs no challenge.
func TestPathCheckRules(t *testing.T) {
	r := newPathRig(t)
	m := r.th.h.m
	alice, bob := r.join("alice"), r.join("bob")
	a := netip.MustParseAddrPort("192.0.2.1:4000")
	b := netip.MustParseAddrPort("192.0.2.2:4000")
	x := netip.MustParseAddrPort("203.0.113.9:666")

	// Alice's first endpoint: challenged, and limited until she answers.
	os := r.send(r.seal(alice, &p2pwire.Register{}), a, alice)
	first, ok := r.challengeIn(os, a)
	if !ok || len(os) != 2 {
		t.Fatalf("first REGISTER answered with %v", kinds(os))
	}
	if st := r.stats(alice); st.Validated || st.Endpoint != a {
		t.Fatalf("alice before her answer: %+v", st)
	}
	r.now += int64(100 * time.Millisecond)
	if os := r.send(r.seal(alice, &p2pwire.Ping{Value: 1}), a, alice); len(os) != 1 || os[0].m.Kind() != p2pwire.KindPong {
		t.Fatalf("100 ms later: %v; want PONG alone", kinds(os))
	}
	r.now += int64(150 * time.Millisecond)
	os = r.send(r.seal(alice, &p2pwire.Ping{Value: 2}), a, alice)
	if again, ok := r.challengeIn(os, a); !ok || again != first || len(os) != 2 {
		t.Fatalf("250 ms after the first: %v; want the same challenge again, then PONG", kinds(os))
	}
	// A response sealed first but sent last, from elsewhere: it is older
	// than the PING before it, so it moves nothing, and it is not from the
	// endpoint being checked, so it validates nothing.
	late := r.seal(alice, &p2pwire.PathResponse{Data: first})
	r.send(r.seal(alice, &p2pwire.Ping{Value: 3}), a, alice)
	stale := counterValue(t, m.udpDrop["stale"])
	if os := r.send(late, b, alice); len(os) != 0 {
		t.Fatalf("a stale response answered with %v", kinds(os))
	}
	if st := r.stats(alice); st.Validated || st.Endpoint != a || counterValue(t, m.udpDrop["stale"]) != stale+1 {
		t.Fatalf("after an older response from elsewhere: %+v", st)
	}
	r.send(r.seal(alice, &p2pwire.PathResponse{Data: p2pwire.PathData{9}}), a, alice)
	if st := r.stats(alice); st.Validated || counterValue(t, m.udpDrop["stale"]) != stale+2 {
		t.Fatalf("validated by a response with other data: %+v", st)
	}
	r.send(r.seal(alice, &p2pwire.PathResponse{Data: first}), a, alice)
	if st := r.stats(alice); !st.Validated || counterValue(t, m.pathChecks[pathValidated]) != 1 {
		t.Fatalf("not validated by the right response: %+v", st)
	}
	r.register(bob, b)

	// A forged source x: the hub sends there from now on, within 3 times
	// what x sent, and challenges it.
	r.now += int64(time.Second)
	in, sent := 0, 0
	ping := r.seal(alice, &p2pwire.Ping{Value: 4})
	in += len(ping)
	os = r.send(ping, x, alice)
	if _, ok := r.challengeIn(os, x); !ok || len(os) != 2 || os[1].m.Kind() != p2pwire.KindPong || os[1].to != x {
		t.Fatalf("from a new source: %v; want PATH_CHALLENGE and PONG there", kinds(os))
	}
	for _, o := range os {
		sent += o.size
	}
	unvalidated := counterValue(t, m.udpDrop["unvalidated"])
	for i := range 5 {
		msg := &p2pwire.UDPMsg{Route: p2pwire.Route{To: alice.id}, Envelope: p2pwire.Envelope{Payload: make([]byte, 100)}}
		for _, o := range r.send(r.seal(bob, msg), b, alice, bob) {
			if o.to != x {
				t.Fatalf("message %d went to %v", i, o.to)
			}
			sent += o.size
		}
	}
	if sent > 3*in || counterValue(t, m.udpDrop["unvalidated"]) != unvalidated+5 {
		t.Fatalf("%d bytes to the unvalidated source for %d from it; %v dropped", sent, in,
			counterValue(t, m.udpDrop["unvalidated"])-unvalidated)
	}
	// Nine more challenges, one per 250 ms with x's datagrams, then the
	// check is abandoned; x stays limited.
	challenges := 1
	for range 12 {
		r.now += int64(250 * time.Millisecond)
		d := r.seal(alice, &p2pwire.Ping{Value: 5})
		in += len(d)
		os := r.send(d, x, alice)
		if _, ok := r.challengeIn(os, x); ok {
			challenges++
		}
		for _, o := range os {
			sent += o.size
		}
	}
	if challenges != pathTries || counterValue(t, m.pathChecks[pathAbandoned]) != 1 || sent > 3*in {
		t.Fatalf("%d challenges, %v abandoned, %d bytes out for %d in; want %d, 1, at most 3x", challenges,
			counterValue(t, m.pathChecks[pathAbandoned]), sent, in, pathTries)
	}
	if st := r.stats(alice); st.Validated || st.Endpoint != x {
		t.Fatalf("after the abandoned check: %+v", st)
	}

	// Alice's next datagram from a: back at once, no challenge, no limit.
	os = r.send(r.seal(alice, &p2pwire.Ping{Value: 6}), a, alice)
	if len(os) != 1 || os[0].m.Kind() != p2pwire.KindPong || os[0].to != a {
		t.Fatalf("back at the validated endpoint: %v; want PONG alone", kinds(os))
	}
	big := &p2pwire.UDPMsg{Route: p2pwire.Route{To: alice.id}, Envelope: p2pwire.Envelope{Payload: make([]byte, 1000)}}
	for range 3 {
		if os := r.send(r.seal(bob, big), b, alice, bob); len(os) != 1 || os[0].to != a {
			t.Fatalf("bob's message to alice back home: %v", kinds(os))
		}
	}

	// A new source y: the challenge also goes when the hub sends there
	// (here bob's message, 300 ms later), before what it sends.
	y := netip.MustParseAddrPort("192.0.2.1:4001")
	r.now += int64(time.Second)
	r.send(r.seal(alice, &p2pwire.Ping{Value: 7}), y, alice)
	r.now += int64(300 * time.Millisecond)
	os = r.send(r.seal(bob, &p2pwire.UDPMsg{Route: p2pwire.Route{To: alice.id}}), b, alice, bob)
	data, ok := r.challengeIn(os, y)
	if !ok || os[0].m.Kind() != p2pwire.KindPathChallenge {
		t.Fatalf("bob's message to alice's new endpoint 300 ms later: %v; want a challenge first", kinds(os))
	}
	r.send(r.seal(alice, &p2pwire.PathResponse{Data: data}), y, alice)
	if st := r.stats(alice); !st.Validated || st.Endpoint != y {
		t.Fatalf("after the answer from y: %+v", st)
	}
}

// TestUDPPathCheckSpoofedSource: someone holding alice's keys (alice herself, say)
// sends one authenticated datagram from a second socket that never
// answers. While bob sends to alice, that socket receives at most 3 times
// the bytes it sent; alice's next datagram from her real socket takes her
// endpoint back, and bob's datagrams reach her again. Real sockets.
func TestUDPPathCheckSpoofedSource(t *testing.T) {
	th := startHub(t, nil)
	alice, _ := th.join("alice", "lobby")
	bob, _ := th.join("bob", "lobby")
	au, bu := th.udp(alice), th.udp(bob)
	au.register()
	bu.register()
	m := th.h.m

	victim := th.udp(alice)
	victim.side = au.side // the same sealer: its datagram is alice's newest
	victim.silent = true
	victim.send(&p2pwire.Ping{Value: 1})
	waitFor(t, func() bool { st, _ := th.h.PeerUDP("lobby", string(alice.id())); return st.Endpoint == victim.local() })

	const n = 50
	for range n {
		bu.send(&p2pwire.UDPMsg{Route: p2pwire.Route{To: alice.id()}, Envelope: p2pwire.Envelope{Payload: make([]byte, 200)}})
	}
	waitFor(t, func() bool { st, _ := th.h.PeerUDP("lobby", string(bob.id())); return st.DatagramsIn == 2+n })
	for victim.recvAny(200*time.Millisecond) != nil {
	}
	if victim.got > 3*victim.sent || victim.challenges < 1 {
		t.Fatalf("the second socket got %d bytes (%d challenges) for %d sent; want at most 3x", victim.got, victim.challenges, victim.sent)
	}
	if d := counterValue(t, m.udpDrop["unvalidated"]); d < n-1 {
		t.Fatalf("%v datagrams held back from the unvalidated endpoint, want at least %d", d, n-1)
	}
	t.Logf("the second socket got %d bytes for %d sent; %v held back", victim.got, victim.sent, counterValue(t, m.udpDrop["unvalidated"]))

	au.send(&p2pwire.Ping{Value: 2})
	if p, ok := au.recvAny(5 * time.Second).(*p2pwire.Pong); !ok || p.Value != 2 {
		t.Fatalf("alice's PING from her socket answered with %v; want PONG and no challenge", p)
	}
	bu.send(&p2pwire.UDPMsg{Route: p2pwire.Route{To: alice.id()}, Envelope: p2pwire.Envelope{Payload: []byte("back")}})
	if got, ok := au.recv(5 * time.Second).(*p2pwire.UDPMsg); !ok || string(got.Payload) != "back" {
		t.Fatalf("alice got %v", got)
	}
	if st, _ := th.h.PeerUDP("lobby", string(alice.id())); !st.Validated || st.Endpoint != au.local() {
		t.Fatalf("alice's endpoint %+v", st)
	}
	if counterValue(t, m.pathChecks[pathAbandoned]) != 1 || counterValue(t, m.udpRebinds) != 2 {
		t.Fatalf("abandoned %v, rebinds %v; want 1 and 2", counterValue(t, m.pathChecks[pathAbandoned]), counterValue(t, m.udpRebinds))
	}
}

// A datagram sealed before the newest one but arriving after it, from the
// endpoint the peer left (a reordered one), does not take the endpoint
// back. Real sockets.
func TestUDPOlderDatagramDoesNotMove(t *testing.T) {
	th := startHub(t, nil)
	alice, _ := th.join("alice", "lobby")
	au := th.udp(alice)
	au.register()
	moved := th.udp(alice)
	moved.side = au.side
	older := mustSeal(t, au, &p2pwire.Ping{Value: 1})
	moved.send(&p2pwire.Ping{Value: 2})
	if p, ok := moved.recv(5 * time.Second).(*p2pwire.Pong); !ok || p.Value != 2 {
		t.Fatalf("at the new endpoint: %v", p)
	}
	au.sendRaw(older)
	waitFor(t, func() bool { st, _ := th.h.PeerUDP("lobby", string(alice.id())); return st.DatagramsIn == 5 })
	if st, _ := th.h.PeerUDP("lobby", string(alice.id())); st.Endpoint != moved.local() || !st.Validated {
		t.Fatalf("alice's endpoint %+v; want the new one, validated", st)
	}
	// The old endpoint is no longer the validated one (the hub keeps the
	// last): the PONG for the older PING is not sent there.
	if got := au.recvAny(100 * time.Millisecond); got != nil {
		t.Fatalf("the older PING answered at the old endpoint with %v", got)
	}
}

func mustSeal(t *testing.T, u *udpClient, m p2pwire.Message) []byte {
	t.Helper()
	plain, err := m.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := u.side.Seal.Seal(nil, plain)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (u *udpClient) local() netip.AddrPort { return u.uc.LocalAddr().(*net.UDPAddr).AddrPort() }

// waitFor polls cond until it holds (the hub's reader works after the
// test's socket wrote).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
