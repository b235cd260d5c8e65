package kcploop_test

import (
	"errors"
	"testing"

	"github.com/switchboardgg/switchboard/internal/kcploop"
)

// A pair of conversations wired by hand, with no Run: what each sends is
// collected until the test hands it over.
type pair struct {
	l        *kcploop.Loop
	a, b     *kcploop.Conv
	toB, toA [][]byte
	recv     []byte
}

func newPair(t *testing.T) *pair {
	t.Helper()
	l, err := kcploop.New(kcploop.Config{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	p := &pair{l: l, recv: make([]byte, 1<<16)}
	cp := func(dst *[][]byte) kcploop.OutputFunc {
		return func(_ *kcploop.Conv, b []byte) { *dst = append(*dst, append([]byte(nil), b...)) }
	}
	if p.a, err = l.Open(7, kcploop.ConvConfig{NoDelay: true}, cp(&p.toB)); err != nil {
		t.Fatal(err)
	}
	if p.b, err = l.Open(7, kcploop.ConvConfig{NoDelay: true}, cp(&p.toA)); err != nil {
		t.Fatal(err)
	}
	return p
}

// deliver hands b what a sent, and a what b sent.
func (p *pair) deliver(t *testing.T) {
	t.Helper()
	for _, d := range p.toB {
		if err := p.b.Input(d); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range p.toA {
		if err := p.a.Input(d); err != nil {
			t.Fatal(err)
		}
	}
	p.toB, p.toA = p.toB[:0], p.toA[:0]
}

// SendFlush puts the message on the wire before it returns; Send alone
// leaves it to the next flush. This also pins kcp-go's unexported flush
// that Flush reaches (see flush.go).
func TestFlushSendsAtOnce(t *testing.T) {
	p := newPair(t)
	kcploop.Tick(p.l) // the first Update of both: KCP's flush clock starts
	if err := p.a.Send([]byte("later")); err != nil {
		t.Fatal(err)
	}
	if len(p.toB) != 0 {
		t.Fatalf("Send put %d datagrams out at once; it should wait for a flush", len(p.toB))
	}
	if err := p.a.SendFlush([]byte("now")); err != nil {
		t.Fatal(err)
	}
	if len(p.toB) != 1 {
		t.Fatalf("SendFlush: %d datagrams out, want 1 carrying both messages", len(p.toB))
	}
	p.deliver(t)
	for _, want := range []string{"later", "now"} {
		n, err := p.b.Recv(p.recv)
		if err != nil || string(p.recv[:n]) != want {
			t.Fatalf("Recv: %q, %v; want %q", p.recv[:n], err, want)
		}
	}
	// b owes an acknowledgement: Flush sends it at once too.
	if err := p.b.Flush(); err != nil {
		t.Fatal(err)
	}
	if len(p.toA) != 1 {
		t.Fatalf("Flush after Input: %d datagrams, want the acknowledgement", len(p.toA))
	}
	p.deliver(t)
	if n := p.a.Pending(); n != 0 {
		t.Fatalf("%d segments unacknowledged after the ack", n)
	}
	p.a.Close()
	if err := p.a.Flush(); !errors.Is(err, kcploop.ErrClosed) {
		t.Fatalf("Flush after Close: %v, want ErrClosed", err)
	}
	if err := p.a.SendFlush([]byte("x")); !errors.Is(err, kcploop.ErrClosed) {
		t.Fatalf("SendFlush after Close: %v, want ErrClosed", err)
	}
}

// A conversation with nothing unacknowledged leaves the wheel; Input,
// Send and Recv bring it back, and the wheel then sends what it owes.
func TestIdleConversationsLeaveTheWheel(t *testing.T) {
	p := newPair(t)
	if n := kcploop.OnWheel(p.l); n != 2 {
		t.Fatalf("%d on the wheel after Open, want 2", n)
	}
	kcploop.Tick(p.l)
	if n := kcploop.OnWheel(p.l); n != 0 {
		t.Fatalf("%d on the wheel with nothing to send, want 0", n)
	}
	if err := p.a.Send([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if n := kcploop.OnWheel(p.l); n != 1 {
		t.Fatalf("%d on the wheel after Send, want 1", n)
	}
	kcploop.Tick(p.l) // a is dirty: the step flushes it without waiting for its interval
	if len(p.toB) != 1 {
		t.Fatalf("the wheel step after Send sent %d datagrams, want 1", len(p.toB))
	}
	if n := kcploop.OnWheel(p.l); n != 1 {
		t.Fatalf("%d on the wheel while a waits for its ack, want 1", n)
	}
	p.deliver(t) // b now owes the acknowledgement
	if n := kcploop.OnWheel(p.l); n != 2 {
		t.Fatalf("%d on the wheel after Input, want 2", n)
	}
	kcploop.Tick(p.l)
	if len(p.toA) != 1 {
		t.Fatalf("the wheel step after Input sent %d datagrams, want b's acknowledgement", len(p.toA))
	}
	p.deliver(t)
	if n, err := p.b.Recv(p.recv); err != nil || string(p.recv[:n]) != "hello" {
		t.Fatalf("Recv: %q, %v", p.recv[:n], err)
	}
	kcploop.Tick(p.l)
	kcploop.Tick(p.l)
	if n := kcploop.OnWheel(p.l); n != 0 {
		t.Fatalf("%d on the wheel once all is acknowledged, want 0", n)
	}
}

// A send window of one segment lets one message out; widening it sends
// the rest at once.
func TestSetSendWindow(t *testing.T) {
	p := newPair(t)
	kcploop.Tick(p.l)
	if err := p.a.SetSendWindow(1); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"one", "two", "three"} {
		if err := p.a.SendFlush([]byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	recv := func() (got []string) {
		p.deliver(t)
		for {
			n, err := p.b.Recv(p.recv)
			if err != nil {
				return got
			}
			got = append(got, string(p.recv[:n]))
		}
	}
	if got := recv(); len(got) != 1 || got[0] != "one" {
		t.Fatalf("window 1: received %q, want [one]", got)
	}
	if err := p.a.SetSendWindow(8); err != nil {
		t.Fatal(err)
	}
	if got := recv(); len(got) != 2 || got[0] != "two" || got[1] != "three" {
		t.Fatalf("window 8: received %q, want [two three]", got)
	}
	if err := p.a.SetSendWindow(0); !errors.Is(err, kcploop.ErrInvalidConfig) {
		t.Fatalf("window 0: %v, want ErrInvalidConfig", err)
	}
}
