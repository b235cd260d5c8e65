package tokens

import (
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/crypto/chacha20poly1305"
)

// Sealed hub tickets.
//
// The p2p API (/p2p/v1) gives a client a hub ticket; the client sends it,
// unchanged, in the HELLO of the hub's TLS protocol (docs/protocol/p2p.md
// §8.1). The ticket is sealed with XChaCha20-Poly1305 under a key derived
// from the deployment's signing key (store.DB.SigningKey), which the control
// plane and every hub read from the store, so the hub admits a peer with no
// lookup. Its text is
//
//	hbt1.<base64url(key id || nonce || ciphertext)>
//
// unpadded base64url, canonical spelling only, with
//
//	offset size field
//	0      1    key id, in clear: which deployment key sealed it
//	1      24   nonce, random
//	25     n    XChaCha20-Poly1305(key, nonce, plaintext, ad = "hbt1." || key id)
//
// and the plaintext (version 1, integers big-endian):
//
//	0  1  version = 1
//	1  8  issued, Unix milliseconds
//	9  8  expires, Unix milliseconds
//	17 1  flags, none defined (0)
//	18 1  length of the username, then the username (1..64 bytes)
//	.. 1  length of the network, then the network (1..64 bytes)
//	.. 1  length of the peer id, then the peer id (1..96 bytes, "<username>~<random>")
//	.. 1  length of the hub node id, then the id (1..64 bytes)
//
// The seal key is HKDF-SHA256(secret, salt = none, info = "switchboard hub
// ticket v1", 32 bytes), so it is unrelated to the HMAC key the other tokens
// use even though both come from one deployment secret.
//
// Rotation: a keyring seals with its first key and opens tickets of every
// key it holds. To rotate, give every hub the new key (a new id) as well as
// the old one, then let the API seal with the new one; drop the old key once
// [HubTicketMaxTTL] has passed.

// Limits of [HubTicket].
const (
	// HubMaxUsername is the longest username a ticket carries, in bytes.
	HubMaxUsername = 64
	// HubMaxNetwork is the longest network name, in bytes.
	HubMaxNetwork = 64
	// HubMaxPeerID is the longest peer id, in bytes.
	HubMaxPeerID = 96
	// HubMaxNodeID is the longest hub node id, in bytes.
	HubMaxNodeID = 64
	// HubTicketMaxTTL is the longest lifetime Seal accepts (expires −
	// issued); the API's tickets are short-lived (a minute is plenty).
	HubTicketMaxTTL = time.Hour
	// HubMinSecret is the shortest secret a [HubKey] accepts, in bytes.
	HubMinSecret = 32
	// PrefixHubTicket is the text prefix of a hub ticket.
	PrefixHubTicket = "hbt1."
)

const (
	hubTicketVersion = 1
	hubFixedPlain    = 18
	hubHeader        = 1 + chacha20poly1305.NonceSizeX
	hubMaxPlain      = hubFixedPlain + 4 + HubMaxUsername + HubMaxNetwork + HubMaxPeerID + HubMaxNodeID
	hubMaxRaw        = hubHeader + hubMaxPlain + chacha20poly1305.Overhead
	hubSealInfo      = "switchboard hub ticket v1"
)

// HubTicketMaxLen is the longest ticket text Seal returns and Open reads,
// well under the 2,048 bytes a HELLO carries.
var HubTicketMaxLen = len(PrefixHubTicket) + b64.EncodedLen(hubMaxRaw)

// Errors of the hub tickets.
var (
	// ErrHubTicket is returned by [HubKeyring.Open] for a ticket that is
	// malformed, sealed under an unknown key id, or fails authentication.
	ErrHubTicket = errors.New("tokens: hub ticket invalid")
	// ErrHubTicketExpired is returned by [HubKeyring.Open], with the
	// contents, for an authentic ticket whose expiry is not after now.
	ErrHubTicketExpired = errors.New("tokens: hub ticket expired")
	// ErrHubKey is returned by [NewHubKeyring] for a bad key set.
	ErrHubKey = errors.New("tokens: bad hub ticket key")
)

// HubTicket is what a sealed hub ticket carries: who may join which network
// as which peer, on which hub, until when.
type HubTicket struct {
	// KeyID is the id of the key that sealed the ticket; set by Open,
	// ignored by Seal (which uses the keyring's current key).
	KeyID byte
	// Username is the logged-in user (1..HubMaxUsername bytes).
	Username string
	// Network is the network the peer joins (1..HubMaxNetwork bytes).
	Network string
	// PeerID is the peer id the hub gives the connection; it starts with
	// Username followed by '~' (at most HubMaxPeerID bytes).
	PeerID string
	// HubID is the node id of the hub the network lives on; a hub refuses
	// tickets for another (1..HubMaxNodeID bytes).
	HubID string
	// Issued is when the API made the ticket (millisecond precision).
	Issued time.Time
	// Expires is when the ticket stops being admitted (millisecond
	// precision); at most HubTicketMaxTTL after Issued.
	Expires time.Time
}

// HubKey is one key of a [HubKeyring].
type HubKey struct {
	// ID is written in clear in every ticket sealed under this key.
	ID byte
	// Secret is the deployment secret the seal key is derived from: the
	// store's signing key (at least HubMinSecret bytes). Never log it.
	Secret []byte
}

// HubKeyring seals and opens hub tickets. It is immutable and safe for
// concurrent use.
type HubKeyring struct {
	current byte
	keys    [256]hubAEAD
}

type hubAEAD interface {
	Seal(dst, nonce, plaintext, additionalData []byte) []byte
	Open(dst, nonce, ciphertext, additionalData []byte) ([]byte, error)
}

// NewHubKeyring returns a keyring that seals with keys[0] and opens tickets
// of every key given. Ids must be distinct and secrets at least
// HubMinSecret bytes; it returns an error wrapping ErrHubKey otherwise.
func NewHubKeyring(keys ...HubKey) (*HubKeyring, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("tokens: hub keyring: no key: %w", ErrHubKey)
	}
	r := &HubKeyring{current: keys[0].ID}
	for _, k := range keys {
		if len(k.Secret) < HubMinSecret {
			return nil, fmt.Errorf("tokens: hub key %d: secret of %d bytes, want at least %d: %w", k.ID, len(k.Secret), HubMinSecret, ErrHubKey)
		}
		if r.keys[k.ID] != nil {
			return nil, fmt.Errorf("tokens: hub key %d given twice: %w", k.ID, ErrHubKey)
		}
		sk, err := hkdf.Key(sha256.New, k.Secret, nil, hubSealInfo, chacha20poly1305.KeySize)
		if err != nil {
			return nil, fmt.Errorf("tokens: hub key %d: %w", k.ID, err)
		}
		aead, err := chacha20poly1305.NewX(sk)
		if err != nil {
			return nil, fmt.Errorf("tokens: hub key %d: %w", k.ID, err)
		}
		r.keys[k.ID] = aead
	}
	return r, nil
}

// Seal returns the ticket's text form, sealed under the current key. It
// fails for fields that are empty or over their limits, a peer id that does
// not start with the username and '~', or an expiry not after the issue
// time or more than HubTicketMaxTTL after it.
func (r *HubKeyring) Seal(t HubTicket) (string, error) {
	if err := t.check(); err != nil {
		return "", err
	}
	if !t.Expires.After(t.Issued) || t.Expires.Sub(t.Issued) > HubTicketMaxTTL {
		return "", fmt.Errorf("tokens: hub ticket lifetime %s out of range (0, %s]", t.Expires.Sub(t.Issued), HubTicketMaxTTL)
	}
	p := make([]byte, 0, hubFixedPlain+4+len(t.Username)+len(t.Network)+len(t.PeerID)+len(t.HubID))
	p = append(p, hubTicketVersion)
	p = binary.BigEndian.AppendUint64(p, uint64(t.Issued.UnixMilli()))
	p = binary.BigEndian.AppendUint64(p, uint64(t.Expires.UnixMilli()))
	p = append(p, 0)
	for _, s := range [...]string{t.Username, t.Network, t.PeerID, t.HubID} {
		p = append(p, byte(len(s)))
		p = append(p, s...)
	}
	raw := make([]byte, hubHeader, hubHeader+len(p)+chacha20poly1305.Overhead)
	raw[0] = r.current
	if _, err := rand.Read(raw[1:hubHeader]); err != nil {
		return "", fmt.Errorf("tokens: hub ticket nonce: %w", err)
	}
	raw = r.keys[r.current].Seal(raw, raw[1:hubHeader], p, hubAD(raw[0]))
	return PrefixHubTicket + b64.EncodeToString(raw), nil
}

// hubAD is the associated data of a ticket sealed under key id: the prefix
// and the key id, so neither can be swapped.
func hubAD(id byte) []byte {
	var ad [len(PrefixHubTicket) + 1]byte
	copy(ad[:], PrefixHubTicket)
	ad[len(PrefixHubTicket)] = id
	return ad[:]
}

func (t *HubTicket) check() error {
	for _, f := range [...]struct {
		name string
		v    string
		max  int
	}{
		{"username", t.Username, HubMaxUsername},
		{"network", t.Network, HubMaxNetwork},
		{"peer id", t.PeerID, HubMaxPeerID},
		{"hub id", t.HubID, HubMaxNodeID},
	} {
		if len(f.v) == 0 || len(f.v) > f.max {
			return fmt.Errorf("tokens: hub ticket %s of %d bytes, want 1..%d", f.name, len(f.v), f.max)
		}
	}
	if !strings.HasPrefix(t.PeerID, t.Username+"~") || len(t.PeerID) == len(t.Username)+1 {
		return errors.New("tokens: hub ticket peer id does not start with the username and '~'")
	}
	return nil
}

// Open authenticates and decodes a ticket's text (as bytes, straight from a
// HELLO). It returns ErrHubTicket for any ticket that is malformed, sealed
// under an unknown key or fails authentication, and ErrHubTicketExpired,
// with the contents, for an authentic one whose expiry is not after now. It
// does not check the hub id (the hub does). A ticket that fails is refused
// after at most one AEAD pass over about 360 bytes.
func (r *HubKeyring) Open(text []byte, now time.Time) (HubTicket, error) {
	var t HubTicket
	if len(text) > HubTicketMaxLen || len(text) < len(PrefixHubTicket) || string(text[:len(PrefixHubTicket)]) != PrefixHubTicket {
		return t, ErrHubTicket
	}
	enc := text[len(PrefixHubTicket):]
	for _, c := range enc {
		if c == '\r' || c == '\n' { // the decoder would skip them
			return t, ErrHubTicket
		}
	}
	var rawBuf [hubMaxRaw]byte
	n, err := b64.Decode(rawBuf[:], enc)
	if err != nil || n < hubHeader+chacha20poly1305.Overhead+hubFixedPlain+4 {
		return t, ErrHubTicket
	}
	raw := rawBuf[:n]
	aead := r.keys[raw[0]]
	if aead == nil {
		return t, ErrHubTicket
	}
	var plainBuf [hubMaxPlain]byte
	p, err := aead.Open(plainBuf[:0], raw[1:hubHeader], raw[hubHeader:], hubAD(raw[0]))
	if err != nil || p[0] != hubTicketVersion || p[17] != 0 {
		return t, ErrHubTicket
	}
	t.KeyID = raw[0]
	t.Issued = time.UnixMilli(int64(binary.BigEndian.Uint64(p[1:])))
	t.Expires = time.UnixMilli(int64(binary.BigEndian.Uint64(p[9:])))
	rest := p[hubFixedPlain:]
	var fields [4][]byte
	for i, max := range [...]int{HubMaxUsername, HubMaxNetwork, HubMaxPeerID, HubMaxNodeID} {
		var ok bool
		if fields[i], rest, ok = hubField(rest, max); !ok {
			return HubTicket{}, ErrHubTicket
		}
	}
	if len(rest) != 0 {
		return HubTicket{}, ErrHubTicket
	}
	t.Username, t.Network, t.PeerID, t.HubID = string(fields[0]), string(fields[1]), string(fields[2]), string(fields[3])
	if t.check() != nil {
		return HubTicket{}, ErrHubTicket
	}
	if now.UnixMilli() >= t.Expires.UnixMilli() {
		return t, ErrHubTicketExpired
	}
	return t, nil
}

// hubField reads a u8-length-prefixed field of 1..max bytes.
func hubField(b []byte, max int) (v, rest []byte, ok bool) {
	if len(b) < 1 || b[0] == 0 || int(b[0]) > max || len(b) < 1+int(b[0]) {
		return nil, nil, false
	}
	return b[1 : 1+int(b[0])], b[1+int(b[0]):], true
}
