package udp_test

import (
	"crypto/rand"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/internal/sealed"
	"github.com/switchboardgg/switchboard/node/udp"
	"github.com/switchboardgg/switchboard/protocol/roomudp"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// newClientFrom is newClient on a socket bound to ip (Linux's loopback
// takes all of 127.0.0.0/8): a player behind another address.
func (e *env) newClientFrom(ip net.IP, kid roomudp.KeyID, sk [32]byte) *client {
	e.t.Helper()
	c := e.newClient(kid, sk)
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: ip})
	if err != nil {
		e.t.Fatal(err)
	}
	c.pc.Close()
	c.pc = pc
	return c
}

// TestSourceHandshakeRate: one address flooding HANDSHAKEs with random
// key ids, far over the node-wide rate, spends its own budget only: a
// player from another address gets its WELCOME while the flood goes on,
// the flood's HANDSHAKEs over its source's rate are dropped (source_rate)
// before any key derivation, and none is dropped for the node-wide limit.
// Without the per-source limit the flood takes the node's 10 a second and
// the player's HANDSHAKEs are dropped (busy) until it gives up.
func TestSourceHandshakeRate(t *testing.T) {
	e := newEnvWith(t, func(c *udp.Config) {
		c.HandshakeRate, c.HandshakeBurst = 10, 10
		c.SourceHandshakeRate, c.SourceHandshakeBurst = 1, 5
	})
	e.admit("r-src", 1)
	tk, kid, sk := e.ticket("r-src", 0)

	flood, err := net.DialUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}, e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer flood.Close()
	var sent atomic.Int64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		d := make([]byte, roomudp.HandshakeSize)
		d[0] = roomudp.KindHandshake
		d[roomudp.HandshakeHeaderSize] = sealed.Version
		for {
			select {
			case <-stop:
				return
			default:
			}
			_, _ = rand.Read(d[1:roomudp.HandshakeHeaderSize]) // a new key id and nonce: a new attempt
			if _, err := flood.Write(d); err == nil {
				sent.Add(1)
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	defer func() { close(stop); <-done }()
	dropped := func(reason string) float64 {
		return e.counter("switchboard_node_udp_dropped_total", "reason", reason)
	}
	waitFor(t, "100 of the flood's HANDSHAKEs dropped per source", func() bool { return dropped("source_rate") >= 100 })

	c := e.newClientFrom(net.IPv4(127, 0, 0, 2), kid, sk)
	if msg := c.handshake(helloBytes(t, tk)); roomwire.Type(msg[0]) != roomwire.TypeWelcome {
		t.Fatalf("the player from 127.0.0.2 got %x, want WELCOME", msg)
	}
	if got := dropped("busy"); got != 0 {
		t.Errorf("%v HANDSHAKEs dropped busy, want 0: the flood reached the node-wide limit", got)
	}
	// What the flood got past its source's limit had its keys derived
	// and failed to open (auth): a small share of what it sent.
	if auth, src := dropped("auth"), dropped("source_rate"); auth >= src {
		t.Errorf("the flood: %v HANDSHAKEs derived (auth), %v dropped per source, of %d sent; want most dropped per source",
			auth, src, sent.Load())
	}
}
