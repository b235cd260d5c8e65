package udp

import (
	"net/netip"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchboardgg/switchboard/protocol/roomudp"
)

// TestPathCheckSteps walks a session's path state through the rules of
// rooms-udp.md §8 with a clock of its own: the handshake's single address
// is validated; a move elsewhere starts a check with a challenge, credits
// 3× each datagram from there, repeats the challenge with a datagram once
// pathRetry has passed and gives up after pathTries, staying limited; a
// return to the validated address lifts the limit with no challenge.
func TestPathCheckSteps(t *testing.T) {
	s := &Server{m: newMetrics()}
	a := netip.MustParseAddrPort("192.0.2.1:1000")
	b := netip.MustParseAddrPort("198.51.100.7:2000")
	const n = 50 // bytes of each datagram
	chal := roomudp.SessionOverhead + roomudp.PathDataSize

	ss := &session{s: s, addr: a}
	ss.path.proven = a // start() sets it: the HANDSHAKE came from a
	t0 := time.Unix(1000, 0)
	heard := func(from netip.AddrPort, newest bool, at time.Duration) bool {
		ss.mu.Lock()
		defer ss.mu.Unlock()
		first := !ss.established
		ss.established = true
		c, send := ss.pathHeardLocked(from, n, first, newest, t0.Add(at))
		if send && (c.to != from || c.data != ss.path.data) {
			t.Fatalf("challenge %x to %v, want %x to %v", c.data, c.to, ss.path.data, from)
		}
		return send
	}
	limited := func() bool {
		ss.mu.Lock()
		defer ss.mu.Unlock()
		return ss.limitedLocked()
	}

	if heard(a, true, 0) || limited() {
		t.Fatal("the handshake's address was challenged or limited")
	}
	if !heard(b, true, 10*time.Millisecond) || !limited() || ss.addr != b {
		t.Fatal("a move to a new address: no challenge, or not limited, or not moved")
	}
	if ss.budget != 3*n-chal {
		t.Fatalf("budget %d after the first datagram and its challenge, want %d", ss.budget, 3*n-chal)
	}
	first := ss.path.data
	if heard(b, true, 100*time.Millisecond) {
		t.Fatal("a challenge again within pathRetry")
	}
	if ss.budget != 6*n-chal {
		t.Fatalf("budget %d, want %d", ss.budget, 6*n-chal)
	}
	if heard(a, false, 120*time.Millisecond) || ss.addr != b || ss.budget != 6*n-chal {
		t.Fatal("an older datagram from the old address moved the session or credited b")
	}
	ss.mu.Lock()
	if !ss.spendLocked(ss.budget) || ss.spendLocked(1) {
		t.Fatal("the budget does not hold")
	}
	ss.mu.Unlock()
	if got := testutil.ToFloat64(s.m.drop[dropUnvalidated]); got != 1 {
		t.Errorf("%v counted unvalidated, want 1", got)
	}

	// Nine more challenges, one per pathRetry, all with the same bytes.
	sent := 1
	for at := 260 * time.Millisecond; at < 5*time.Second; at += pathRetry {
		if heard(b, true, at) {
			sent++
		}
		if ss.path.data != first {
			t.Fatal("a retry changed the challenge's bytes")
		}
	}
	if sent != pathTries || ss.path.checking || !limited() {
		t.Fatalf("%d challenges, checking %v, limited %v; want %d, false, true", sent, ss.path.checking, limited(), pathTries)
	}
	if got := testutil.ToFloat64(s.m.paths[pathAbandoned]); got != 1 {
		t.Errorf("%v abandoned, want 1", got)
	}

	if heard(a, true, 6*time.Second) || limited() || ss.addr != a {
		t.Fatal("a return to the validated address was challenged or stays limited")
	}
	// A new check for b, answered from b: validated.
	if !heard(b, true, 7*time.Second) {
		t.Fatal("no challenge for b again")
	}
	r := &reader{s: s}
	ss.d = nil
	body := roomudp.AppendPath(nil, &ss.path.data)
	r.pathResponse(ss, body, a) // from the wrong address
	if !limited() || testutil.ToFloat64(s.m.drop[dropStale]) != 1 {
		t.Fatal("a PATH_RESPONSE from another address validated b")
	}
	r.pathResponse(ss, body, b)
	if limited() || ss.path.validated != b || testutil.ToFloat64(s.m.paths[pathValidated]) != 1 {
		t.Fatal("the PATH_RESPONSE from b did not validate it")
	}
	if !heard(a, true, 8*time.Second) || !limited() {
		t.Fatal("a (no longer the last validated address) was not challenged")
	}
}

// TestPathHandshakeProof: the first SESSION datagram validates its
// address only when every HANDSHAKE of the attempt came from there.
func TestPathHandshakeProof(t *testing.T) {
	a := netip.MustParseAddrPort("192.0.2.1:1000")
	b := netip.MustParseAddrPort("198.51.100.7:2000")
	for _, tc := range []struct {
		name      string
		resentTo  []netip.AddrPort
		firstFrom netip.AddrPort
		challenge bool
	}{
		{"one address", nil, a, false},
		{"retransmitted from it", []netip.AddrPort{a, a}, a, false},
		{"first datagram elsewhere", nil, b, true},
		{"HANDSHAKEs from two addresses", []netip.AddrPort{b}, b, true},
		{"HANDSHAKEs from two, back to the first", []netip.AddrPort{b, a}, a, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ss := &session{s: &Server{m: newMetrics()}, addr: a}
			ss.path.proven = a
			for _, to := range tc.resentTo {
				ss.resent(to, roomudp.HandshakeSize)
			}
			ss.mu.Lock()
			ss.established = true
			_, send := ss.pathHeardLocked(tc.firstFrom, 60, true, true, time.Now())
			limited := ss.limitedLocked()
			ss.mu.Unlock()
			if send != tc.challenge || limited != tc.challenge {
				t.Fatalf("challenge %v, limited %v; want %v", send, limited, tc.challenge)
			}
		})
	}
}
