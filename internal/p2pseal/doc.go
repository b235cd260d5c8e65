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
//
// Vectors: testdata/p2pwire/keys.json (TestVectors checks them against
// HKDF and ChaCha20-Poly1305 computed without internal/sealed).
//
// # Goroutines and who closes what
//
// None: the package starts no goroutine; a [Side]'s sealer and opener
// are safe for concurrent use and need no closing.
package p2pseal
