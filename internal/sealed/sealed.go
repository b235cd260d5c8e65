package sealed

import (
	"crypto/cipher"
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"golang.org/x/crypto/chacha20poly1305"
)

const (
	// Version is the format version in every datagram's first byte.
	Version = 1
	// HeaderSize is the size of the cleartext prefix: version, key id,
	// sequence number. It is the associated data.
	HeaderSize = 1 + 4 + 8
	// TagSize is the size of the Poly1305 tag at the end.
	TagSize = chacha20poly1305.Overhead
	// Overhead is how many bytes sealing adds to a payload.
	Overhead = HeaderSize + TagSize
	// MaxDatagram is the largest datagram handled: the most a UDP/IPv4
	// datagram can carry.
	MaxDatagram = 65507
	// MaxPayload is the largest payload that can be sealed.
	MaxPayload = MaxDatagram - Overhead
	// MaxSequence is the first sequence number a [Sealer] refuses; it
	// is never used, so the counter cannot wrap.
	MaxSequence = math.MaxUint64
)

// Header is a datagram's cleartext prefix.
type Header struct {
	Version  byte
	KeyID    uint32
	Sequence uint64
}

// ParseHeader reads the cleartext prefix of datagram without
// authenticating it, so that a caller can find the session (by key id)
// whose [Opener] should open it. It returns [ErrShort] or [ErrVersion]
// for a datagram that cannot be one of ours. Nothing in the header is
// to be trusted until Open succeeds.
func ParseHeader(datagram []byte) (Header, error) {
	return parseHeader(datagram, Version)
}

// parseHeader is ParseHeader for datagrams whose first byte is marker.
func parseHeader(datagram []byte, marker byte) (Header, error) {
	if len(datagram) < Overhead {
		return Header{}, ErrShort
	}
	if datagram[0] != marker {
		return Header{}, ErrVersion
	}
	return Header{
		Version:  datagram[0],
		KeyID:    binary.BigEndian.Uint32(datagram[1:5]),
		Sequence: binary.BigEndian.Uint64(datagram[5:13]),
	}, nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("sealed: key is %d bytes, want %d: %w", len(key), KeySize, ErrKey)
	}
	aead, err := chacha20poly1305.New(key)
	if err != nil {
		return nil, fmt.Errorf("sealed: new cipher: %w", err)
	}
	return aead, nil
}

// A Sealer seals the datagrams of one direction of one session. It is
// safe for concurrent use.
type Sealer struct {
	// immutable after NewSealer
	aead   cipher.AEAD
	keyID  uint32
	marker byte // the first byte of every datagram: Version unless NewMarkedSealer

	next atomic.Uint64 // the next sequence number to use
}

// NewSealer returns a Sealer that seals with key (KeySize bytes, one
// direction's key from [DeriveKeys]) and writes keyID into every
// datagram. Its first datagram has sequence number 0.
func NewSealer(key []byte, keyID uint32) (*Sealer, error) {
	return NewMarkedSealer(key, keyID, Version)
}

// NewMarkedSealer is [NewSealer] for a protocol that puts its own marker
// byte where this package's format has its version (p2p datagrams start
// with 0xE1, so that one port tells them from STUN). The marker is part
// of the associated data like the version; nothing else changes.
func NewMarkedSealer(key []byte, keyID uint32, marker byte) (*Sealer, error) {
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead, keyID: keyID, marker: marker}, nil
}

// Seal appends to dst the datagram that carries payload, with the next
// sequence number, and returns the extended slice. It allocates only
// when dst lacks the room for len(payload)+[Overhead] more bytes.
// payload and the appended region must not overlap unless payload sits
// exactly [HeaderSize] bytes after len(dst) (in-place sealing). It
// returns [ErrTooLarge] for a payload over [MaxPayload] and
// [ErrExhausted] once sequence numbers run out; dst is then unchanged.
func (s *Sealer) Seal(dst, payload []byte) ([]byte, error) {
	if len(payload) > MaxPayload {
		return dst, ErrTooLarge
	}
	var seq uint64
	for {
		seq = s.next.Load()
		if seq == MaxSequence {
			return dst, ErrExhausted
		}
		if s.next.CompareAndSwap(seq, seq+1) {
			break
		}
	}
	start := len(dst)
	dst = binary.BigEndian.AppendUint32(append(dst, s.marker), s.keyID)
	dst = binary.BigEndian.AppendUint64(dst, seq)
	// The nonce is the header's key id and sequence number, read from
	// dst itself: a local array would escape through the interface call
	// and cost an allocation per datagram.
	return s.aead.Seal(dst, dst[start+1:start+HeaderSize], payload, dst[start:]), nil
}

// Next returns the sequence number the next Seal will use.
func (s *Sealer) Next() uint64 { return s.next.Load() }

// An Opener opens the datagrams of one direction of one session and
// refuses replays. It is safe for concurrent use.
type Opener struct {
	// immutable after NewOpener
	aead   cipher.AEAD
	keyID  uint32
	marker byte // what the first byte must be: Version unless NewMarkedOpener

	mu  sync.Mutex
	win window // guarded by mu
}

// NewOpener returns an Opener for datagrams sealed with key (KeySize
// bytes) under keyID.
func NewOpener(key []byte, keyID uint32) (*Opener, error) {
	return NewMarkedOpener(key, keyID, Version)
}

// NewMarkedOpener is [NewOpener] for datagrams whose first byte is marker
// (see [NewMarkedSealer]); any other first byte is [ErrVersion].
func NewMarkedOpener(key []byte, keyID uint32, marker byte) (*Opener, error) {
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	return &Opener{aead: aead, keyID: keyID, marker: marker}, nil
}

// Open authenticates datagram, decrypts its payload, appends it to dst
// and returns the extended slice and the datagram's sequence number.
// It allocates only when dst lacks room for the payload. dst's appended
// region may be datagram[HeaderSize:] itself (in-place opening);
// otherwise they must not overlap. On any error dst is returned unchanged
// and the replay window is untouched: [ErrShort], [ErrTooLarge],
// [ErrVersion], [ErrKeyID], [ErrReplay] (checked before any decryption)
// or [ErrAuth].
func (o *Opener) Open(dst, datagram []byte) ([]byte, uint64, error) {
	if len(datagram) > MaxDatagram {
		return dst, 0, ErrTooLarge
	}
	h, err := parseHeader(datagram, o.marker)
	if err != nil {
		return dst, 0, err
	}
	if h.KeyID != o.keyID {
		return dst, h.Sequence, ErrKeyID
	}
	o.mu.Lock()
	fresh := o.win.check(h.Sequence)
	o.mu.Unlock()
	if !fresh {
		return dst, h.Sequence, ErrReplay
	}
	out, err := o.aead.Open(dst, datagram[1:HeaderSize], datagram[HeaderSize:], datagram[:HeaderSize])
	if err != nil {
		return dst, h.Sequence, ErrAuth
	}
	o.mu.Lock()
	fresh = o.win.accept(h.Sequence)
	o.mu.Unlock()
	if !fresh { // a concurrent Open of the same datagram won
		return dst, h.Sequence, ErrReplay
	}
	return out, h.Sequence, nil
}
