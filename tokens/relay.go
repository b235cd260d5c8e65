package tokens

import (
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"golang.org/x/crypto/chacha20poly1305"
)

// Sealed relay connection data.
//
// The control plane gives every relay allocation an opaque connectionData
// blob; clients send it back in BIND and CONNECT_REQUEST (padded with zero
// bytes to 255, with 255 in the length byte, so the blob must say where it
// ends). The blob is sealed with XChaCha20-Poly1305 under a key derived from
// a relay secret that only the control plane and the deployment's relay
// nodes hold, so a relay node serves a BIND without a lookup. Layout:
//
//	offset size field
//	0      1    key id, in clear: which relay secret sealed it
//	1      1    n, the length of the ciphertext (plaintext + 16-byte tag)
//	2      24   nonce, random
//	26     n    XChaCha20-Poly1305(seal key, nonce, plaintext, ad = bytes 0..1)
//
// and the plaintext (version 1, integers big-endian):
//
//	0  1  version = 1
//	1  16 allocation id (RFC 4122 order)
//	17 16 host allocation id (a joiner's host; zero for a host)
//	33 8  boot epoch of the relay node
//	41 8  issued, Unix seconds
//	49 8  expires, Unix seconds
//	57 2  max connections (peers, host excluded)
//	59 2  options (RelayOption bits)
//	61 2  idle timeout override, seconds (0: the node's)
//	63 1  length of the relay node id, then the id (≤ 64 bytes)
//	.. 1  length of the region, then the region (≤ 32 bytes)
//
// The largest blob is 26 + 63 + 1+64 + 1+32 + 16 (tag) = 203 bytes, under
// the 255 bytes the field allows. See docs/protocol/relay.md "Sealed
// connection data" for the rotation procedure.

// Limits of [RelayConnection].
const (
	// RelayMaxNodeID is the longest relay node id a blob carries, in bytes.
	RelayMaxNodeID = 64
	// RelayMaxRegion is the longest region a blob carries, in bytes.
	RelayMaxRegion = 32
	// RelayMaxBlob is the largest sealed blob, in bytes.
	RelayMaxBlob = 255
	// RelayKeySize is the size of an allocation key (the BIND HMAC key and
	// the DTLS pre-shared key).
	RelayKeySize = 64
	// RelayMinSecret is the shortest relay secret accepted, in bytes.
	RelayMinSecret = 32
)

const (
	relayHeader     = 2 + chacha20poly1305.NonceSizeX
	relayFixedPlain = 63
	relayVersion    = 1
	relayTagSize    = chacha20poly1305.Overhead
	sealInfo        = "switchboard relay seal v1"
	allocKeyInfo    = "switchboard relay allocation key v1"
)

// Errors of the relay connection data.
var (
	// ErrRelayBlob is returned by [RelayKeyring.Open] for a blob that is
	// malformed, sealed under an unknown key id, or fails authentication.
	ErrRelayBlob = errors.New("tokens: relay connection data invalid")
	// ErrRelayKey is returned by [NewRelayKeyring] for a bad key set.
	ErrRelayKey = errors.New("tokens: bad relay secret")
)

// RelayOption is a bit of [RelayConnection].Options.
type RelayOption uint16

// RelayConnection is what a sealed relay connection data blob carries.
type RelayConnection struct {
	// KeyID is the id of the relay secret the blob is sealed under; set by
	// Open, ignored by Seal (which uses the keyring's current key).
	KeyID byte
	// AllocationID is the allocation's UUID, in RFC 4122 byte order.
	AllocationID [16]byte
	// HostAllocationID is, for a joiner, the host's allocation id; zero for
	// a host.
	HostAllocationID [16]byte
	// NodeID is the relay node serving the allocation (≤ RelayMaxNodeID
	// bytes).
	NodeID string
	// BootEpoch is that node's boot epoch: a node refuses blobs of another.
	BootEpoch uint64
	// Issued is when the allocation was made (second precision); a node
	// refuses the first BIND after Issued plus its bind timeout.
	Issued time.Time
	// Expires is when the blob stops being accepted (second precision).
	Expires time.Time
	// Region is the allocation's region (≤ RelayMaxRegion bytes).
	Region string
	// MaxConnections is the host's peer cap (peers, the host excluded).
	MaxConnections uint16
	// Options are option bits, none defined yet.
	Options RelayOption
	// IdleTimeout, when not zero, overrides the node's idle timeout for
	// this allocation (second precision, at most 65535 s).
	IdleTimeout time.Duration
}

// IsJoiner reports whether c is a joiner's allocation (it names a host).
func (c *RelayConnection) IsJoiner() bool { return c.HostAllocationID != [16]byte{} }

// RelayKey is one relay secret and its id.
type RelayKey struct {
	// ID is written in clear in every blob sealed under this secret.
	ID byte
	// Secret is at least RelayMinSecret random bytes, shared by the control
	// plane and every relay node of the deployment. Never log it.
	Secret []byte
}

// RelayKeyring seals and opens relay connection data and derives
// allocation keys. It is immutable and safe for concurrent use.
type RelayKeyring struct {
	current byte
	keys    [256]*relayKey
}

type relayKey struct {
	secret []byte
	seal   cipherX
}

type cipherX interface {
	Seal(dst, nonce, plaintext, additionalData []byte) []byte
	Open(dst, nonce, ciphertext, additionalData []byte) ([]byte, error)
}

// NewRelayKeyring returns a keyring that seals with keys[0] and opens blobs
// of every key given. Ids must be distinct and secrets at least
// RelayMinSecret bytes; it returns an error wrapping ErrRelayKey otherwise.
func NewRelayKeyring(keys ...RelayKey) (*RelayKeyring, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("tokens: relay keyring: no key: %w", ErrRelayKey)
	}
	r := &RelayKeyring{current: keys[0].ID}
	for _, k := range keys {
		if len(k.Secret) < RelayMinSecret {
			return nil, fmt.Errorf("tokens: relay key %d: secret of %d bytes, want at least %d: %w", k.ID, len(k.Secret), RelayMinSecret, ErrRelayKey)
		}
		if r.keys[k.ID] != nil {
			return nil, fmt.Errorf("tokens: relay key %d given twice: %w", k.ID, ErrRelayKey)
		}
		secret := append([]byte(nil), k.Secret...)
		sk, err := hkdf.Key(sha256.New, secret, nil, sealInfo, chacha20poly1305.KeySize)
		if err != nil {
			return nil, fmt.Errorf("tokens: relay key %d: %w", k.ID, err)
		}
		aead, err := chacha20poly1305.NewX(sk)
		if err != nil {
			return nil, fmt.Errorf("tokens: relay key %d: %w", k.ID, err)
		}
		r.keys[k.ID] = &relayKey{secret: secret, seal: aead}
	}
	return r, nil
}

// Seal returns the sealed blob of c (at most RelayMaxBlob bytes) under the
// current key. It fails for a node id or region over their limits.
func (r *RelayKeyring) Seal(c RelayConnection) ([]byte, error) {
	if len(c.NodeID) > RelayMaxNodeID {
		return nil, fmt.Errorf("tokens: relay node id of %d bytes, max %d", len(c.NodeID), RelayMaxNodeID)
	}
	if len(c.Region) > RelayMaxRegion {
		return nil, fmt.Errorf("tokens: relay region of %d bytes, max %d", len(c.Region), RelayMaxRegion)
	}
	idle := c.IdleTimeout / time.Second
	if idle < 0 || idle > 0xFFFF {
		return nil, fmt.Errorf("tokens: relay idle timeout %s out of range", c.IdleTimeout)
	}
	k := r.keys[r.current]
	p := make([]byte, 0, relayFixedPlain+2+len(c.NodeID)+len(c.Region))
	p = append(p, relayVersion)
	p = append(p, c.AllocationID[:]...)
	p = append(p, c.HostAllocationID[:]...)
	p = binary.BigEndian.AppendUint64(p, c.BootEpoch)
	p = binary.BigEndian.AppendUint64(p, uint64(c.Issued.Unix()))
	p = binary.BigEndian.AppendUint64(p, uint64(c.Expires.Unix()))
	p = binary.BigEndian.AppendUint16(p, c.MaxConnections)
	p = binary.BigEndian.AppendUint16(p, uint16(c.Options))
	p = binary.BigEndian.AppendUint16(p, uint16(idle))
	p = append(p, byte(len(c.NodeID)))
	p = append(p, c.NodeID...)
	p = append(p, byte(len(c.Region)))
	p = append(p, c.Region...)

	n := len(p) + relayTagSize
	out := make([]byte, relayHeader, relayHeader+n)
	out[0] = r.current
	out[1] = byte(n)
	if _, err := rand.Read(out[2:relayHeader]); err != nil {
		return nil, fmt.Errorf("tokens: relay nonce: %w", err)
	}
	out = k.seal.Seal(out, out[2:relayHeader], p, out[:2])
	return out, nil
}

// Open authenticates and decodes a blob. field may be the whole 255-byte
// connection data field of a BIND or CONNECT_REQUEST: bytes after the blob
// must be zero. Every failure is ErrRelayBlob; Open does not check the
// expiry, node or epoch (the relay node does). A blob that fails is
// rejected after one AEAD pass over at most 229 bytes.
func (r *RelayKeyring) Open(field []byte) (RelayConnection, error) {
	var c RelayConnection
	if len(field) < relayHeader+relayTagSize+relayFixedPlain+2 {
		return c, ErrRelayBlob
	}
	k := r.keys[field[0]]
	n := int(field[1])
	if k == nil || n < relayTagSize+relayFixedPlain+2 || relayHeader+n > len(field) {
		return c, ErrRelayBlob
	}
	for _, b := range field[relayHeader+n:] {
		if b != 0 {
			return c, ErrRelayBlob
		}
	}
	var buf [RelayMaxBlob]byte
	p, err := k.seal.Open(buf[:0], field[2:relayHeader], field[relayHeader:relayHeader+n], field[:2])
	if err != nil || p[0] != relayVersion {
		return c, ErrRelayBlob
	}
	c.KeyID = field[0]
	copy(c.AllocationID[:], p[1:17])
	copy(c.HostAllocationID[:], p[17:33])
	c.BootEpoch = binary.BigEndian.Uint64(p[33:])
	c.Issued = time.Unix(int64(binary.BigEndian.Uint64(p[41:])), 0)
	c.Expires = time.Unix(int64(binary.BigEndian.Uint64(p[49:])), 0)
	c.MaxConnections = binary.BigEndian.Uint16(p[57:])
	c.Options = RelayOption(binary.BigEndian.Uint16(p[59:]))
	c.IdleTimeout = time.Duration(binary.BigEndian.Uint16(p[61:])) * time.Second
	rest := p[relayFixedPlain:]
	node, rest, ok := lenPrefixed(rest, RelayMaxNodeID)
	if !ok {
		return RelayConnection{}, ErrRelayBlob
	}
	region, rest, ok := lenPrefixed(rest, RelayMaxRegion)
	if !ok || len(rest) != 0 {
		return RelayConnection{}, ErrRelayBlob
	}
	c.NodeID, c.Region = string(node), string(region)
	return c, nil
}

func lenPrefixed(b []byte, max int) (v, rest []byte, ok bool) {
	if len(b) < 1 || int(b[0]) > max || len(b) < 1+int(b[0]) {
		return nil, nil, false
	}
	return b[1 : 1+int(b[0])], b[1+int(b[0]):], true
}

// AllocationKey returns the 64-byte key of an allocation: HKDF-SHA256 of
// the relay secret keyID with the allocation id as info (after a fixed
// label), so a relay node computes it from the id alone. It fails with
// ErrRelayBlob for an unknown key id.
func (r *RelayKeyring) AllocationKey(keyID byte, id [16]byte) ([RelayKeySize]byte, error) {
	var out [RelayKeySize]byte
	k := r.keys[keyID]
	if k == nil {
		return out, ErrRelayBlob
	}
	key, err := hkdf.Key(sha256.New, k.secret, nil, allocKeyInfo+string(id[:]), RelayKeySize)
	if err != nil {
		return out, fmt.Errorf("tokens: relay allocation key: %w", err)
	}
	copy(out[:], key)
	return out, nil
}

// RelayKeyIDByte is the index of the allocation id byte that holds the id
// of the relay secret its key derives from (see [RelayKeyring.NewAllocationID]).
const RelayKeyIDByte = 15

// NewAllocationID returns a random version 4 UUID for a new allocation,
// whose last byte is the id of the keyring's current secret: the one Seal
// uses now, and so the one its allocation key derives from. A DTLS client
// names its allocation by id alone (the PSK identity), so the relay node
// reads the key id there ([RelayKeyring.AllocationKeyOfID]); the id keeps
// 114 random bits. It fails only when r fails.
func (r *RelayKeyring) NewAllocationID(rand io.Reader) ([16]byte, error) {
	var id [16]byte
	if _, err := io.ReadFull(rand, id[:]); err != nil {
		return id, fmt.Errorf("tokens: relay allocation id: %w", err)
	}
	id[6] = id[6]&0x0f | 0x40 // version 4
	id[8] = id[8]&0x3f | 0x80 // RFC 4122 variant
	id[RelayKeyIDByte] = r.current
	return id, nil
}

// AllocationKeyOfID returns the key of an allocation made with
// [RelayKeyring.NewAllocationID]: AllocationKey with the key id in the
// id's last byte. It is the DTLS pre-shared key of the allocation whose id
// is the PSK identity. It fails with ErrRelayBlob when that key id is not
// in the keyring.
func (r *RelayKeyring) AllocationKeyOfID(id [16]byte) ([RelayKeySize]byte, error) {
	return r.AllocationKey(id[RelayKeyIDByte], id)
}
