package kcploop_test

import (
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/internal/kcploop"
)

const kcpAllocsPerMessage = 4

// Two conversations wired directly on one goroutine, with reused
// buffers and no Run: what is left is what a message costs in kcploop
// and kcp-go themselves, from Send through the datagram and its ack to
// Recv.
func TestSteadyStateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	l, err := kcploop.New(kcploop.Config{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var a, b *kcploop.Conv
	var toB, toA [][]byte
	pool := make([][]byte, 0, 64)
	for range 64 {
		pool = append(pool, make([]byte, 0, kcploop.DefaultMTU))
	}
	take := func(p []byte) []byte {
		buf := pool[len(pool)-1]
		pool = pool[:len(pool)-1]
		return append(buf[:0], p...)
	}
	a, _ = l.Open(1, kcploop.ConvConfig{NoDelay: true}, func(_ *kcploop.Conv, p []byte) { toB = append(toB, take(p)) })
	b, _ = l.Open(1, kcploop.ConvConfig{NoDelay: true}, func(_ *kcploop.Conv, p []byte) { toA = append(toA, take(p)) })
	msg := make([]byte, 200)
	buf := make([]byte, 1<<16)
	// One message from a, forced out by b's acks of the previous one.
	step := func() {
		if err := a.Send(msg); err != nil {
			t.Fatal(err)
		}
		for {
			// KCP flushes once per Interval; poll as the wheel would.
			kcploop.Flush(a)
			for _, d := range toB {
				b.Input(d)
				pool = append(pool, d)
			}
			toB = toB[:0]
			kcploop.Flush(b)
			for _, d := range toA {
				a.Input(d)
				pool = append(pool, d)
			}
			toA = toA[:0]
			if n, err := b.Recv(buf); err == nil {
				if n != len(msg) {
					t.Fatalf("recv: %d bytes", n)
				}
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	for range 20 {
		step()
	}
	allocs := testing.AllocsPerRun(50, step)
	t.Logf("%.2f allocations per message (send, datagram, ack, recv)", allocs)
	// All of them are kcp-go's own (a memory profile of this test shows
	// them): its buffer pool boxes a slice on each Put (sender on the
	// ack, receiver on Recv) and its receive heap boxes a segment on Push
	// and Pop. kcploop adds none; this catches any it would add.
	if allocs > kcpAllocsPerMessage {
		t.Fatalf("%.2f allocations per message, want at most kcp-go's %d", allocs, kcpAllocsPerMessage)
	}
}

// SendFlush and the wheel's flush of a woken conversation add no
// allocation of kcploop's to a message's: a message sent with SendFlush,
// delivered, acknowledged by a wheel step and received costs what kcp-go
// allocates (see TestSteadyStateAllocs).
func TestSendFlushAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	l, err := kcploop.New(kcploop.Config{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var toB, toA [][]byte
	pool := make([][]byte, 0, 64)
	for range 64 {
		pool = append(pool, make([]byte, 0, kcploop.DefaultMTU))
	}
	take := func(p []byte) []byte {
		buf := pool[len(pool)-1]
		pool = pool[:len(pool)-1]
		return append(buf[:0], p...)
	}
	a, _ := l.Open(1, kcploop.ConvConfig{NoDelay: true}, func(_ *kcploop.Conv, p []byte) { toB = append(toB, take(p)) })
	b, _ := l.Open(1, kcploop.ConvConfig{NoDelay: true}, func(_ *kcploop.Conv, p []byte) { toA = append(toA, take(p)) })
	msg := make([]byte, 200)
	buf := make([]byte, 1<<16)
	step := func() {
		if err := a.SendFlush(msg); err != nil {
			t.Fatal(err)
		}
		for _, d := range toB {
			b.Input(d)
			pool = append(pool, d)
		}
		toB = toB[:0]
		if n, err := b.Recv(buf); err != nil || n != len(msg) {
			t.Fatalf("recv: %d, %v", n, err)
		}
		kcploop.Tick(l) // b is dirty: the step flushes its acknowledgement
		for _, d := range toA {
			a.Input(d)
			pool = append(pool, d)
		}
		toA = toA[:0]
		kcploop.Tick(l)
	}
	for range 20 {
		step()
	}
	allocs := testing.AllocsPerRun(50, step)
	t.Logf("%.2f allocations per message (SendFlush, datagram, wheel ack, recv)", allocs)
	if allocs > kcpAllocsPerMessage {
		t.Fatalf("%.2f allocations per message, want at most kcp-go's %d", allocs, kcpAllocsPerMessage)
	}
	if a.Pending() != 0 {
		t.Fatalf("%d segments unacknowledged", a.Pending())
	}
}
