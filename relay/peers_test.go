package relay_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/relay"
	"github.com/switchboardgg/switchboard/tokens"
)

// Switchboard's host peer events (docs/protocol/relay.md), composed from
// their layouts by hand as the rest of the test client is.
const (
	tPeersSubscribe = 0x80
	tPeerEvent      = 0x81

	evSubscribed   = 0
	evConnected    = 1
	evDisconnected = 2
)

func mSubscribe(id [16]byte) []byte { return append(hdr(tPeersSubscribe), id[:]...) }

func mPeerEvent(ev byte, peer [16]byte) []byte {
	return append(append(hdr(tPeerEvent), ev), peer[:]...)
}

// expectSet reads len(want) messages and fails unless they are want in
// any order: the relay sends a PEER_EVENT and the message that caused it
// (a forwarded DISCONNECT) through different paths.
func expectSet(t *testing.T, c transport, want ...[]byte) {
	t.Helper()
	left := append([][]byte(nil), want...)
	for range want {
		got, err := c.recv(5 * time.Second)
		if err != nil {
			t.Fatalf("waiting for %d more of % x: %v", len(left), left, err)
		}
		i := -1
		for k, w := range left {
			if bytes.Equal(got, w) {
				i = k
				break
			}
		}
		if i < 0 {
			t.Fatalf("got % x, want one of % x", got, left)
		}
		left = append(left[:i], left[i+1:]...)
	}
}

// TestPeerEvents: a host that subscribed learns of every peer that
// connects and of every peer that leaves (DISCONNECT, CLOSE, timeout), the
// peers already connected first; its own DISCONNECT is not echoed.
func TestPeerEvents(t *testing.T) {
	f := newFixture(t, nil)
	h := f.mint(tokens.RelayConnection{MaxConnections: 4, IdleTimeout: time.Hour})
	j, k, l := f.joiner(h), f.joiner(h), f.joiner(h)
	hc, jc, kc, lc := dialUDP(t, f.udp), dialUDP(t, f.udp), dialUDP(t, f.udp), dialUDP(t, f.udp)
	bound(t, hc, h, 0)
	bound(t, jc, j, 0)
	bound(t, kc, k, 0)
	bound(t, lc, l, 0)
	connected(t, jc, j, h)
	expectSilence(t, hc) // not subscribed: a Unity host never sees 0x81

	hc.send(mSubscribe(h.id))
	expectNext(t, hc, mPeerEvent(evSubscribed, h.id))
	expectNext(t, hc, mPeerEvent(evConnected, j.id))

	connected(t, kc, k, h)
	expectNext(t, hc, mPeerEvent(evConnected, k.id))
	connected(t, kc, k, h) // a retried CONNECT_REQUEST changes nothing
	connected(t, lc, l, h)
	expectNext(t, hc, mPeerEvent(evConnected, l.id))
	expectSilence(t, hc)

	// A peer's DISCONNECT: forwarded, and an event.
	d := mFromTo(tDisconnect, j.id, h.id)
	jc.send(d)
	expectSet(t, hc, d, mPeerEvent(evDisconnected, j.id))
	// A peer's CLOSE.
	kc.send(append(hdr(tClose), k.id[:]...))
	expectSet(t, hc, mFromTo(tDisconnect, k.id, h.id), mPeerEvent(evDisconnected, k.id))
	// The host's own DISCONNECT: the peer gets it, the host no event.
	hc.send(mFromTo(tDisconnect, h.id, l.id))
	expectNext(t, lc, mFromTo(tDisconnect, h.id, l.id))
	expectSilence(t, hc)

	// A peer that times out.
	connected(t, lc, l, h)
	expectNext(t, hc, mPeerEvent(evConnected, l.id))
	f.clock.advance(11 * time.Second)
	expectSet(t, hc, mFromTo(tDisconnect, l.id, h.id), mPeerEvent(evDisconnected, l.id))

	// Subscribing again repeats the ack and the (now empty) list.
	hc.send(mSubscribe(h.id))
	expectNext(t, hc, mPeerEvent(evSubscribed, h.id))
	expectSilence(t, hc)
}

// TestPeerEventsOverWebSocket: a host on a WebSocket gets its events there.
func TestPeerEventsOverWebSocket(t *testing.T) {
	f := newFixture(t, nil)
	wc, err := dialWS(t, f.ws, "/")
	if err != nil {
		t.Fatal(err)
	}
	h := f.host(4)
	j := f.joiner(h)
	jc := dialUDP(t, f.udp)
	bound(t, wc, h, 0)
	bound(t, jc, j, 0)
	wc.send(mSubscribe(h.id))
	expectNext(t, wc, mPeerEvent(evSubscribed, h.id))
	connected(t, jc, j, h)
	expectNext(t, wc, mPeerEvent(evConnected, j.id))
	jc.send(mFromTo(tDisconnect, j.id, h.id))
	expectSet(t, wc, mFromTo(tDisconnect, j.id, h.id), mPeerEvent(evDisconnected, j.id))
	wc.close()
}

// TestPeersSubscribeRefused: PEERS_SUBSCRIBE gets no answer at all, not
// even an ERROR, from a joiner, from another address than the bound one,
// for an unknown allocation, and over the host's subscribe rate.
func TestPeersSubscribeRefused(t *testing.T) {
	f := newFixture(t, nil)
	h := f.host(4)
	j := f.joiner(h)
	hc, jc, stranger := dialUDP(t, f.udp), dialUDP(t, f.udp), dialUDP(t, f.udp)
	bound(t, hc, h, 0)
	bound(t, jc, j, 0)
	connected(t, jc, j, h)

	jc.send(mSubscribe(j.id)) // a joiner
	expectSilence(t, jc)
	stranger.send(mSubscribe(h.id)) // not the bound address
	expectSilence(t, stranger)
	var unknown [16]byte
	rand.Read(unknown[:])
	stranger.send(mSubscribe(unknown))
	expectSilence(t, stranger)
	expectSilence(t, hc)
	if f.drops("subscribe") != 1 || f.drops("address_mismatch") != 1 || f.drops("unknown_allocation") != 1 {
		t.Fatalf("drops: subscribe %v, address_mismatch %v, unknown_allocation %v",
			f.drops("subscribe"), f.drops("address_mismatch"), f.drops("unknown_allocation"))
	}
	// The joiner was not subscribed: the host's events still go to the
	// host only, and the joiner's session is untouched.
	m := mRelay(j.id, h.id, []byte("still here"))
	jc.send(m)
	expectNext(t, hc, m)

	// Over the rate (1 a second, a burst of 4): at most the burst and what
	// the rate adds while sending are answered, the rest dropped.
	const n = 20
	for range n {
		hc.send(mSubscribe(h.id))
	}
	acks := 0
	for {
		got, err := hc.recv(300 * time.Millisecond)
		if err != nil {
			break
		}
		if bytes.Equal(got, mPeerEvent(evSubscribed, h.id)) {
			acks++
		}
	}
	if acks == 0 || acks >= n || f.drops("subscribe") < 2 {
		t.Fatalf("%d of %d PEERS_SUBSCRIBE answered, %v dropped", acks, n, f.drops("subscribe"))
	}
}

// TestWebSocketHonoursAllocationIdle: a WebSocket connection closes after
// WSIdleTimeout of silence, unless an allocation bound over it has a
// longer idle timeout of its own (a browser tab in the background).
func TestWebSocketHonoursAllocationIdle(t *testing.T) {
	f := newFixture(t, func(c *relay.Config) { c.WSIdleTimeout = 300 * time.Millisecond })
	plain, err := dialWS(t, f.ws, "/")
	if err != nil {
		t.Fatal(err)
	}
	long, err := dialWS(t, f.ws, "/")
	if err != nil {
		t.Fatal(err)
	}
	a := f.host(2)
	b := f.mint(tokens.RelayConnection{MaxConnections: 2, IdleTimeout: time.Minute})
	bound(t, plain, a, 0)
	bound(t, long, b, 0)
	// Both go silent: the plain connection is closed ...
	got, err := plain.recv(10 * time.Second)
	var ne net.Error
	if err == nil || errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the plain connection: % x, %v; want it closed by the relay", got, err)
	}
	// ... the other one is still there, well past WSIdleTimeout.
	time.Sleep(600 * time.Millisecond)
	long.send(mPing(b.id))
	expectNext(t, long, mPing(b.id))
	long.close()
}
