package p2p

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/pion/stun/v3"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/switchboardgg/switchboard/internal/p2pseal"
	"github.com/switchboardgg/switchboard/internal/udpio"
	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// udpClient is a test peer's UDP side: its own socket and its key from
// WELCOME. Like the SDK, recv answers the hub's PATH_CHALLENGEs at once,
// unless silent (a socket that cannot answer: a spoofed source's victim).
type udpClient struct {
	t      testing.TB
	c      *client
	uc     *net.UDPConn
	side   p2pseal.Side
	hub    netip.AddrPort
	last   []byte // the last datagram sent, for replays
	silent bool   // never answer a PATH_CHALLENGE
	// sent and got count the bytes of the datagrams sent from and
	// received on the socket; challenges counts the PATH_CHALLENGEs.
	sent, got, challenges int
}

func (th *testHub) udp(c *client) *udpClient {
	th.t.Helper()
	if c.welcome.UDP == nil {
		th.t.Fatal("WELCOME without a UDP session")
	}
	side, err := p2pseal.PeerSide(c.welcome.UDP.Secret[:], c.welcome.UDP.KeyID)
	if err != nil {
		th.t.Fatal(err)
	}
	uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		th.t.Fatal(err)
	}
	th.t.Cleanup(func() { _ = uc.Close() })
	return &udpClient{t: th.t, c: c, uc: uc, side: side, hub: netip.MustParseAddrPort(th.addr)}
}

// send seals m and sends it to the hub.
func (u *udpClient) send(m p2pwire.Message) {
	u.t.Helper()
	plain, err := m.AppendTo(nil)
	if err != nil {
		u.t.Fatal(err)
	}
	d, err := u.side.Seal.Seal(nil, plain)
	if err != nil {
		u.t.Fatal(err)
	}
	u.sendRaw(d)
}

func (u *udpClient) sendRaw(d []byte) {
	u.t.Helper()
	u.last = d
	u.sent += len(d)
	if _, err := u.uc.WriteToUDPAddrPort(d, u.hub); err != nil {
		u.t.Fatal(err)
	}
}

// recv returns the next datagram from the hub, opened and decoded, or nil
// after wait. It answers a PATH_CHALLENGE and reads on, unless silent.
func (u *udpClient) recv(wait time.Duration) p2pwire.Message {
	u.t.Helper()
	for {
		m := u.recvAny(wait)
		c, ok := m.(*p2pwire.PathChallenge)
		if !ok || u.silent {
			return m
		}
		u.send(&p2pwire.PathResponse{Data: c.Data})
	}
}

// recvAny returns the next datagram from the hub, whatever its kind.
func (u *udpClient) recvAny(wait time.Duration) p2pwire.Message {
	u.t.Helper()
	buf := make([]byte, 2048)
	_ = u.uc.SetReadDeadline(time.Now().Add(wait))
	n, _, err := u.uc.ReadFromUDPAddrPort(buf)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil
		}
		u.t.Fatal(err)
	}
	u.got += n
	plain, _, err := u.side.Open.Open(nil, buf[:n])
	if err != nil {
		u.t.Fatalf("open: %v", err)
	}
	m, err := p2pwire.Decode(plain)
	if err != nil {
		u.t.Fatalf("decode: %v", err)
	}
	if _, ok := m.(*p2pwire.PathChallenge); ok {
		u.challenges++
	}
	return m
}

// register sends REGISTER and expects REGISTERED with the socket's address.
func (u *udpClient) register() {
	u.t.Helper()
	u.send(&p2pwire.Register{Candidates: []netip.AddrPort{u.uc.LocalAddr().(*net.UDPAddr).AddrPort()}})
	m, ok := u.recv(5 * time.Second).(*p2pwire.Registered)
	if !ok || m.Observed != u.uc.LocalAddr().(*net.UDPAddr).AddrPort() {
		u.t.Fatalf("REGISTER answered with %v", m)
	}
}

func counterValue(t testing.TB, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// waitCounter waits until c reaches want (the UDP reader counts after the
// datagram left the test's socket).
func waitCounter(t testing.TB, c prometheus.Counter, want float64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for counterValue(t, c) < want {
		if time.Now().After(deadline) {
			t.Fatalf("counter at %v, want %v", counterValue(t, c), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Registration, a routed UDP_MESSAGE, RELIABLE and JUMBO stamped and
// re-sealed for the recipient, a broadcast, and the per-peer counters.
func TestUDPRouting(t *testing.T) {
	th := startHub(t, nil)
	alice, _ := th.join("alice", "lobby")
	bob, _ := th.join("bob", "lobby")
	carol, _ := th.join("carol", "lobby")
	au, bu, cu := th.udp(alice), th.udp(bob), th.udp(carol)
	au.register()
	bu.register()
	cu.register()

	env := p2pwire.Envelope{Header: "pos", Payload: []byte("x=1")}
	au.send(&p2pwire.UDPMsg{Route: p2pwire.Route{To: bob.id()}, Envelope: env})
	got, ok := bu.recv(5 * time.Second).(*p2pwire.UDPMsg)
	if !ok || got.From != alice.id() || got.To != "" || got.Broadcast || got.Header != "pos" || string(got.Payload) != "x=1" {
		t.Fatalf("bob got %+v", got)
	}
	// Every routed kind is routed alike: the hub does not read RELIABLE or JUMBO.
	au.send(&p2pwire.Reliable{Route: p2pwire.Route{To: bob.id()}, Channel: p2pwire.Channel(1), Segment: []byte("kcp")})
	if r, ok := bu.recv(5 * time.Second).(*p2pwire.Reliable); !ok || r.From != alice.id() || string(r.Segment) != "kcp" {
		t.Fatalf("bob got %+v", r)
	}
	au.send(&p2pwire.Jumbo{Route: p2pwire.Route{Broadcast: true}, MessageID: 1, Count: 2, Total: 1025, Index: 1, Chunk: []byte("z")})
	for _, u := range []*udpClient{bu, cu} {
		if j, ok := u.recv(5 * time.Second).(*p2pwire.Jumbo); !ok || j.From != alice.id() || !j.Broadcast || string(j.Chunk) != "z" {
			t.Fatalf("broadcast jumbo: %+v", j)
		}
	}
	if m := au.recv(100 * time.Millisecond); m != nil {
		t.Fatalf("the broadcaster got its own broadcast: %v", m)
	}
	// PING is answered on UDP too.
	au.send(&p2pwire.Ping{Value: 7})
	if p, ok := au.recv(5 * time.Second).(*p2pwire.Pong); !ok || p.Value != 7 {
		t.Fatalf("PONG: %v", p)
	}
	// In: REGISTER, PATH_RESPONSE, three routed, PING; out: PATH_CHALLENGE,
	// REGISTERED, PONG. Every first endpoint is checked, and answered.
	st, ok := th.h.PeerUDP("lobby", string(alice.id()))
	if !ok || st.DatagramsIn != 6 || st.DatagramsOut != 3 || st.BytesIn == 0 || st.Endpoint != au.uc.LocalAddr().(*net.UDPAddr).AddrPort() ||
		!st.Validated || len(st.Candidates) != 1 {
		t.Fatalf("alice's UDP stats %+v", st)
	}
	if st, _ := th.h.PeerUDP("lobby", string(bob.id())); st.DatagramsOut != 5 || st.DatagramsIn != 2 || !st.Validated {
		t.Fatalf("bob's UDP stats %+v", st)
	}
	if au.challenges != 1 || bu.challenges != 1 || cu.challenges != 1 || counterValue(t, th.h.m.pathChecks[pathValidated]) != 3 {
		t.Fatalf("challenges %d %d %d, validated %v; want one each", au.challenges, bu.challenges, cu.challenges,
			counterValue(t, th.h.m.pathChecks[pathValidated]))
	}
	// To an unknown peer, or to one not registered: dropped and counted.
	dan, _ := th.join("dan", "lobby")
	au.send(&p2pwire.UDPMsg{Route: p2pwire.Route{To: "nobody~1"}, Envelope: env})
	au.send(&p2pwire.UDPMsg{Route: p2pwire.Route{To: dan.id()}, Envelope: env})
	waitCounter(t, th.h.m.udpDrop["unknown_peer"], 1)
	waitCounter(t, th.h.m.udpDrop["not_registered"], 1)
}

// Datagrams that do not authenticate, replays, and what a peer may not
// send are dropped, counted and never answered.
func TestUDPDropsForgedAndReplayed(t *testing.T) {
	th := startHub(t, nil)
	alice, _ := th.join("alice", "lobby")
	bob, _ := th.join("bob", "lobby")
	au, bu := th.udp(alice), th.udp(bob)
	au.register()
	bu.register()
	m := th.h.m

	// A replay of the REGISTER: no second answer.
	au.sendRaw(au.last)
	waitCounter(t, m.udpDrop["replay"], 1)
	// A forged tag, a key id nobody has, another marker, garbage in the
	// STUN range, and a datagram too short to hold a tag.
	au.send(&p2pwire.UDPMsg{Route: p2pwire.Route{To: bob.id()}, Envelope: p2pwire.Envelope{Payload: []byte("x")}})
	forged := bytes.Clone(au.last)
	forged[len(forged)-1] ^= 1
	if _, ok := bu.recv(5 * time.Second).(*p2pwire.UDPMsg); !ok {
		t.Fatal("the real datagram did not arrive")
	}
	au.sendRaw(forged)
	waitCounter(t, m.udpDrop["replay"], 2) // its seq was used: the window refuses it before the tag
	forged2, _ := au.side.Seal.Seal(nil, []byte{byte(p2pwire.KindPing), 0, 0, 0, 0, 0, 0, 0, 0, 1})
	forged2[20] ^= 1
	au.sendRaw(forged2)
	waitCounter(t, m.udpDrop["unauthenticated"], 1)
	other, _ := p2pseal.PeerSide(bytes.Repeat([]byte{1}, 32), 12345)
	d, _ := other.Seal.Seal(nil, []byte{byte(p2pwire.KindPing), 0, 0, 0, 0, 0, 0, 0, 0, 1})
	au.sendRaw(d)
	waitCounter(t, m.udpDrop["unknown_key"], 1)
	au.sendRaw(append([]byte{0x17}, make([]byte, 40)...))
	au.sendRaw([]byte{0x01, 0, 0, 0})
	au.sendRaw([]byte{p2pwire.SealedMarker, 0, 0, 0, 1})
	waitCounter(t, m.udpDrop["not_ours"], 3)
	// Authenticated, but a kind only the hub sends, or a forged from.
	au.send(&p2pwire.Registered{Observed: netip.MustParseAddrPort("1.2.3.4:5")})
	au.send(&p2pwire.UDPMsg{Route: p2pwire.Route{From: bob.id()}, Envelope: p2pwire.Envelope{Payload: []byte("x")}})
	waitCounter(t, m.udpDrop["malformed"], 2)
	if got := au.recv(200 * time.Millisecond); got != nil {
		t.Fatalf("the hub answered a dropped datagram: %v", got)
	}
	if got := bu.recv(50 * time.Millisecond); got != nil {
		t.Fatalf("bob got a dropped datagram: %v", got)
	}
}

// A peer whose datagrams come from a new address (NAT rebinding) is
// reached there from then on.
func TestUDPRebinding(t *testing.T) {
	th := startHub(t, nil)
	alice, _ := th.join("alice", "lobby")
	bob, _ := th.join("bob", "lobby")
	au, bu := th.udp(alice), th.udp(bob)
	au.register()
	bu.register()
	// Alice's NAT gives her a new port: same key, new socket.
	moved := th.udp(alice)
	moved.side = au.side
	moved.send(&p2pwire.Ping{Value: 1})
	if _, ok := moved.recv(5 * time.Second).(*p2pwire.Pong); !ok {
		t.Fatal("no PONG at the new address")
	}
	bu.send(&p2pwire.UDPMsg{Route: p2pwire.Route{To: alice.id()}, Envelope: p2pwire.Envelope{Payload: []byte("here?")}})
	if m, ok := moved.recv(5 * time.Second).(*p2pwire.UDPMsg); !ok || string(m.Payload) != "here?" {
		t.Fatalf("alice at her new address got %v", m)
	}
	if counterValue(t, th.h.m.udpRebinds) != 1 {
		t.Fatal("rebind not counted")
	}
	// moved answered the hub's challenge as it read: the new endpoint is
	// validated.
	if st, _ := th.h.PeerUDP("lobby", string(alice.id())); !st.Validated || st.Endpoint != moved.local() || moved.challenges != 1 {
		t.Fatalf("alice at her new address: %+v, %d challenges", st, moved.challenges)
	}
}

// The per-peer datagram rate drops what is over it.
func TestUDPRateLimit(t *testing.T) {
	th := startHub(t, func(c *Config) { c.PeerDatagramRate = 3 })
	alice, _ := th.join("alice", "lobby")
	bob, _ := th.join("bob", "lobby")
	au, bu := th.udp(alice), th.udp(bob)
	au.register()
	bu.register()
	start := time.Now()
	for range 20 {
		au.send(&p2pwire.UDPMsg{Route: p2pwire.Route{To: bob.id()}, Envelope: p2pwire.Envelope{Payload: []byte("x")}})
	}
	waitCounter(t, th.h.m.udpDrop["rate_limited"], 1)
	got := 0
	for bu.recv(200*time.Millisecond) != nil {
		got++
	}
	// At most the burst (3) plus what the rate refilled meanwhile.
	if limit := 3 + int(3*time.Since(start).Seconds()) + 1; got == 0 || got > limit {
		t.Fatalf("bob got %d of 20, want 1..%d", got, limit)
	}
}

// STUN binding requests are answered with the source's address, checked
// with pion/stun's client, and rate-limited per source.
func TestSTUN(t *testing.T) {
	th := startHub(t, func(c *Config) { c.STUNRatePerSource = 1 })
	c, err := stun.Dial("udp4", th.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	var got stun.XORMappedAddress
	var derr error
	if err := c.Do(stun.MustBuild(stun.TransactionID, stun.BindingRequest), func(e stun.Event) {
		if derr = e.Error; derr == nil {
			derr = got.GetFrom(e.Message)
		}
	}); err != nil || derr != nil {
		t.Fatalf("binding: %v, %v", err, derr)
	}
	if got.Port == 0 || !got.IP.Equal(net.IPv4(127, 0, 0, 1)) {
		t.Fatalf("XOR-MAPPED-ADDRESS %v", got)
	}
	// Ten more from another socket at once: one per second is answered.
	uc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2)})
	if err != nil {
		t.Skipf("no 127.0.0.2: %v", err)
	}
	defer func() { _ = uc.Close() }()
	start := time.Now()
	for range 10 {
		if _, err := uc.WriteToUDPAddrPort(stun.MustBuild(stun.TransactionID, stun.BindingRequest).Raw, netip.MustParseAddrPort(th.addr)); err != nil {
			t.Fatal(err)
		}
	}
	answers := 0
	buf := make([]byte, 1500)
	for {
		_ = uc.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		n, _, err := uc.ReadFromUDPAddrPort(buf)
		if err != nil {
			break
		}
		if !stun.IsMessage(buf[:n]) {
			t.Fatalf("not a STUN answer: %x", buf[:n])
		}
		answers++
	}
	if limit := 1 + int(time.Since(start).Seconds()) + 1; answers < 1 || answers > limit {
		t.Fatalf("%d answers to 10 requests, want 1..%d", answers, limit)
	}
	waitCounter(t, th.h.m.udpDrop["stun_rate_limited"], float64(10-answers))
	if v := counterValue(t, th.h.m.stunAnswered); v != float64(1+answers) {
		t.Fatalf("answered counter %v", v)
	}
}

// The hub's per-datagram work (open, route, stamp, re-seal) allocates
// nothing, for one destination, for a broadcast, and for a destination
// whose endpoint is not validated (held to its budget, challenged); the
// sender's own endpoint is under check throughout (a new socket).
func TestUDPRouteAllocatesNothing(t *testing.T) {
	th := startHub(t, nil)
	alice, _ := th.join("alice", "lobby")
	bob, _ := th.join("bob", "lobby")
	carol, _ := th.join("carol", "lobby")
	for _, c := range []*client{alice, bob, carol} {
		th.udp(c).register()
	}
	dan, _ := th.join("dan", "lobby")
	du := th.udp(dan)
	du.silent = true
	du.send(&p2pwire.Register{})
	waitFor(t, func() bool { st, _ := th.h.PeerUDP("lobby", string(dan.id())); return st.Endpoint.IsValid() })
	au := th.udp(alice)
	h := th.h
	s := &udpSock{out: make([]udpio.Message, 0, 64), plain: make([]byte, 0, p2pwire.MaxDatagramSize), stamp: make([]byte, 0, p2pwire.MaxOpenedSize)}
	src := au.uc.LocalAddr().(*net.UDPAddr).AddrPort()
	unvalidated := counterValue(t, h.m.udpDrop["unvalidated"])
	for _, rt := range []p2pwire.Route{{To: bob.id()}, {Broadcast: true}, {To: dan.id()}} {
		plain, err := (&p2pwire.UDPMsg{Route: rt, Envelope: p2pwire.Envelope{Payload: make([]byte, 1000)}}).AppendTo(nil)
		if err != nil {
			t.Fatal(err)
		}
		d := make([]byte, 0, p2pwire.MaxDatagramSize)
		routed := counterValue(t, h.m.udpRouted)
		allocs := testing.AllocsPerRun(500, func() {
			d, _ = au.side.Seal.Seal(d[:0], plain)
			h.handleDatagram(s, d, src, time.Now().UnixNano())
			s.out = s.out[:0]
		})
		if allocs != 0 {
			t.Errorf("%+v: %v allocations per datagram", rt, allocs)
		}
		if counterValue(t, h.m.udpRouted) == routed && rt.To != dan.id() {
			t.Errorf("%+v: nothing routed", rt)
		}
	}
	if counterValue(t, h.m.udpDrop["unvalidated"]) < unvalidated+500 {
		t.Error("the datagrams to dan's unvalidated endpoint were not held back")
	}
}

// The STUN limiter tracks at most STUNMaxSources addresses: a new one is
// refused while they are all busy, and replaces one whose bucket refilled,
// sweeping at most once a second.
func TestSTUNSourceCap(t *testing.T) {
	var st stunState
	st.init(Config{STUNRatePerSource: 1, STUNRate: 100, STUNMaxSources: 2})
	a, b, c := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.3")
	now := int64(10e9)
	if !st.allow(a, now) || !st.allow(b, now) {
		t.Fatal("the first two sources refused")
	}
	if st.allow(a, now) {
		t.Fatal("a second answer within the burst of one")
	}
	// After 2 s a and b have refilled: the sweep forgets them and c fits.
	if !st.allow(c, now+2e9) {
		t.Fatal("a third source refused although the others refilled")
	}
	if !st.allow(a, now+2e9) {
		t.Fatal("a refused after the sweep")
	}
	// All busy now (c and a just answered): d is refused, and the next
	// sweep waits a second.
	d := netip.MustParseAddr("10.0.0.4")
	if st.allow(d, now+2e9+1) || st.allow(d, now+2e9+2) {
		t.Fatal("a new source admitted over the cap while all are busy")
	}
	if len(st.perSrc) > 2 {
		t.Fatalf("%d sources tracked, cap 2", len(st.perSrc))
	}
}

// BenchmarkUDPRoute measures the hub's work per routed datagram without
// the sockets: open, route, stamp, re-seal (64-byte payload, one
// destination). The sender's sealing is inside the loop too (the replay
// window needs a fresh datagram each time): three AEAD operations in all.
func BenchmarkUDPRoute(b *testing.B) {
	th := startHub(b, func(c *Config) { c.PeerDatagramRate = -1 })
	alice, _ := th.join("alice", "lobby")
	bob, _ := th.join("bob", "lobby")
	th.udp(alice).register()
	th.udp(bob).register()
	au := th.udp(alice)
	s := &udpSock{out: make([]udpio.Message, 0, 64), plain: make([]byte, 0, p2pwire.MaxDatagramSize), stamp: make([]byte, 0, p2pwire.MaxOpenedSize)}
	src := au.uc.LocalAddr().(*net.UDPAddr).AddrPort()
	plain, _ := (&p2pwire.UDPMsg{Route: p2pwire.Route{To: bob.id()}, Envelope: p2pwire.Envelope{Payload: make([]byte, 64)}}).AppendTo(nil)
	d := make([]byte, 0, p2pwire.MaxDatagramSize)
	now := time.Now().UnixNano()
	b.ReportAllocs()
	for b.Loop() {
		d, _ = au.side.Seal.Seal(d[:0], plain)
		th.h.handleDatagram(s, d, src, now)
		s.out = s.out[:0]
	}
}
