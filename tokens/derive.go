package tokens

import (
	"crypto/hmac"
	"crypto/sha256"
)

// Derive returns HMAC-SHA256(signing key, label): a 32-byte secret for
// another use of the deployment's signing key (e.g. the rooms UDP secret
// of protocol/roomudp), independent of every signature as long as label
// is not a token prefix followed by a payload.
func (s *Signer) Derive(label string) [32]byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(label))
	var out [32]byte
	m.Sum(out[:0])
	return out
}
