package impair_test

import (
	"encoding/binary"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboardgg/switchboard/internal/impair"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = slog.New(slog.DiscardHandler)

// echo is a UDP server on 127.0.0.1:0 that answers every datagram with
// the same bytes and remembers the source addresses it saw.
type echo struct {
	conn *net.UDPConn
	mu   sync.Mutex
	from map[netip.AddrPort]int
	wg   sync.WaitGroup
}

func newEcho(t testing.TB) *echo {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	e := &echo{conn: conn, from: map[netip.AddrPort]int{}}
	e.wg.Go(func() {
		buf := make([]byte, 65536)
		for {
			n, from, err := conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			e.mu.Lock()
			e.from[from]++
			e.mu.Unlock()
			conn.WriteToUDPAddrPort(buf[:n], from)
		}
	})
	t.Cleanup(func() { conn.Close(); e.wg.Wait() })
	return e
}

func (e *echo) sources() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.from)
}

// start serves a proxy in front of target and returns it with a client
// socket connected to it.
func start(t testing.TB, cfg impair.Config) (*impair.Proxy, *net.UDPConn) {
	t.Helper()
	cfg.Logger = quiet
	p, err := impair.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(ln) }()
	cl, err := net.DialUDP("udp", nil, ln.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cl.Close()
		p.Close()
		if err := <-served; !errors.Is(err, impair.ErrClosed) {
			t.Errorf("Serve: got %v, want ErrClosed", err)
		}
	})
	return p, cl
}

// roundTrips sends n numbered datagrams, pacing them so loopback buffers
// never overflow, and collects the answers until quiet for wait.
func roundTrips(t testing.TB, cl *net.UDPConn, n int, wait time.Duration) []uint32 {
	t.Helper()
	var got []uint32
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 64)
		for {
			cl.SetReadDeadline(time.Now().Add(wait))
			m, err := cl.Read(buf)
			if err != nil {
				return
			}
			if m == 4 {
				got = append(got, binary.BigEndian.Uint32(buf))
			}
		}
	}()
	var b [4]byte
	for i := range n {
		binary.BigEndian.PutUint32(b[:], uint32(i))
		if _, err := cl.Write(b[:]); err != nil {
			t.Fatal(err)
		}
		if i%32 == 31 {
			time.Sleep(time.Millisecond) // pacing, not a timing assertion
		}
	}
	<-done
	return got
}

func TestDefaults(t *testing.T) {
	p, err := impair.New(impair.Config{Target: "127.0.0.1:1", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Seed() == 0 {
		t.Error("a zero Seed was not replaced")
	}
	cfg := impair.ConfigOf(p)
	if cfg.MaxDatagram != impair.DefaultMaxDatagram || cfg.QueueDepth != impair.DefaultQueueDepth ||
		cfg.MaxClients != impair.DefaultMaxClients || cfg.Up.ReorderDelay != impair.DefaultReorderDelay ||
		cfg.Down.ReorderDelay != impair.DefaultReorderDelay {
		t.Errorf("defaults not filled in: %+v", cfg)
	}
	for _, tc := range []struct {
		name string
		cfg  impair.Config
	}{
		{"no target", impair.Config{}},
		{"loss above 1", impair.Config{Target: "127.0.0.1:1", Up: impair.Faults{Loss: 1.5}}},
		{"negative delay", impair.Config{Target: "127.0.0.1:1", Down: impair.Faults{Delay: -1}}},
		{"huge datagrams", impair.Config{Target: "127.0.0.1:1", MaxDatagram: impair.MaxMaxDatagram + 1}},
	} {
		if _, err := impair.New(tc.cfg); !errors.Is(err, impair.ErrInvalidConfig) {
			t.Errorf("%s: got %v, want ErrInvalidConfig", tc.name, err)
		}
	}
}

func TestForwardsInOrder(t *testing.T) {
	e := newEcho(t)
	p, cl := start(t, impair.Config{Target: e.conn.LocalAddr().String(),
		Up: impair.Faults{Delay: 2 * time.Millisecond}})
	got := roundTrips(t, cl, 300, 500*time.Millisecond)
	if len(got) != 300 {
		t.Fatalf("got %d answers, want 300", len(got))
	}
	for i, v := range got {
		if v != uint32(i) {
			t.Fatalf("answer %d is %d: order not kept", i, v)
		}
	}
	s := p.Stats()
	if s.Up.Forwarded != 300 || s.Down.Forwarded != 300 || s.Clients != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestLossIsSeeded(t *testing.T) {
	e := newEcho(t)
	var lost []uint64
	var answers [][]uint32
	for range 2 {
		p, cl := start(t, impair.Config{Target: e.conn.LocalAddr().String(), Seed: 42,
			Up: impair.Faults{Loss: 0.3}})
		got := roundTrips(t, cl, 400, 300*time.Millisecond)
		s := p.Stats()
		if s.Up.Received != 400 {
			t.Skipf("the OS dropped datagrams (%d of 400 reached the proxy): cannot compare runs", s.Up.Received)
		}
		if int(s.Up.Forwarded) != len(got) || s.Up.Lost+s.Up.Forwarded != 400 {
			t.Fatalf("stats %+v, %d answers", s.Up, len(got))
		}
		lost = append(lost, s.Up.Lost)
		answers = append(answers, got)
	}
	if lost[0] == 0 || lost[0] == 400 {
		t.Fatalf("loss 0.3 lost %d of 400", lost[0])
	}
	if lost[0] != lost[1] || len(answers[0]) != len(answers[1]) {
		t.Fatalf("same seed, different losses: %v", lost)
	}
	for i := range answers[0] {
		if answers[0][i] != answers[1][i] {
			t.Fatalf("same seed, different datagrams lost: answer %d is %d then %d", i, answers[0][i], answers[1][i])
		}
	}
}

func TestDuplicateAndReorder(t *testing.T) {
	e := newEcho(t)
	p, cl := start(t, impair.Config{Target: e.conn.LocalAddr().String(), Seed: 7,
		Up:   impair.Faults{Duplicate: 1},
		Down: impair.Faults{Reorder: 0.2, ReorderDelay: 300 * time.Millisecond}})
	got := roundTrips(t, cl, 200, time.Second)
	count := map[uint32]int{}
	inversions := 0
	for i, v := range got {
		count[v]++
		if i > 0 && v < got[i-1] {
			inversions++
		}
	}
	s := p.Stats()
	// Loopback UDP drops when a socket buffer fills (a loaded machine): the
	// counts below hold only when the OS lost nothing on any leg.
	if s.Up.Received != 200 || s.Down.Received != 400 || uint64(len(got)) != s.Down.Forwarded {
		t.Skipf("the OS dropped datagrams (up %d of 200 received, down %d of 400 received, %d of %d forwarded answers read): %+v",
			s.Up.Received, s.Down.Received, len(got), s.Down.Forwarded, s)
	}
	for i := range uint32(200) {
		if count[i] != 2 {
			t.Fatalf("datagram %d arrived %d times, want 2 (stats %+v)", i, count[i], s)
		}
	}
	if s.Up.Duplicated != 200 || s.Down.Reordered == 0 {
		t.Fatalf("stats %+v", s)
	}
	if inversions == 0 {
		t.Fatalf("%d datagrams held back 300 ms and none overtaken", s.Down.Reordered)
	}
}

func TestBlackoutAndRebind(t *testing.T) {
	e := newEcho(t)
	p, cl := start(t, impair.Config{Target: e.conn.LocalAddr().String()})
	if got := roundTrips(t, cl, 10, 200*time.Millisecond); len(got) != 10 {
		t.Fatalf("before: %d answers", len(got))
	}
	p.SetBlackout(impair.Up, true)
	if got := roundTrips(t, cl, 10, 200*time.Millisecond); len(got) != 0 {
		t.Fatalf("during a blackout: %d answers", len(got))
	}
	if s := p.Stats(); s.Up.Blackholed != 10 {
		t.Fatalf("blackholed %d, want 10", s.Up.Blackholed)
	}
	p.SetBlackout(impair.Up, false)
	if err := p.Rebind(); err != nil {
		t.Fatal(err)
	}
	if got := roundTrips(t, cl, 10, 200*time.Millisecond); len(got) != 10 {
		t.Fatalf("after the rebind: %d answers", len(got))
	}
	if n := e.sources(); n != 2 {
		t.Fatalf("the target saw %d source addresses, want 2 (one before, one after the rebind)", n)
	}
	if s := p.Stats(); s.Rebinds != 1 || s.Clients != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestLimits(t *testing.T) {
	e := newEcho(t)
	p, cl := start(t, impair.Config{Target: e.conn.LocalAddr().String(), MaxDatagram: 8, QueueDepth: 2,
		Up: impair.Faults{Delay: 200 * time.Millisecond}})
	if _, err := cl.Write(make([]byte, 9)); err != nil {
		t.Fatal(err)
	}
	got := roundTrips(t, cl, 5, 500*time.Millisecond)
	s := p.Stats()
	if s.Up.Oversized != 1 {
		t.Fatalf("oversized %d, want 1", s.Up.Oversized)
	}
	if len(got) != 2 || s.Up.Overflowed != 3 {
		t.Fatalf("%d answers and %d overflowed, want 2 and 3 (QueueDepth 2)", len(got), s.Up.Overflowed)
	}
}

// Steady state, with and without a delay queue, forwards without
// allocating.
func TestZeroAllocs(t *testing.T) {
	for _, delay := range []time.Duration{0, time.Millisecond} {
		e := newEcho(t)
		_, cl := start(t, impair.Config{Target: e.conn.LocalAddr().String(),
			Up: impair.Faults{Delay: delay}, Down: impair.Faults{Delay: delay}})
		buf := make([]byte, 64)
		msg := []byte("ping")
		rt := func() {
			if _, err := cl.Write(msg); err != nil {
				t.Fatal(err)
			}
			cl.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := cl.Read(buf); err != nil {
				t.Fatal(err)
			}
		}
		rt()
		if a := testing.AllocsPerRun(100, rt); a != 0 {
			t.Errorf("delay %v: %v allocations per round trip, want 0", delay, a)
		}
	}
}

func BenchmarkRoundTrip(b *testing.B) {
	e := newEcho(b)
	_, cl := start(b, impair.Config{Target: e.conn.LocalAddr().String()})
	msg := make([]byte, 1200)
	buf := make([]byte, 2048)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cl.Write(msg); err != nil {
			b.Fatal(err)
		}
		cl.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := cl.Read(buf); err != nil {
			b.Fatal(err)
		}
	}
}

func TestJitterDeliversEachOnce(t *testing.T) {
	e := newEcho(t)
	p, cl := start(t, impair.Config{Target: e.conn.LocalAddr().String(), Seed: 5,
		Up: impair.Faults{Delay: time.Millisecond, Jitter: 5 * time.Millisecond}})
	got := roundTrips(t, cl, 200, 500*time.Millisecond)
	if s := p.Stats(); s.Up.Received != 200 {
		t.Skipf("the OS dropped datagrams: %+v", s.Up)
	}
	seen := map[uint32]int{}
	for _, v := range got {
		seen[v]++
	}
	for i := range uint32(200) {
		if seen[i] != 1 {
			t.Fatalf("datagram %d arrived %d times, want 1", i, seen[i])
		}
	}
}
