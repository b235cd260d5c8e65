package relay_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/switchboardgg/switchboard/relay"
	"github.com/switchboardgg/switchboard/tokens"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	nodeID = "relay-test-1"
	epoch  = 7
)

// clock is a real clock that a test can move forward.
type clock struct{ off atomic.Int64 }

func (c *clock) now() time.Time          { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *clock) advance(d time.Duration) { c.off.Add(int64(d)) }

type fixture struct {
	t       *testing.T
	s       *relay.Server
	keys    *tokens.RelayKeyring
	clock   *clock
	reg     *prometheus.Registry
	udp     string
	ws      string
	mu      sync.Mutex
	release []relay.Release
}

func newFixture(t *testing.T, mod func(*relay.Config)) *fixture {
	t.Helper()
	secret := make([]byte, 32)
	rand.Read(secret)
	keys, err := tokens.NewRelayKeyring(tokens.RelayKey{ID: 1, Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, keys: keys, clock: &clock{}, reg: prometheus.NewRegistry()}
	cfg := relay.Config{
		Keys:          keys,
		NodeID:        nodeID,
		BootEpoch:     epoch,
		Logger:        slog.New(slog.DiscardHandler),
		Registerer:    f.reg,
		Now:           f.clock.now,
		SweepInterval: 10 * time.Millisecond,
		OnRelease: func(r relay.Release) {
			f.mu.Lock()
			f.release = append(f.release, r)
			f.mu.Unlock()
		},
	}
	if mod != nil {
		mod(&cfg)
	}
	s, err := relay.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.s = s
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.udp, f.ws = pc.LocalAddr().String(), ln.Addr().String()
	var wg sync.WaitGroup
	wg.Add(2)
	serveErr := func(err error) {
		if !errors.Is(err, relay.ErrServerClosed) {
			t.Errorf("serve returned %v, want ErrServerClosed", err)
		}
	}
	go func() { defer wg.Done(); serveErr(s.ServePacket(pc)) }()
	go func() { defer wg.Done(); serveErr(s.Serve(ln)) }()
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
		if err := s.Close(); err != nil { // idempotent
			t.Error(err)
		}
		wg.Wait()
		if err := s.ServePacket(pc); !errors.Is(err, relay.ErrServerClosed) {
			t.Errorf("ServePacket after Close: %v", err)
		}
	})
	return f
}

// alloc is an allocation as the REST API hands it out.
type alloc struct {
	id   [16]byte
	blob []byte
	key  []byte
}

func (f *fixture) mint(c tokens.RelayConnection) alloc {
	f.t.Helper()
	// As the control plane makes ids: the last byte names the secret.
	id, err := f.keys.NewAllocationID(rand.Reader)
	if err != nil {
		f.t.Fatal(err)
	}
	c.AllocationID = id
	if c.NodeID == "" {
		c.NodeID = nodeID
	}
	if c.BootEpoch == 0 {
		c.BootEpoch = epoch
	}
	if c.Issued.IsZero() {
		c.Issued = f.clock.now()
	}
	if c.Expires.IsZero() {
		c.Expires = c.Issued.Add(6 * time.Hour)
	}
	blob, err := f.keys.Seal(c)
	if err != nil {
		f.t.Fatal(err)
	}
	k, err := f.keys.AllocationKey(1, c.AllocationID)
	if err != nil {
		f.t.Fatal(err)
	}
	return alloc{id: c.AllocationID, blob: blob, key: k[:]}
}

func (f *fixture) host(maxConn uint16) alloc {
	return f.mint(tokens.RelayConnection{MaxConnections: maxConn})
}

func (f *fixture) joiner(h alloc) alloc {
	return f.mint(tokens.RelayConnection{HostAllocationID: h.id})
}

func bound(t *testing.T, c transport, a alloc, nonce uint16) {
	t.Helper()
	c.send(mBind(nonce, a.blob, a.key))
	expectNext(t, c, hdr(tBindReceived))
}

func connected(t *testing.T, c transport, j, h alloc) {
	t.Helper()
	c.send(mConnect(j.id, h.blob))
	expectNext(t, c, mFromTo(tAccepted, h.id, j.id))
}

func (f *fixture) drops(reason string) float64 {
	return testutil.ToFloat64(f.counter("switchboard_relay_drops_total", "reason", reason))
}

func (f *fixture) counter(name, label, value string) prometheus.Collector {
	f.t.Helper()
	mfs, err := f.reg.Gather()
	if err != nil {
		f.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "x", Help: "x"}, func() float64 { return m.GetCounter().GetValue() })
				}
			}
		}
	}
	f.t.Fatalf("no %s{%s=%q}", name, label, value)
	return nil
}

func (f *fixture) releases() []relay.Release {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]relay.Release(nil), f.release...)
}

// TestSession drives the flow of the seed over UDP: bind (idempotent),
// connect (idempotent), relay both ways verbatim, ping echoed, stats.
func TestSession(t *testing.T) {
	f := newFixture(t, nil)
	h, j := f.host(4), alloc{}
	j = f.joiner(h)
	hc, jc := dialUDP(t, f.udp), dialUDP(t, f.udp)

	bound(t, hc, h, 0)
	bound(t, hc, h, 0) // UTP re-sends BIND every second until answered
	bound(t, jc, j, 100)
	connected(t, jc, j, h)
	connected(t, jc, j, h) // UTP retries CONNECT_REQUEST

	m := mRelay(j.id, h.id, []byte("hello host"))
	jc.send(m)
	expectNext(t, hc, m)
	m = mRelay(h.id, j.id, bytes.Repeat([]byte{0xAB}, 1434))
	hc.send(m)
	expectNext(t, jc, m)

	hc.send(mPing(h.id))
	expectNext(t, hc, mPing(h.id))

	st, ok := f.s.Allocation(h.id)
	if !ok || !st.Host || st.Peers != 1 || st.PacketsIn != 1 || st.BytesIn != 1434 || st.PacketsOut != 1 || st.Carrier != "udp" {
		t.Fatalf("host stats %+v, %v", st, ok)
	}
	if f.s.Allocations() != 2 {
		t.Fatalf("got %d allocations, want 2", f.s.Allocations())
	}
	// The writer counts a batch after sendmmsg returns, which can be
	// after the client has read the last answer: wait for the count.
	out := func() float64 {
		return testutil.ToFloat64(f.counter("switchboard_relay_packets_total", "direction", "out"))
	}
	for deadline := time.Now().Add(5 * time.Second); out() < 8 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if got := out(); got != 8 {
		t.Fatalf("packets out %v, want 8", got)
	}
}

// TestAddressChange: a packet from a new address gets ERROR 3, a BIND from
// there needs a larger nonce, and traffic then follows the new address.
func TestAddressChange(t *testing.T) {
	f := newFixture(t, nil)
	h := f.host(4)
	j := f.joiner(h)
	hc, jc := dialUDP(t, f.udp), dialUDP(t, f.udp)
	bound(t, hc, h, 5)
	bound(t, jc, j, 0)
	connected(t, jc, j, h)

	moved := dialUDP(t, f.udp) // the host's NAT mapping changed
	moved.send(mPing(h.id))
	expectNext(t, moved, mError(h.id, 3))
	moved.send(mBind(5, h.blob, h.key)) // same nonce from a new address
	expectNext(t, moved, mError(h.id, 3))
	moved.send(mRelay(h.id, j.id, []byte("spoofed")))
	expectNext(t, moved, mError(h.id, 3))
	expectSilence(t, jc)

	bound(t, moved, h, 6)
	m := mRelay(j.id, h.id, []byte("to the new address"))
	jc.send(m)
	expectNext(t, moved, m)
	expectSilence(t, hc)
	// The old address is the stranger now.
	hc.send(mPing(h.id))
	expectNext(t, hc, mError(h.id, 3))
}

// TestRelayChecks: RELAY is forwarded only between connected peers, from
// the sender's bound address.
func TestRelayChecks(t *testing.T) {
	f := newFixture(t, nil)
	h := f.host(4)
	j, k := f.joiner(h), f.joiner(h)
	hc, jc, kc := dialUDP(t, f.udp), dialUDP(t, f.udp), dialUDP(t, f.udp)
	bound(t, hc, h, 0)
	bound(t, jc, j, 0)
	bound(t, kc, k, 0)
	connected(t, jc, j, h)

	kc.send(mRelay(k.id, h.id, []byte("not connected")))
	expectNext(t, kc, mError(k.id, 5))
	kc.send(mRelay(k.id, j.id, []byte("joiner to joiner")))
	expectNext(t, kc, mError(k.id, 5))
	kc.send(mRelay(j.id, h.id, []byte("someone else's id")))
	expectNext(t, kc, mError(j.id, 3))
	var unknown [16]byte
	rand.Read(unknown[:])
	kc.send(mRelay(unknown, h.id, []byte("?")))
	expectNext(t, kc, mError(unknown, 4))
	// A lying length, truncated, unknown type, wrong version: silence.
	bad := mRelay(j.id, h.id, []byte("abc"))
	bad[37]++
	for _, b := range [][]byte{bad, mPing(j.id)[:21], {0xDA, 0x72, 0x00, 0x04}, {0xDA, 0x72, 0x01, 0x02}, {0x01}} {
		jc.send(b)
	}
	expectSilence(t, hc)
	expectSilence(t, jc)
	if f.drops("malformed") < 3 || f.drops("unknown_type") < 1 {
		t.Fatalf("malformed %v, unknown_type %v", f.drops("malformed"), f.drops("unknown_type"))
	}
	// CONNECT_REQUEST to itself, or a host connecting at all.
	jc.send(mConnect(j.id, j.blob))
	expectNext(t, jc, mError(j.id, 6))
	h2 := f.host(4)
	bound(t, kc, h2, 0)
	kc.send(mConnect(h2.id, h.blob))
	expectNext(t, kc, mError(h2.id, 2))
	// A blob naming a joiner as its host.
	jj := f.joiner(j)
	jjc := dialUDP(t, f.udp)
	bound(t, jjc, jj, 0)
	jjc.send(mConnect(jj.id, j.blob))
	expectNext(t, jjc, mError(jj.id, 2))
}

// TestCapacity: the host's cap counts connected peers; DISCONNECT frees a
// slot and reaches the peer.
func TestCapacity(t *testing.T) {
	f := newFixture(t, nil)
	h := f.host(1)
	j, k := f.joiner(h), f.joiner(h)
	hc, jc, kc := dialUDP(t, f.udp), dialUDP(t, f.udp), dialUDP(t, f.udp)
	bound(t, hc, h, 0)
	bound(t, jc, j, 0)
	bound(t, kc, k, 0)
	connected(t, jc, j, h)
	kc.send(mConnect(k.id, h.blob))
	expectNext(t, kc, mFromTo(tRejected, h.id, k.id))

	d := mFromTo(tDisconnect, j.id, h.id)
	jc.send(d)
	expectNext(t, hc, d)
	connected(t, kc, k, h)
	jc.send(mRelay(j.id, h.id, []byte("gone")))
	expectNext(t, jc, mError(j.id, 5))
}

// TestBindRefusals: a bad HMAC is ignored; blobs of another boot epoch or
// node, expired ones and late first binds get ERROR 4.
func TestBindRefusals(t *testing.T) {
	f := newFixture(t, nil)
	c := dialUDP(t, f.udp)
	h := f.host(4)
	wrong := append([]byte(nil), h.key...)
	wrong[0] ^= 1
	c.send(mBind(0, h.blob, wrong))
	expectSilence(t, c)
	if f.drops("bad_hmac") != 1 {
		t.Fatalf("bad_hmac %v", f.drops("bad_hmac"))
	}
	c.send(mBind(0, bytes.Repeat([]byte{9}, 200), h.key))
	expectSilence(t, c)

	now := f.clock.now()
	for _, tc := range []struct {
		name string
		c    tokens.RelayConnection
	}{
		{"earlier boot epoch", tokens.RelayConnection{BootEpoch: epoch - 1}},
		{"another node", tokens.RelayConnection{NodeID: "relay-test-2"}},
		{"expired", tokens.RelayConnection{Issued: now.Add(-2 * time.Hour), Expires: now.Add(-time.Hour)}},
		{"first bind too late", tokens.RelayConnection{Issued: now.Add(-61 * time.Second)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := f.mint(tc.c)
			c.send(mBind(0, a.blob, a.key))
			expectNext(t, c, mError(a.id, 4))
		})
	}
	bound(t, c, h, 0)
}

// TestTimeouts: a peer's idle timeout frees its slot; a lone host lives 60
// s; a timed-out allocation gets ERROR 1, then ERROR 4 for ever.
func TestTimeouts(t *testing.T) {
	f := newFixture(t, nil)
	h := f.mint(tokens.RelayConnection{MaxConnections: 1, IdleTimeout: 30 * time.Second})
	j, k := f.joiner(h), f.joiner(h)
	hc, jc, kc := dialUDP(t, f.udp), dialUDP(t, f.udp), dialUDP(t, f.udp)
	bound(t, hc, h, 0)
	bound(t, jc, j, 0)
	bound(t, kc, k, 0)
	connected(t, jc, j, h)

	f.clock.advance(11 * time.Second) // the joiners' 10 s pass; the host has 30 s
	expect(t, jc, mError(j.id, 1))
	expect(t, hc, mFromTo(tDisconnect, j.id, h.id))
	jc.send(mPing(j.id))
	expect(t, jc, mError(j.id, 4))
	kc.send(mBind(0, k.blob, k.key)) // k timed out too
	expect(t, kc, mError(k.id, 4))

	// The host is alone: 60 s, not its 30.
	f.clock.advance(40 * time.Second)
	hc.send(mPing(h.id))
	expect(t, hc, mPing(h.id))
	f.clock.advance(61 * time.Second)
	expect(t, hc, mError(h.id, 1))
	hc.send(mBind(1, h.blob, h.key))
	expect(t, hc, mError(h.id, 4))

	got := map[[16]byte]relay.Release{}
	for _, r := range f.releases() {
		got[r.AllocationID] = r
	}
	if r := got[h.id]; !r.Host || r.Reason != relay.ReleaseTimeout {
		t.Fatalf("host release %+v", r)
	}
	if r := got[j.id]; r.Host || r.Reason != relay.ReleaseTimeout {
		t.Fatalf("joiner release %+v", r)
	}
}

// TestClose: CLOSE in both forms; the host's CLOSE releases its peers and
// reports the release for the join code.
func TestClose(t *testing.T) {
	f := newFixture(t, nil)
	h := f.host(4)
	j := f.joiner(h)
	hc, jc := dialUDP(t, f.udp), dialUDP(t, f.udp)
	bound(t, hc, h, 0)
	bound(t, jc, j, 0)
	connected(t, jc, j, h)

	hc.send(append(hdr(tClose), h.id[:]...))
	expectNext(t, jc, mFromTo(tDisconnect, h.id, j.id))
	jc.send(mPing(j.id))
	expectNext(t, jc, mError(j.id, 4))
	rs := f.releases()
	if len(rs) != 2 || rs[0] != (relay.Release{AllocationID: h.id, Host: true, Reason: relay.ReleaseClosed}) ||
		rs[1] != (relay.Release{AllocationID: j.id, Reason: relay.ReleaseHostGone}) {
		t.Fatalf("releases %+v", rs)
	}

	h2 := f.host(4)
	bound(t, hc, h2, 0)
	hc.send(hdr(tClose)) // the bare form
	hc.send(mPing(h2.id))
	expectNext(t, hc, mError(h2.id, 4))
	if f.s.Allocations() != 0 {
		t.Fatalf("%d allocations left", f.s.Allocations())
	}
}

// TestWebSocket: a browser joiner over WebSocket and a host over UDP in
// one session; the 101 carries no subprotocol or extension header.
func TestWebSocket(t *testing.T) {
	f := newFixture(t, nil)
	if _, err := dialWS(t, f.ws, "/other"); err == nil {
		t.Fatal("upgrade on /other succeeded")
	}
	wc, err := dialWS(t, f.ws, "/")
	if err != nil {
		t.Fatal(err)
	}
	for k := range wc.header {
		if strings.HasPrefix(strings.ToLower(k), "sec-websocket-protocol") || strings.HasPrefix(strings.ToLower(k), "sec-websocket-extensions") {
			t.Fatalf("101 carries %s", k)
		}
	}
	h := f.host(4)
	j := f.joiner(h)
	hc := dialUDP(t, f.udp)
	bound(t, hc, h, 0)
	bound(t, wc, j, 0)
	connected(t, wc, j, h)
	m := mRelay(j.id, h.id, []byte("from the browser"))
	wc.send(m)
	expectNext(t, hc, m)
	m = mRelay(h.id, j.id, bytes.Repeat([]byte{1}, 1200))
	hc.send(m)
	expectNext(t, wc, m)
	wc.send(mPing(j.id))
	expectNext(t, wc, mPing(j.id))
	if st, _ := f.s.Allocation(j.id); st.Carrier != "ws" {
		t.Fatalf("joiner carrier %q", st.Carrier)
	}

	// The joiner moves to UDP (a larger nonce), and back.
	jc := dialUDP(t, f.udp)
	bound(t, jc, j, 1)
	hc.send(m)
	expectNext(t, jc, m)
	bound(t, wc, j, 2)
	hc.send(m)
	expectNext(t, wc, m)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestQoS: the UDP port answers Unity's QoS probe (0x59 → 0x95, 13 bytes).
func TestQoS(t *testing.T) {
	f := newFixture(t, nil)
	c := dialUDP(t, f.udp)
	title := "QoS request"
	req := []byte{0x59, 0x00, byte(len(title) + 1)}
	req = append(req, title...)
	req = append(req, 3, 0x34, 0x12)          // sequence, identifier LE
	req = append(req, 1, 2, 3, 4, 5, 6, 7, 8) // timestamp LE
	c.send(req)
	expectNext(t, c, []byte{0x95, 0x00, 3, 0x34, 0x12, 1, 2, 3, 4, 5, 6, 7, 8})
	c.send(req[:len(req)-1]) // wrong length
	expectSilence(t, c)
}

// TestSourceRate: a garbage or BIND flood from one source is cut at its
// rate; another source is still served.
func TestSourceRate(t *testing.T) {
	f := newFixture(t, func(c *relay.Config) { c.SourceRate, c.SourceBurst = 1, 5 })
	flood := dialUDP(t, f.udp)
	h := f.host(4)
	for range 50 {
		flood.send(mPing(h.id)) // unknown allocation: ERROR 4 at most 5 times
	}
	n := 0
	for {
		if _, err := flood.recv(300 * time.Millisecond); err != nil {
			break
		}
		n++
	}
	if n > 5+1 {
		t.Fatalf("%d answers to a flood, want at most 6", n)
	}
	c := dialUDP(t, f.udp)
	bound(t, c, h, 0)
	if f.drops("source_rate") == 0 {
		t.Fatal("no source_rate drops")
	}
}

func TestConfigDefaults(t *testing.T) {
	c := relay.FilledConfigForTest(relay.Config{})
	if c.IdleTimeout != 10*time.Second || c.HostAloneTimeout != 60*time.Second || c.BindTimeout != 60*time.Second ||
		c.MaxDatagram != 1472 || c.MaxPeers != 100 {
		t.Fatalf("defaults %+v", c)
	}
	if _, err := relay.New(relay.Config{}); !errors.Is(err, relay.ErrConfig) {
		t.Fatalf("empty config: %v", err)
	}
	keys, _ := tokens.NewRelayKeyring(tokens.RelayKey{ID: 1, Secret: make([]byte, 32)})
	for _, bad := range []relay.Config{
		{Keys: keys, NodeID: "n", BootEpoch: 1, IdleTimeout: -1},
		{Keys: keys, NodeID: "n", BootEpoch: 1, MaxPeers: -1},
		{Keys: keys, NodeID: "n", BootEpoch: 1, MaxDatagram: 10},
		{Keys: keys, NodeID: "n", BootEpoch: 1, AllocationBurst: 100},
		{Keys: keys, NodeID: "n"},
		{Keys: keys, BootEpoch: 1},
	} {
		if _, err := relay.New(bad); !errors.Is(err, relay.ErrConfig) {
			t.Errorf("%+v: got %v, want ErrConfig", bad, err)
		}
	}
	reg := prometheus.NewRegistry()
	if _, err := relay.New(relay.Config{Keys: keys, NodeID: "n", BootEpoch: 1, Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	if _, err := relay.New(relay.Config{Keys: keys, NodeID: "n", BootEpoch: 1, Registerer: reg}); err == nil {
		t.Fatal("a second server registered its metrics on the same registry")
	}
}

// TestBandwidthCap: an allocation's RELAY bytes over its rate are dropped;
// its peer gets at most the burst.
func TestBandwidthCap(t *testing.T) {
	f := newFixture(t, func(c *relay.Config) { c.AllocationRate, c.AllocationBurst = 1500, 1500*4 })
	h := f.host(4)
	j := f.joiner(h)
	hc, jc := dialUDP(t, f.udp), dialUDP(t, f.udp)
	bound(t, hc, h, 0)
	bound(t, jc, j, 0)
	connected(t, jc, j, h)
	m := mRelay(j.id, h.id, make([]byte, 1400)) // 1438 bytes: 4 fit the burst
	for range 20 {
		jc.send(m)
	}
	n := 0
	for {
		if _, err := hc.recv(300 * time.Millisecond); err != nil {
			break
		}
		n++
	}
	if n < 1 || n > 5 {
		t.Fatalf("host got %d of 20 over a 4-message burst", n)
	}
	if f.drops("bandwidth") < 15 {
		t.Fatalf("bandwidth drops %v", f.drops("bandwidth"))
	}
}

// TestWebSocketLimits: a message over the max datagram closes the
// connection (1009); a text message closes it (1002).
func TestWebSocketLimits(t *testing.T) {
	f := newFixture(t, nil)
	for _, tc := range []struct {
		name  string
		frame []byte
		code  uint16
	}{
		{"too large", append([]byte{0x82, 0x80 | 126, 0x05, 0xDD, 0, 0, 0, 0}, make([]byte, 1501)...), 1009},
		{"text", []byte{0x81, 0x80 | 1, 0, 0, 0, 0, 'x'}, 1002},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wc, err := dialWS(t, f.ws, "/")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := wc.c.Write(tc.frame); err != nil {
				t.Fatal(err)
			}
			_ = wc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
			var h [4]byte
			if _, err := io.ReadFull(wc.br, h[:]); err != nil {
				t.Fatal(err)
			}
			if h[0] != 0x88 || binary.BigEndian.Uint16(h[2:]) != tc.code {
				t.Fatalf("got frame % x, want a close %d", h, tc.code)
			}
		})
	}
}

// TestNoAmplification: whatever a stranger sends, every answer is smaller
// than the message that caused it.
func TestNoAmplification(t *testing.T) {
	f := newFixture(t, nil)
	h := f.host(4)
	j := f.joiner(h)
	hc, jc := dialUDP(t, f.udp), dialUDP(t, f.udp)
	bound(t, hc, h, 0)
	bound(t, jc, j, 0)
	connected(t, jc, j, h)
	stranger := dialUDP(t, f.udp)
	for _, m := range [][]byte{
		mPing(h.id), mRelay(j.id, h.id, nil), mFromTo(tDisconnect, j.id, h.id), append(hdr(tClose), h.id[:]...),
		hdr(tClose), mConnect(j.id, h.blob), mBind(0, h.blob, h.key), mBind(0, h.blob, make([]byte, 64)),
		mSubscribe(h.id), mSubscribe(j.id),
	} {
		stranger.send(m)
		for {
			got, err := stranger.recv(200 * time.Millisecond)
			if err != nil {
				break
			}
			if len(got) >= len(m) {
				t.Fatalf("a %d-byte message from a stranger got a %d-byte answer", len(m), len(got))
			}
		}
	}
	// And the session is untouched.
	m := mRelay(j.id, h.id, []byte("still here"))
	jc.send(m)
	expectNext(t, hc, m)
}

// TestGarbageFlood: a flood of garbage and forged BINDs from one source is
// dropped and counted, and a session beside it goes on.
func TestGarbageFlood(t *testing.T) {
	f := newFixture(t, nil)
	h := f.host(4)
	j := f.joiner(h)
	hc, jc := dialUDP(t, f.udp), dialUDP(t, f.udp)
	bound(t, hc, h, 0)
	bound(t, jc, j, 0)
	connected(t, jc, j, h)
	flood := dialUDP(t, f.udp)
	forged := mBind(0, h.blob, make([]byte, 64))
	for i := range 3000 {
		switch i % 3 {
		case 0:
			flood.send([]byte{0xDA, 0x72, 0x00, 0x0A, byte(i)})
		case 1:
			flood.send(forged)
		default:
			flood.send(bytes.Repeat([]byte{byte(i)}, 100))
		}
	}
	for i := range 20 {
		m := mRelay(j.id, h.id, []byte{byte(i)})
		jc.send(m)
		expectNext(t, hc, m)
	}
	expectSilence(t, flood)
	if f.drops("malformed") == 0 || f.drops("bad_hmac")+f.drops("source_rate") == 0 {
		t.Fatalf("drops: malformed %v, bad_hmac %v, source_rate %v", f.drops("malformed"), f.drops("bad_hmac"), f.drops("source_rate"))
	}
}

// TestIPv6AndDualStack: the same session over an IPv6 socket, and over a
// dual-stack socket with one client on IPv4 and one on IPv6.
func TestIPv6AndDualStack(t *testing.T) {
	for _, tc := range []struct{ name, network, listen, host, joiner string }{
		{"ipv6", "udp6", "[::1]:0", "::1", "::1"},
		{"dual stack", "udp", ":0", "127.0.0.1", "::1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil)
			pc, err := net.ListenPacket(tc.network, tc.listen)
			if err != nil {
				t.Skipf("no %s: %v", tc.network, err)
			}
			done := make(chan error, 1)
			go func() { done <- f.s.ServePacket(pc) }()
			t.Cleanup(func() {
				f.s.Close()
				<-done
			})
			port := pc.LocalAddr().(*net.UDPAddr).Port
			addr := func(host string) string { return net.JoinHostPort(host, strconv.Itoa(port)) }
			h := f.host(4)
			j := f.joiner(h)
			hc, jc := dialUDP(t, addr(tc.host)), dialUDP(t, addr(tc.joiner))
			bound(t, hc, h, 0)
			bound(t, jc, j, 0)
			connected(t, jc, j, h)
			m := mRelay(j.id, h.id, []byte("over "+tc.name))
			jc.send(m)
			expectNext(t, hc, m)
			m = mRelay(h.id, j.id, []byte("and back"))
			hc.send(m)
			expectNext(t, jc, m)
		})
	}
}

// TestWebSocketConnsPerIP: one source address holds at most
// MaxWSConnsPerIP WebSocket connections (handshaking ones included), so
// one host cannot take the node's MaxWSConns; one beyond is closed at
// once, and a place comes back when a connection ends.
func TestWebSocketConnsPerIP(t *testing.T) {
	f := newFixture(t, func(c *relay.Config) { c.MaxWSConnsPerIP = 2 })
	var held []net.Conn
	for range 2 {
		wc, err := dialWS(t, f.ws, "/")
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, wc.c)
	}
	// A third, even one that never upgrades, is closed at once.
	extra, err := net.Dial("tcp", f.ws)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	_ = extra.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := extra.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("third connection: read %d, %v; want it closed (EOF)", n, err)
	}
	if got := f.drops("capacity"); got != 1 {
		t.Fatalf("capacity drops %v, want 1", got)
	}
	held[0].Close()
	waitFor(t, "a place back", func() bool { return f.gauge("switchboard_relay_ws_connections") == 1 })
	wc, err := dialWS(t, f.ws, "/")
	if err != nil {
		t.Fatalf("after a place came back: %v", err)
	}
	wc.c.Close()
	held[1].Close()

	if c := relay.FilledConfigForTest(relay.Config{}); c.MaxWSConnsPerIP != 1_000 {
		t.Fatalf("MaxWSConnsPerIP default %d, want 1,000", c.MaxWSConnsPerIP)
	}
	keys, _ := tokens.NewRelayKeyring(tokens.RelayKey{ID: 1, Secret: make([]byte, 32)})
	if _, err := relay.New(relay.Config{Keys: keys, NodeID: "n", BootEpoch: 1, MaxWSConnsPerIP: -1}); !errors.Is(err, relay.ErrConfig) {
		t.Fatalf("negative MaxWSConnsPerIP: %v, want ErrConfig", err)
	}
}
