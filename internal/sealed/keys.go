package sealed

import (
	"crypto/hkdf"
	"crypto/sha256"
	"fmt"
)

const (
	// KeySize is the size of a session secret and of each derived key.
	KeySize = 32
	// NonceSize is the size of each side's handshake nonce.
	NonceSize = 16
	// MaxLabelSize bounds the label given to [DeriveKeys].
	MaxLabelSize = 64

	infoPrefix = "switchboard sealed v1 "
)

// Keys are the two directions' keys derived from one session secret.
// The initiator (the side that sent the first handshake message, the
// client) seals with I2R and opens with R2I; the responder the reverse.
type Keys struct {
	I2R [KeySize]byte // initiator to responder
	R2I [KeySize]byte // responder to initiator
}

// DeriveKeys derives both directions' keys from secret (KeySize bytes),
// the initiator's and the responder's handshake nonces (NonceSize bytes
// each) and a label of 1 to MaxLabelSize bytes that names the use, as
// the package documentation specifies. It returns an error wrapping
// [ErrKey] when a size is wrong. It allocates, and is meant to run once
// per handshake.
func DeriveKeys(secret, initiatorNonce, responderNonce []byte, label string) (Keys, error) {
	var k Keys
	switch {
	case len(secret) != KeySize:
		return k, fmt.Errorf("sealed: derive keys: secret is %d bytes, want %d: %w", len(secret), KeySize, ErrKey)
	case len(initiatorNonce) != NonceSize || len(responderNonce) != NonceSize:
		return k, fmt.Errorf("sealed: derive keys: nonces are %d and %d bytes, want %d: %w",
			len(initiatorNonce), len(responderNonce), NonceSize, ErrKey)
	case len(label) == 0 || len(label) > MaxLabelSize:
		return k, fmt.Errorf("sealed: derive keys: label is %d bytes, want 1 to %d: %w", len(label), MaxLabelSize, ErrKey)
	}
	salt := make([]byte, 0, 2*NonceSize)
	salt = append(salt, initiatorNonce...)
	salt = append(salt, responderNonce...)
	prk, err := hkdf.Extract(sha256.New, secret, salt)
	if err != nil {
		return k, fmt.Errorf("sealed: derive keys: %w", err)
	}
	for _, d := range []struct {
		dir string
		out *[KeySize]byte
	}{{"i2r", &k.I2R}, {"r2i", &k.R2I}} {
		key, err := hkdf.Expand(sha256.New, prk, infoPrefix+label+" "+d.dir, KeySize)
		if err != nil {
			return k, fmt.Errorf("sealed: derive keys: %w", err)
		}
		copy(d.out[:], key)
	}
	return k, nil
}
