// Package sealed turns UDP datagrams into authenticated, encrypted ones
// and back: per-direction keys derived with HKDF-SHA256, the datagram's
// sequence number as the AEAD nonce, and a sliding replay window. It is
// the codec under node/udp (issue 12) and the p2p UDP path (issue 11); it
// owns no socket, no session table and no handshake.
//
// # Keys
//
// [DeriveKeys] expands a 32-byte session secret into two 32-byte keys,
// one per direction:
//
//	salt = initiator nonce (16 bytes) || responder nonce (16 bytes)
//	PRK  = HKDF-Extract(SHA-256, salt, secret)
//	I2R  = HKDF-Expand(PRK, "switchboard sealed v1 " || label || " i2r", 32)
//	R2I  = HKDF-Expand(PRK, "switchboard sealed v1 " || label || " r2i", 32)
//
// Both sides draw a fresh random nonce for every handshake, so a
// reconnect under the same session secret gets new keys and no (key,
// nonce) pair is ever used twice, even though every new [Sealer] counts
// from sequence 0. The label separates uses of one secret (for example
// "handshake" before the responder's nonce is known, with an all-zero
// responder nonce, and "session" after); two directions never share a
// key, so the two sides' sequence numbers cannot collide either.
//
// # Datagram format
//
// All integers are big-endian.
//
//	offset size  field
//	0      1     version, [Version] (1)
//	1      4     key id, chosen by the caller (e.g. connect.key_id)
//	5      8     sequence number
//	13     n     ciphertext of the n-byte payload
//	13+n   16    Poly1305 tag
//
// The first [HeaderSize] (13) bytes travel in clear and are exactly the
// associated data: the version, the key id and the sequence number are
// authenticated, so none of them can be altered without the tag failing.
// The 12-byte ChaCha20-Poly1305 nonce is bytes 1 to 12 of the header:
// the key id followed by the sequence number. One key always goes with
// one key id, so the nonce is unique under a key exactly when the
// sequence number is. A datagram is [Overhead] (29) bytes longer than
// its payload.
//
// # Why ChaCha20-Poly1305
//
// ChaCha20-Poly1305 (RFC 8439) is constant-time in pure software on every
// CPU our SDK runs on, including phones and small ARM boards without AES
// instructions, where AES-GCM falls back to a slow or table-based
// implementation; it is what netcode.io and WireGuard chose for game and
// tunnel datagrams for the same reason. On servers with AES-NI, AES-GCM
// would be somewhat faster, but ChaCha20-Poly1305 still seals and opens
// a 1200-byte datagram in about a microsecond (see the benchmarks), far
// below the cost of the system call that carries it. Its 96-bit nonce
// fits the 64-bit sequence number directly, and golang.org/x/crypto was
// already a dependency.
//
// # Guarantees and bounds
//
//   - A [Sealer] never uses a sequence number twice: it counts from 0 and
//     refuses with [ErrExhausted] at [MaxSequence] instead of wrapping.
//   - An [Opener] accepts a datagram only if its version, key id and tag
//     are right and its sequence number was not accepted before and is
//     not older than [WindowSize] (1024) below the highest accepted one
//     (an RFC 6479 bitmap of 17 64-bit words). The window is checked
//     before decrypting, so a replay costs no AEAD work, and is updated
//     only after the tag verifies, so forged datagrams cannot move it.
//   - Payloads are at most [MaxPayload] bytes. Seal and Open append to
//     the caller's buffer and allocate nothing when it has room; an
//     Opener never answers anything (answering is the caller's business;
//     the rule that a node never answers an unauthenticated datagram with
//     more bytes than it carried belongs to the caller).
//   - Nothing here logs; keys never leave the structs they are given to.
//
// # Concurrency
//
// The package starts no goroutines and holds no global state. A [Sealer]
// and an [Opener] are safe for concurrent use (an atomic counter and a
// mutex around the window, held only for the window check and update).
// Nothing needs closing.
package sealed
