package udp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchboardgg/switchboard/internal/sealed"
	"github.com/switchboardgg/switchboard/node"
	"github.com/switchboardgg/switchboard/protocol/roomudp"
	"github.com/switchboardgg/switchboard/tokens"
)

// take is check and spend: what a HANDSHAKE the node-wide limit also
// takes costs.
func (l *sourceLimiter) take(ap netip.AddrPort, now int64) bool {
	e, ok := l.check(ap, now)
	if ok {
		e.spend()
	}
	return ok
}

// takes counts how many of n HANDSHAKEs from ap at now are allowed.
func (l *sourceLimiter) takes(ap netip.AddrPort, now int64, n int) int {
	got := 0
	for range n {
		if l.take(ap, now) {
			got++
		}
	}
	return got
}

// TestSourceBucket: a source gets its burst at once, then rate a second;
// a bucket never holds more than its burst; check alone charges nothing.
func TestSourceBucket(t *testing.T) {
	l := newSourceLimiter(20, 40, 64)
	a := netip.MustParseAddrPort("198.51.100.7:5000")
	const now = 1
	if got := l.takes(a, now, 100); got != 40 {
		t.Fatalf("at once: %d taken, want the burst, 40", got)
	}
	if got := l.takes(a, now+int64(50*time.Millisecond)-1, 5); got != 0 {
		t.Errorf("49.99 ms later: %d taken, want 0", got)
	}
	if got := l.takes(a, now+int64(50*time.Millisecond), 5); got != 1 {
		t.Errorf("50 ms later: %d taken, want 1 (20 a second)", got)
	}
	if got := l.takes(a, now+int64(50*time.Millisecond)+int64(time.Second), 100); got != 20 {
		t.Errorf("a second later: %d taken, want 20", got)
	}
	if got := l.takes(a, now+int64(time.Hour), 100); got != 40 {
		t.Errorf("an hour later: %d taken, want the burst, 40", got)
	}
	// Tiny steps add up exactly: 1,000 looks 50 µs apart are 50 ms.
	step := int64(50 * time.Microsecond)
	t0 := 2 * int64(time.Hour)
	l.takes(a, t0, 40)
	got := 0
	for i := range int64(1000) {
		if l.take(a, t0+(i+1)*step) {
			got++
		}
	}
	if got != 1 {
		t.Errorf("1,000 tries 50 µs apart: %d taken, want 1", got)
	}
	b := netip.MustParseAddrPort("198.51.100.8:5000")
	for range 100 {
		if _, ok := l.check(b, now); !ok {
			t.Fatal("check alone used up the bucket")
		}
	}
}

// TestSourceKey: IPv4 addresses one by one, IPv4-mapped ones as IPv4,
// IPv6 by /64, ports and zones ignored.
func TestSourceKey(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"198.51.100.7:1", "198.51.100.7:2", true},
		{"198.51.100.7:1", "198.51.100.8:1", false},
		{"198.51.100.7:1", "[::ffff:198.51.100.7]:9", true},
		{"[2001:db8:1:2::1]:1", "[2001:db8:1:2:ffff:ffff:ffff:ffff]:2", true},
		{"[2001:db8:1:2::1]:1", "[2001:db8:1:3::1]:1", false},
		{"[fe80::1%eth0]:1", "[fe80::2%eth1]:1", true},
		{"0.0.0.1:1", "[::1]:1", false},
		{"[::ffff:0:0]:1", "[::]:1", false},
	} {
		a, b := netip.MustParseAddrPort(tc.a), netip.MustParseAddrPort(tc.b)
		if got := sourceKey(a) == sourceKey(b); got != tc.same {
			t.Errorf("%s and %s one source: got %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
	// And through the limiter: a /64 shares one budget.
	l := newSourceLimiter(1, 3, 64)
	got := 0
	for i := range 10 {
		var ip [16]byte
		copy(ip[:], netip.MustParseAddr("2001:db8:1:2::").AsSlice())
		binary.BigEndian.PutUint64(ip[8:], uint64(i)*0x9e3779b97f4a7c15)
		if l.take(netip.AddrPortFrom(netip.AddrFrom16(ip), uint16(1000+i)), 1) {
			got++
		}
	}
	if got != 3 {
		t.Errorf("10 addresses of one /64: %d taken, want the burst, 3", got)
	}
}

// source returns the i-th of a flood of spoofed IPv4 sources.
func source(i int) netip.AddrPort {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(i)*2654435761+0x0a000000)
	return netip.AddrPortFrom(netip.AddrFrom4(b), 4000)
}

// TestSourceEviction: the table is fixed; a flood of spoofed sources, far
// more than it holds and each sending once, evicts one another and never
// the source that spends its budget, which stays limited; when every
// entry of a set spends its budget, the fullest goes.
func TestSourceEviction(t *testing.T) {
	l := newSourceLimiter(20, 40, 16384)
	if got, want := len(l.sets)*sourceWays, 16384; got != want {
		t.Fatalf("table of %d entries, want %d", got, want)
	}
	flooder := netip.MustParseAddrPort("203.0.113.9:7000")
	now := int64(1)
	taken := l.takes(flooder, now, 1000)
	const tick = int64(time.Millisecond)
	for ms := range 2000 { // 2 s of 1,000 spoofed sources a ms, and the flooder every 100 ms
		now += tick
		for i := range 1000 {
			if !l.take(source(ms*1000+i), now) {
				t.Fatalf("a new spoofed source was refused")
			}
		}
		if ms%100 == 99 { // seldom enough that LRU would have evicted it
			taken += l.takes(flooder, now, 10)
		}
	}
	// 40 at once, then 20 a second for 2 s; an eviction would have
	// given it 40 more.
	if taken != 80 {
		t.Errorf("the flooder got %d HANDSHAKEs through among 2 million spoofed sources, want 80", taken)
	}
	if len(l.sets)*sourceWays != 16384 {
		t.Errorf("table grew to %d entries", len(l.sets)*sourceWays)
	}

	// One set: 8 entries. Seven sources drain their buckets to 0, 1, …, 6
	// tokens and the eighth keeps 10: a newcomer evicts the eighth, and
	// the next newcomer the first (it holds 39, the fullest): one-time
	// sources evict one another.
	l = newSourceLimiter(1, 40, 8)
	if len(l.sets) != 1 {
		t.Fatalf("%d sets, want 1", len(l.sets))
	}
	for i := range 7 {
		l.takes(source(i), 1, 40-i)
	}
	l.takes(source(7), 1, 30)
	l.take(source(100), 1)
	if !l.has(source(0)) || l.has(source(7)) {
		t.Errorf("a newcomer evicted another source than the fullest")
	}
	l.take(source(101), 1)
	if l.has(source(100)) || !l.has(source(101)) || !l.has(source(6)) {
		t.Errorf("the second newcomer evicted another source than the fullest")
	}
	if l.take(source(0), 1) {
		t.Errorf("the drained source was forgotten: it got a token")
	}
}

// has reports whether ap has an entry.
func (l *sourceLimiter) has(ap netip.AddrPort) bool {
	k := sourceKey(ap)
	for _, set := range l.sets {
		for _, e := range set {
			if e.last != 0 && e.key == k {
				return true
			}
		}
	}
	return false
}

// TestSourceLimitAllocatesNothing: known and new sources, evictions
// included, allocate nothing.
func TestSourceLimitAllocatesNothing(t *testing.T) {
	l := newSourceLimiter(20, 40, 64)
	a := netip.MustParseAddrPort("[2001:db8::1]:9")
	i := 0
	if n := testing.AllocsPerRun(1000, func() {
		i++
		l.take(a, int64(i))
		l.take(source(i), int64(i))
	}); n != 0 {
		t.Errorf("%v allocations per HANDSHAKE", n)
	}
}

// TestSourceDefaults: the documented defaults.
func TestSourceDefaults(t *testing.T) {
	c, err := Config{Node: nil}.withDefaults()
	if err == nil {
		t.Fatal("no error without Node")
	}
	if c.SourceHandshakeRate != 20 || c.SourceHandshakeBurst != 40 || c.MaxHandshakeSources != 16384 {
		t.Errorf("got %d/s, burst %d, %d sources; want 20/s, burst 40, 16384 sources",
			c.SourceHandshakeRate, c.SourceHandshakeBurst, c.MaxHandshakeSources)
	}
}

// TestSourceLimitBounded: a per-source rate or burst so large that the
// buckets' nano-token arithmetic would overflow is a configuration error,
// not a limiter that refuses every known source.
func TestSourceLimitBounded(t *testing.T) {
	signer, _ := tokens.NewSigner(bytes.Repeat([]byte{3}, 32))
	ok := Config{Node: &node.Server{}, Signer: signer}
	for _, c := range []Config{
		{SourceHandshakeBurst: 10_000_000_000},
		{SourceHandshakeRate: maxSourceLimit + 1},
	} {
		c.Node, c.Signer = ok.Node, ok.Signer
		if _, err := c.withDefaults(); !errors.Is(err, ErrConfig) {
			t.Errorf("rate %d, burst %d: got %v, want ErrConfig", c.SourceHandshakeRate, c.SourceHandshakeBurst, err)
		}
	}
	c := ok
	c.SourceHandshakeRate, c.SourceHandshakeBurst = maxSourceLimit, maxSourceLimit
	if _, err := c.withDefaults(); err != nil {
		t.Errorf("the largest allowed: %v", err)
	}
	// At the largest, a source drained to nothing refills to its burst
	// and is let through again, with no overflow.
	l := newSourceLimiter(maxSourceLimit, maxSourceLimit, 8)
	a := netip.MustParseAddrPort("192.0.2.1:5")
	if got := l.takes(a, 1, maxSourceLimit+1); got != maxSourceLimit {
		t.Fatalf("took %d at once, want the burst %d", got, maxSourceLimit)
	}
	if !l.take(a, 1+int64(time.Hour)) {
		t.Error("refused after an hour")
	}
}

// BenchmarkDropHandshakeSourceRate is the cost of a HANDSHAKE over its
// source's rate: parsed, the attempt looked up, the source's bucket
// checked; no key derivation (BenchmarkDropHandshake's cost).
func BenchmarkDropHandshakeSourceRate(b *testing.B) {
	signer, _ := tokens.NewSigner(bytes.Repeat([]byte{3}, 32))
	s := &Server{m: newMetrics(), sessions: map[uint32]*session{}, pending: map[hsKey]*session{},
		secret: signer.Derive(roomudp.SecretLabel), cfg: Config{MaxPending: 8, MaxSessions: 8},
		srcLim: newSourceLimiter(1, 1, DefaultMaxHandshakeSources)}
	d := make([]byte, roomudp.HandshakeSize)
	d[0] = roomudp.KindHandshake
	d[roomudp.HandshakeHeaderSize] = sealed.Version
	r := &reader{s: s, plain: make([]byte, roomudp.MaxDatagram)}
	addr := netip.MustParseAddrPort("127.0.0.1:9")
	r.handle(d, addr) // its one token
	b.ReportAllocs()
	for b.Loop() {
		r.handle(d, addr)
	}
	if got := testutil.ToFloat64(s.m.drop[dropSourceRate]); got < float64(b.N)-2 { // it refills 1 a second
		b.Fatalf("%v dropped source_rate of %d", got, b.N)
	}
}
