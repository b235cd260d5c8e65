package sealed

import "errors"

var (
	// ErrShort is returned by [Opener.Open] and [ParseHeader] for a
	// datagram shorter than [Overhead].
	ErrShort = errors.New("sealed: datagram too short")
	// ErrTooLarge is returned by [Sealer.Seal] for a payload over
	// [MaxPayload] and by [Opener.Open] for a longer datagram.
	ErrTooLarge = errors.New("sealed: datagram too large")
	// ErrVersion is returned by [Opener.Open] and [ParseHeader] when the
	// version byte is not [Version].
	ErrVersion = errors.New("sealed: unknown version")
	// ErrKeyID is returned by [Opener.Open] when the datagram's key id is
	// not the opener's.
	ErrKeyID = errors.New("sealed: unknown key id")
	// ErrReplay is returned by [Opener.Open] for a sequence number that
	// was already accepted or is older than the replay window.
	ErrReplay = errors.New("sealed: replayed or too old")
	// ErrAuth is returned by [Opener.Open] when the tag does not verify:
	// a forged or corrupted datagram, or one sealed with another key.
	ErrAuth = errors.New("sealed: authentication failed")
	// ErrExhausted is returned by [Sealer.Seal] once the sealer has used
	// every sequence number up to [MaxSequence]; derive new keys.
	ErrExhausted = errors.New("sealed: sequence numbers exhausted")
	// ErrKey is returned by [NewSealer], [NewOpener] and [DeriveKeys] for
	// a key, secret, nonce or label of the wrong size.
	ErrKey = errors.New("sealed: bad key material")
)
