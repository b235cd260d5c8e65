package p2pseal

import (
	"bytes"
	"errors"
	"testing"

	"github.com/switchboardgg/switchboard/internal/sealed"
	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// TestSidesMeet checks that each side opens what the other sealed, that
// the two directions have different keys, that datagrams carry the p2p
// marker and key id, and that p2pwire parses them.
func TestSidesMeet(t *testing.T) {
	secret := bytes.Repeat([]byte{7}, 32)
	peer, err := PeerSide(secret, 42)
	if err != nil {
		t.Fatal(err)
	}
	hub, err := HubSide(secret, 42)
	if err != nil {
		t.Fatal(err)
	}
	d, err := peer.Seal.Seal(nil, []byte("to the hub"))
	if err != nil {
		t.Fatal(err)
	}
	if d[0] != p2pwire.SealedMarker {
		t.Fatalf("marker %#x", d[0])
	}
	if h, _, _, err := p2pwire.ParseSealed(d); err != nil || h.KeyID != 42 || h.Seq != 0 {
		t.Fatalf("ParseSealed: %+v %v", h, err)
	}
	got, _, err := hub.Open.Open(nil, d)
	if err != nil || string(got) != "to the hub" {
		t.Fatalf("hub opens %q, %v", got, err)
	}
	// A peer cannot open its own datagram: the directions differ.
	if _, _, err := peer.Open.Open(nil, d); !errors.Is(err, sealed.ErrAuth) {
		t.Fatalf("own datagram opened: %v", err)
	}
	if _, _, err := hub.Open.Open(nil, d); !errors.Is(err, sealed.ErrReplay) {
		t.Fatalf("replay: %v", err)
	}
	a, _ := PairSide(secret, 9, "alice~1", "bob~2")
	b, _ := PairSide(secret, 9, "bob~2", "alice~1")
	d, _ = b.Seal.Seal(nil, []byte("hi"))
	if got, _, err := a.Open.Open(nil, d); err != nil || string(got) != "hi" {
		t.Fatalf("pair: %q %v", got, err)
	}
	if _, err := PairSide(secret, 9, "x", "x"); err == nil {
		t.Fatal("pair with itself accepted")
	}
	if _, err := PeerSide(secret, 0); err == nil {
		t.Fatal("key id 0 accepted")
	}
	// A datagram of the sealed package's own format is not a p2p one.
	plain, _ := sealed.NewSealer(bytes.Repeat([]byte{1}, 32), 42)
	d, _ = plain.Seal(nil, []byte("x"))
	if _, _, err := hub.Open.Open(nil, d); !errors.Is(err, sealed.ErrVersion) {
		t.Fatalf("unmarked datagram: %v", err)
	}
}
