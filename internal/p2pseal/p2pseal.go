// Package p2pseal derives the sealers and openers of P2P datagrams
// (docs/protocol/p2p.md §11) from the secrets the hub hands out: one place
// for the HKDF labels and the marker, shared by the hub (p2p) and the SDK
// (client/p2p). It owns no socket, starts no goroutine and holds no state.
//
// A secret s of 32 bytes and its key id k give two keys with
// internal/sealed's DeriveKeys (HKDF-SHA256, both handshake nonces 16 zero
// bytes: every secret is fresh, drawn by the hub for one peer or pair, and
// a sealer is made once per secret, so no (key, seq) repeats):
//
//	hub session  label "p2p hub":  I2R seals peer → hub, R2I seals hub → peer
//	pair key     label "p2p pair": I2R seals from the peer whose id sorts
//	             first (bytewise) to the other, R2I the reverse
//
// Every datagram starts with the marker 0xE1 (p2pwire.SealedMarker) where
// internal/sealed puts its version byte; the rest of the layout and the
// AEAD (ChaCha20-Poly1305, nonce = key id ‖ seq, the 13-byte header as
// associated data, a 1,024-sequence replay window) are internal/sealed's.
package p2pseal

import (
	"fmt"

	"github.com/switchboardgg/switchboard/internal/sealed"
	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// The HKDF labels.
const (
	LabelHub  = "p2p hub"
	LabelPair = "p2p pair"
)

// Side is one end's sealer (what it sends) and opener (what it receives)
// under one key id.
type Side struct {
	Seal *sealed.Sealer
	Open *sealed.Opener
}

var zeroNonce = make([]byte, sealed.NonceSize)

func side(secret []byte, keyID uint32, label string, initiator bool) (Side, error) {
	if keyID == 0 {
		return Side{}, fmt.Errorf("p2pseal: key id 0: %w", sealed.ErrKey)
	}
	k, err := sealed.DeriveKeys(secret, zeroNonce, zeroNonce, label)
	if err != nil {
		return Side{}, fmt.Errorf("p2pseal: %s keys: %w", label, err)
	}
	send, recv := k.I2R[:], k.R2I[:]
	if !initiator {
		send, recv = recv, send
	}
	s, err := sealed.NewMarkedSealer(send, keyID, p2pwire.SealedMarker)
	if err != nil {
		return Side{}, err
	}
	o, err := sealed.NewMarkedOpener(recv, keyID, p2pwire.SealedMarker)
	if err != nil {
		return Side{}, err
	}
	return Side{Seal: s, Open: o}, nil
}

// PeerSide returns a peer's side of its hub session (the key id and
// secret of WELCOME).
func PeerSide(secret []byte, keyID uint32) (Side, error) {
	return side(secret, keyID, LabelHub, true)
}

// HubSide returns the hub's side of a peer's session.
func HubSide(secret []byte, keyID uint32) (Side, error) {
	return side(secret, keyID, LabelHub, false)
}

// PairSide returns peer self's side of a pair key shared with peer other
// (a direct path's key, brokered by the hub). The two sides must not have
// the same id.
func PairSide(secret []byte, keyID uint32, self, other string) (Side, error) {
	if self == other {
		return Side{}, fmt.Errorf("p2pseal: pair key between %q and itself: %w", self, sealed.ErrKey)
	}
	return side(secret, keyID, LabelPair, self < other)
}
