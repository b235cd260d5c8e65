package netwire

import (
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// seqpacket returns two connected files that keep packet boundaries, as a
// TUN device does, and need no privilege: the wire's two devices in the
// tests that do not need a kernel route.
func seqpacket(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, b := os.NewFile(uintptr(fds[0]), "a"), os.NewFile(uintptr(fds[1]), "b")
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// serve runs a wire between the far ends of two socket pairs and returns
// the near ends: what is written to a comes out of b, and back.
func serve(t *testing.T, cfg Config) (w *Wire, a, b *os.File) {
	t.Helper()
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a, wa := seqpacket(t)
	b, wb := seqpacket(t)
	served := make(chan error, 1)
	go func() { served <- w.Serve(wa, wb) }()
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := <-served; !errors.Is(err, ErrClosed) {
			t.Errorf("Serve returned %v, want ErrClosed", err)
		}
	})
	return w, a, b
}

// waitStats waits until the wire's counters satisfy ok: a packet can
// arrive before the counter of its write is updated.
func waitStats(t *testing.T, w *Wire, want string, ok func(Stats) bool) Stats {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := w.Stats()
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v, want %s", st, want)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestConfigDefaults(t *testing.T) {
	c, err := Config{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.Limit != DefaultLimit || c.MaxPacket != DefaultMaxPacket || c.AB != (Faults{}) || c.BA != (Faults{}) {
		t.Errorf("zero Config became %+v, want Limit %d, MaxPacket %d and nothing else", c, DefaultLimit, DefaultMaxPacket)
	}
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"negative delay", Config{AB: Faults{Delay: -1}}},
		{"delay too long", Config{BA: Faults{Delay: MaxDelay + 1}}},
		{"negative jitter", Config{AB: Faults{Jitter: -1}}},
		{"loss above 1", Config{BA: Faults{Loss: 1.5}}},
		{"negative loss", Config{AB: Faults{Loss: -0.1}}},
		{"limit too big", Config{Limit: MaxLimit + 1}},
		{"negative limit", Config{Limit: -1}},
		{"packet too big", Config{MaxPacket: MaxMaxPacket + 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.cfg); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("New(%+v) = %v, want ErrInvalidConfig", tc.cfg, err)
			}
		})
	}
}

// TestSocketPairDelay sends packets both ways through a wire with a delay
// and checks each arrives whole, in order, no earlier than the delay.
func TestSocketPairDelay(t *testing.T) {
	const delay = 40 * time.Millisecond
	w, a, b := serve(t, Both(Faults{Delay: delay}))
	buf := make([]byte, 64)
	for i, dir := range []struct{ from, to *os.File }{{a, b}, {b, a}, {a, b}} {
		msg := []byte{byte(i), 'x', 'y'}
		start := time.Now()
		if _, err := dir.from.Write(msg); err != nil {
			t.Fatal(err)
		}
		dir.to.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := dir.to.Read(buf)
		if err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
		if got := time.Since(start); got < delay {
			t.Errorf("packet %d arrived after %v, want at least the delay %v", i, got, delay)
		}
		if string(buf[:n]) != string(msg) {
			t.Errorf("packet %d: got %q, want %q", i, buf[:n], msg)
		}
	}
	waitStats(t, w, "2 received and forwarded a→b, 1 b→a", func(st Stats) bool {
		return st.AB.Forwarded == 2 && st.BA.Forwarded == 1 && st.AB.Received == 2 && st.BA.Received == 1
	})
}

// TestOversizedDropped: a packet longer than MaxPacket is dropped and
// counted, the next one goes through.
func TestOversizedDropped(t *testing.T) {
	w, a, b := serve(t, Config{MaxPacket: 100})
	if _, err := a.Write(make([]byte, 101)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Write(make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 200)
	b.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := b.Read(buf)
	if err != nil || n != 100 {
		t.Fatalf("read %d, %v; want the 100-byte packet", n, err)
	}
	waitStats(t, w, "1 oversized and 1 forwarded", func(st Stats) bool {
		return st.AB.Oversized == 1 && st.AB.Forwarded == 1 && st.AB.Received == 2
	})
}

func TestServeAfterClose(t *testing.T) {
	w, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	a, _ := seqpacket(t)
	b, _ := seqpacket(t)
	if err := w.Serve(a, b); !errors.Is(err, ErrClosed) {
		t.Errorf("Serve after Close = %v, want ErrClosed", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestSteadyStateAllocs: once its buffers exist, a direction reads,
// queues and releases a packet without allocating.
func TestSteadyStateAllocs(t *testing.T) {
	cfg, err := Config{Limit: 64}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	d := newDirection(cfg, Faults{Jitter: time.Millisecond, Loss: 0.1}, 1, 1)
	pkt := make([]byte, 300)
	now := time.Now()
	step := func() {
		copy(d.buffer(), pkt)
		d.accept(len(pkt), now)
		now = now.Add(100 * time.Microsecond)
		if err := d.release(io.Discard, now); err != nil {
			t.Fatal(err)
		}
	}
	for range 1000 {
		step()
	}
	if allocs := testing.AllocsPerRun(1000, step); allocs != 0 {
		t.Errorf("%v allocations per packet, want 0", allocs)
	}
	if d.buffers > cfg.Limit+1 {
		t.Errorf("%d buffers, want at most Limit+1 = %d", d.buffers, cfg.Limit+1)
	}
}
