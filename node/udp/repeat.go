package udp

import (
	"net/netip"
	"time"

	"github.com/switchboardgg/switchboard/internal/udpio"
	"github.com/switchboardgg/switchboard/protocol/roomudp"
)

// A FRAME that goes twice leaves a second time repeatDelay after the
// first, while its session's datagrams have shown a gap in the last
// lossMemory (rooms-udp.md §7). Each FRAME carries the two frames before
// it, so a client that lost one FRAME datagram waits a tick for the next;
// the copy, sealed bytes identical to the first (the client's replay window
// drops it when the first arrived), repairs the loss in repeatDelay
// instead. Apart, so that one short burst does not take both; no further,
// because the delay is what each repaired frame is late by (at 4 ms the
// 2 %-loss p99 was 0.501 of WebSocket's, docs/benchmarks.md). On a clean
// path nothing is repeated.
const (
	repeatDelay = 2 * time.Millisecond
	lossMemory  = 5 * time.Second
)

// repeatRing holds the datagrams to send again, in the order they are due
// (each is due repeatDelay after it was queued, so the order they came
// in). Producers push at the tail under outQueue.mu; the writer sends the
// due ones from the head and only then releases them, so a push never
// writes a slot being sent. A full ring skips the repeat.
type repeatRing struct {
	msgs []udpio.Message // fixed buffers of roomudp.MaxDatagram bytes
	due  []time.Time
	head int // the oldest
	n    int // queued
}

func (r *repeatRing) init(n int) {
	r.msgs = make([]udpio.Message, n)
	r.due = make([]time.Time, n)
	backing := make([]byte, n*roomudp.MaxDatagram)
	for i := range r.msgs {
		r.msgs[i].Buf = backing[i*roomudp.MaxDatagram : i*roomudp.MaxDatagram : (i+1)*roomudp.MaxDatagram]
	}
}

// push queues d to addr, due at; it reports false when the ring is full.
func (r *repeatRing) push(d []byte, addr netip.AddrPort, at time.Time) bool {
	if r.n == len(r.msgs) {
		return false
	}
	i := (r.head + r.n) % len(r.msgs)
	r.msgs[i].Buf = append(r.msgs[i].Buf[:0], d...)
	r.msgs[i].Addr = addr
	r.due[i] = at
	r.n++
	return true
}

// dueAt returns the due datagrams at the head that are contiguous in the
// ring, and when to look again: zero when nothing else is queued, now when
// the due run wraps (the rest is at the ring's start), else when the next
// one is due.
func (r *repeatRing) dueAt(now time.Time) (run []udpio.Message, next time.Time) {
	end := min(r.head+r.n, len(r.msgs))
	k := r.head
	for k < end && !r.due[k].After(now) {
		k++
	}
	run = r.msgs[r.head:k]
	switch {
	case len(run) == r.n:
	case k < end:
		next = r.due[k]
	default:
		next = now
	}
	return run, next
}

// release frees the k datagrams at the head.
func (r *repeatRing) release(k int) {
	r.head = (r.head + k) % len(r.msgs)
	r.n -= k
}
