package udp

import (
	"net/netip"
	"testing"
	"time"
)

func TestRepeatRing(t *testing.T) {
	var r repeatRing
	r.init(4)
	t0 := time.Unix(100, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	addr := netip.MustParseAddrPort("192.0.2.1:9")
	for i := range 4 {
		if !r.push([]byte{byte(i)}, addr, at(i)) {
			t.Fatalf("push %d refused", i)
		}
	}
	if r.push([]byte{9}, addr, at(9)) {
		t.Fatal("a full ring took a fifth datagram")
	}
	run, next := r.dueAt(at(1)) // 0 and 1 due, 2 next
	if len(run) != 2 || run[0].Buf[0] != 0 || run[1].Buf[0] != 1 || !next.Equal(at(2)) {
		t.Fatalf("dueAt(1ms) = %d datagrams, next %v", len(run), next)
	}
	r.release(2)
	r.push([]byte{4}, addr, at(4)) // wraps to slot 0
	r.push([]byte{5}, addr, at(5)) // slot 1
	run, next = r.dueAt(at(10))    // all due: 2, 3 up to the ring's end, then the rest
	if len(run) != 2 || run[0].Buf[0] != 2 || run[1].Buf[0] != 3 || !next.Equal(at(10)) {
		t.Fatalf("dueAt(10ms) before the wrap = %d datagrams, next %v", len(run), next)
	}
	r.release(2)
	run, next = r.dueAt(at(10))
	if len(run) != 2 || run[0].Buf[0] != 4 || run[1].Buf[0] != 5 || !next.IsZero() {
		t.Fatalf("dueAt(10ms) after the wrap = %d datagrams, next %v", len(run), next)
	}
	r.release(2)
	if run, next := r.dueAt(at(20)); len(run) != 0 || !next.IsZero() {
		t.Fatalf("empty ring: %d datagrams, next %v", len(run), next)
	}
	if a := testing.AllocsPerRun(100, func() {
		r.push(frame[:], addr, at(30))
		run, _ := r.dueAt(at(40))
		r.release(len(run))
	}); a != 0 {
		t.Errorf("a repeat allocates %v times", a)
	}
}

var frame [60]byte // a FRAME datagram's size
