package kcploop_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboardgg/switchboard/internal/kcploop"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction(kcploop.KCPSchedulerGoroutine))
}

var quiet = slog.New(slog.DiscardHandler)

func runLoop(t testing.TB) *kcploop.Loop {
	t.Helper()
	l, err := kcploop.New(kcploop.Config{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- l.Run(context.Background()) }()
	t.Cleanup(func() {
		l.Close()
		if err := <-ran; !errors.Is(err, kcploop.ErrClosed) {
			t.Errorf("Run: got %v, want ErrClosed", err)
		}
	})
	return l
}

func TestDefaults(t *testing.T) {
	l, err := kcploop.New(kcploop.Config{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	c, err := l.Open(1, kcploop.ConvConfig{}, func(*kcploop.Conv, []byte) {})
	if err != nil {
		t.Fatal(err)
	}
	want := kcploop.ConvConfig{
		MTU: kcploop.DefaultMTU, SendWindow: kcploop.DefaultSendWindow, RecvWindow: kcploop.DefaultRecvWindow,
		SendQueue: kcploop.DefaultSendQueue, MaxMessage: kcploop.DefaultMaxMessage, Interval: kcploop.DefaultInterval,
	}
	if got := c.Config(); got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	c2, err := l.Open(2, kcploop.ConvConfig{NoDelay: true, RecvWindow: 16}, func(*kcploop.Conv, []byte) {})
	if err != nil {
		t.Fatal(err)
	}
	if got := c2.Config(); got.Interval != kcploop.DefaultNoDelayInterval || got.MaxMessage != 16*(kcploop.DefaultMTU-kcploop.Overhead) {
		t.Fatalf("no-delay, small window: got %+v", got)
	}
	for _, tc := range []struct {
		name string
		cfg  kcploop.ConvConfig
	}{
		{"tiny MTU", kcploop.ConvConfig{MTU: 100}},
		{"huge window", kcploop.ConvConfig{RecvWindow: kcploop.MaxWindow + 1}},
		{"message beyond the window", kcploop.ConvConfig{RecvWindow: 4, MaxMessage: 10000}},
		{"interval below kcp's", kcploop.ConvConfig{Interval: time.Millisecond}},
	} {
		if _, err := l.Open(3, tc.cfg, func(*kcploop.Conv, []byte) {}); !errors.Is(err, kcploop.ErrInvalidConfig) {
			t.Errorf("%s: got %v, want ErrInvalidConfig", tc.name, err)
		}
	}
	if _, err := kcploop.New(kcploop.Config{Tick: time.Hour}); !errors.Is(err, kcploop.ErrInvalidConfig) {
		t.Errorf("Tick of an hour: got %v, want ErrInvalidConfig", err)
	}
	if err := c.Send(nil); !errors.Is(err, kcploop.ErrTooLarge) {
		t.Errorf("empty message: got %v", err)
	}
	if err := c.Send(make([]byte, kcploop.DefaultMaxMessage+1)); !errors.Is(err, kcploop.ErrTooLarge) {
		t.Errorf("large message: got %v", err)
	}
	if err := c.Input([]byte("short")); !errors.Is(err, kcploop.ErrMalformed) {
		t.Errorf("short input: got %v", err)
	}
	if _, err := c.Recv(make([]byte, 10)); !errors.Is(err, kcploop.ErrNoMessage) {
		t.Errorf("recv on nothing: got %v", err)
	}
	if l.Conversations() != 2 {
		t.Fatalf("%d conversations, want 2", l.Conversations())
	}
	c.Close()
	c.Close()
	if err := c.Send([]byte("x")); !errors.Is(err, kcploop.ErrClosed) {
		t.Errorf("send after close: got %v", err)
	}
	l.Close()
	if err := c2.Send([]byte("x")); !errors.Is(err, kcploop.ErrClosed) {
		t.Errorf("send after the loop closed: got %v", err)
	}
	if err := l.Run(context.Background()); !errors.Is(err, kcploop.ErrClosed) {
		t.Errorf("Run after Close: got %v", err)
	}
}

// wire connects two conversations in memory, through a channel drained
// by the test, so that a test controls delivery exactly.
type wire struct{ q chan []byte }

func (w *wire) out(_ *kcploop.Conv, b []byte) {
	select {
	case w.q <- bytes.Clone(b):
	default: // a full wire loses the datagram, as UDP would
	}
}

func TestInMemoryDelivery(t *testing.T) {
	l := runLoop(t)
	ab, ba := &wire{make(chan []byte, 4096)}, &wire{make(chan []byte, 4096)}
	a, err := l.Open(7, kcploop.ConvConfig{NoDelay: true}, ab.out)
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.Open(7, kcploop.ConvConfig{NoDelay: true}, ba.out)
	if err != nil {
		t.Fatal(err)
	}
	msgs := [][]byte{[]byte("one"), bytes.Repeat([]byte("two"), 2000), []byte("three")}
	for _, m := range msgs {
		if err := a.Send(m); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 1<<16)
	var got [][]byte
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for len(got) < len(msgs) {
		select {
		case d := <-ab.q:
			if err := b.Input(d); err != nil {
				t.Fatal(err)
			}
		case d := <-ba.q:
			if err := a.Input(d); err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatalf("got %d of %d messages", len(got), len(msgs))
		}
		for {
			n, err := b.Recv(buf)
			if errors.Is(err, kcploop.ErrNoMessage) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, bytes.Clone(buf[:n]))
		}
	}
	for i := range msgs {
		if !bytes.Equal(got[i], msgs[i]) {
			t.Fatalf("message %d: got %d bytes, want %d", i, len(got[i]), len(msgs[i]))
		}
	}
	if _, err := b.Recv(make([]byte, 2)); !errors.Is(err, kcploop.ErrNoMessage) {
		t.Fatalf("after all: %v", err)
	}
}

// BenchmarkWheelIdle is one wheel step over 1000 idle conversations due
// on it (KCP Update and Check, and putting each back).
func BenchmarkWheelIdle(b *testing.B) {
	l, err := kcploop.New(kcploop.Config{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	for i := range 1000 {
		if _, err := l.Open(uint32(i), kcploop.ConvConfig{}, func(*kcploop.Conv, []byte) {}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		kcploop.Tick(l)
	}
}

func TestWheelStepAllocs(t *testing.T) {
	l, err := kcploop.New(kcploop.Config{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 100 {
		if _, err := l.Open(uint32(i), kcploop.ConvConfig{NoDelay: true}, func(*kcploop.Conv, []byte) {}); err != nil {
			t.Fatal(err)
		}
	}
	for range wheelWarmup {
		kcploop.Tick(l)
	}
	if a := testing.AllocsPerRun(500, func() { kcploop.Tick(l) }); a != 0 {
		t.Fatalf("%v allocations per wheel step, want 0", a)
	}
}

const wheelWarmup = 300
