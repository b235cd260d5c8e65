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
