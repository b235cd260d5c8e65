package roomudp

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/switchboardgg/switchboard/internal/sealed"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// Datagram kinds: a datagram's first byte.
const (
	// KindSession marks a sealed datagram (SESSION, or HANDSHAKE REPLY):
	// it is internal/sealed's version byte.
	KindSession = sealed.Version
	// KindHandshake marks a HANDSHAKE, client to node.
	KindHandshake = 2
)

// SESSION channels: the first byte of a SESSION datagram's payload.
const (
	ChannelKCP     = 0 // one KCP datagram of conversation WELCOME.conv
	ChannelMessage = 1 // exactly one im.game.v1 message, unreliable
)

// Sizes and limits of the format.
const (
	// KeyIDSize is the size of a key id: a connect ticket's random id.
	KeyIDSize = 16
	// NonceSize is the size of each side's handshake nonce.
	NonceSize = sealed.NonceSize
	// KeySize is the size of the session key and the UDP secret.
	KeySize = sealed.KeySize
	// HandshakeHeaderSize is the cleartext before a HANDSHAKE's sealed
	// part: the kind, the key id and the client's nonce.
	HandshakeHeaderSize = 1 + KeyIDSize + NonceSize
	// HandshakeSize is the exact size of every HANDSHAKE datagram.
	HandshakeSize = 1200
	// MaxHandshakeLen is the most handshake bytes a HANDSHAKE carries.
	MaxHandshakeLen = HandshakeSize - HandshakeHeaderSize - sealed.Overhead - 2
	// MaxDatagram is the largest datagram anyone accepts.
	MaxDatagram = 1472
	// DefaultMTU is the largest datagram a side sends by default.
	DefaultMTU = 1200
	// MinMTU is the smallest MTU setting: a KCP segment of 256 bytes.
	MinMTU = 256 + SessionOverhead
	// SessionOverhead is what a SESSION datagram adds to its body: the
	// sealing and the channel byte.
	SessionOverhead = sealed.Overhead + 1
	// ReplyOverhead is what a HANDSHAKE REPLY adds to its message.
	ReplyOverhead = sealed.Overhead + NonceSize
	// HandshakeKeyID is the key id in the header of a HANDSHAKE's and a
	// HANDSHAKE REPLY's sealed part.
	HandshakeKeyID = 0
)

// Parameters of the KCP conversation both sides use.
const (
	KCPWindow   = 256                   // send and receive windows, in segments
	KCPInterval = 10 * time.Millisecond // flush interval, no-delay mode
)

// Timing of the handshake.
const (
	// Retransmit is how often a client resends its HANDSHAKE.
	Retransmit = 250 * time.Millisecond
	// Fallback is how long a client waits for a reply before it tries
	// WebSocket.
	Fallback = 2 * time.Second
)

// Labels of [sealed.DeriveKeys].
const (
	LabelHandshake = "rooms handshake"
	LabelSession   = "rooms session"
)

// SecretLabel is the HMAC message that derives the UDP secret from the
// signing key ([Secret]; tokens.Signer.Derive(SecretLabel) is the same).
const SecretLabel = "switchboard rooms udp secret v1"

const sessionKeyInfo = "switchboard rooms udp session key v1"

// Errors of the parsers.
var (
	ErrShort   = errors.New("roomudp: datagram too short")
	ErrKind    = errors.New("roomudp: unknown datagram kind")
	ErrSize    = errors.New("roomudp: handshake datagram is not 1200 bytes")
	ErrPadding = errors.New("roomudp: bad handshake length or padding")
	ErrTooLong = errors.New("roomudp: handshake too long")
	ErrKeyID   = errors.New("roomudp: bad key id")
	ErrChannel = errors.New("roomudp: unknown channel")
)

// KeyID is a key's public id: the 16 bytes of a connect ticket's id.
type KeyID [KeyIDSize]byte

// ParseKeyID decodes connect.key_id (unpadded base64url of 16 bytes).
func ParseKeyID(s string) (KeyID, error) {
	var k KeyID
	if base64.RawURLEncoding.DecodedLen(len(s)) != KeyIDSize {
		return k, fmt.Errorf("roomudp: key id of %d characters: %w", len(s), ErrKeyID)
	}
	n, err := base64.RawURLEncoding.Strict().Decode(k[:], []byte(s))
	if err != nil || n != KeyIDSize {
		return KeyID{}, fmt.Errorf("roomudp: key id: %w", ErrKeyID)
	}
	return k, nil
}

// String returns the key id as connect.key_id shows it.
func (k KeyID) String() string { return base64.RawURLEncoding.EncodeToString(k[:]) }

// Secret derives the UDP secret from the deployment's signing key:
// HMAC-SHA256(signingKey, "switchboard rooms udp secret v1").
func Secret(signingKey []byte) [KeySize]byte {
	m := hmac.New(sha256.New, signingKey)
	m.Write([]byte(SecretLabel))
	var s [KeySize]byte
	m.Sum(s[:0])
	return s
}

// SessionKey derives the session key of key id k:
// HMAC-SHA256(secret, "switchboard rooms udp session key v1" || k).
func SessionKey(secret *[KeySize]byte, k KeyID) [KeySize]byte {
	m := hmac.New(sha256.New, secret[:])
	m.Write([]byte(sessionKeyInfo))
	m.Write(k[:])
	var s [KeySize]byte
	m.Sum(s[:0])
	return s
}

// HandshakeKeys derives the keys of one connection attempt's handshake:
// the responder's nonce is all zeros.
func HandshakeKeys(sessionKey *[KeySize]byte, clientNonce *[NonceSize]byte) (sealed.Keys, error) {
	var zero [NonceSize]byte
	return sealed.DeriveKeys(sessionKey[:], clientNonce[:], zero[:], LabelHandshake)
}

// SessionKeys derives the keys of the session a WELCOME opens.
func SessionKeys(sessionKey *[KeySize]byte, clientNonce, serverNonce *[NonceSize]byte) (sealed.Keys, error) {
	return sealed.DeriveKeys(sessionKey[:], clientNonce[:], serverNonce[:], LabelSession)
}

// AppendHandshake appends a HANDSHAKE datagram to dst: the kind, k, the
// client's nonce and hs (a rooms.md §3 handshake, at most
// [MaxHandshakeLen] bytes) sealed by s (the handshake I2R key, key id
// [HandshakeKeyID]) behind its u16 length and padded with zeros to
// [HandshakeSize] bytes. On error dst is returned unchanged.
func AppendHandshake(dst []byte, s *sealed.Sealer, k KeyID, clientNonce *[NonceSize]byte, hs []byte) ([]byte, error) {
	if len(hs) > MaxHandshakeLen {
		return dst, ErrTooLong
	}
	var plain [HandshakeSize - HandshakeHeaderSize - sealed.Overhead]byte
	binary.BigEndian.PutUint16(plain[:], uint16(len(hs)))
	copy(plain[2:], hs)
	start := len(dst)
	dst = append(dst, KindHandshake)
	dst = append(dst, k[:]...)
	dst = append(dst, clientNonce[:]...)
	out, err := s.Seal(dst, plain[:])
	if err != nil {
		return dst[:start], err
	}
	return out, nil
}

// Handshake is the cleartext of a HANDSHAKE datagram.
type Handshake struct {
	KeyID       KeyID
	ClientNonce [NonceSize]byte
	Sealed      []byte // the sealed part; aliases the datagram
}

// ParseHandshake reads a HANDSHAKE datagram's cleartext. It returns
// [ErrKind] when d is not a HANDSHAKE and [ErrSize] when it is not
// exactly [HandshakeSize] bytes. Nothing is authenticated yet.
func ParseHandshake(d []byte) (Handshake, error) {
	var h Handshake
	if len(d) == 0 || d[0] != KindHandshake {
		return h, ErrKind
	}
	if len(d) != HandshakeSize {
		return h, ErrSize
	}
	copy(h.KeyID[:], d[1:])
	copy(h.ClientNonce[:], d[1+KeyIDSize:])
	h.Sealed = d[HandshakeHeaderSize:]
	return h, nil
}

// HandshakeBytes returns the rooms.md §3 handshake inside an opened
// HANDSHAKE payload, checking its length and that the padding is zeros.
func HandshakeBytes(payload []byte) ([]byte, error) {
	if len(payload) < 2 {
		return nil, ErrPadding
	}
	n := int(binary.BigEndian.Uint16(payload))
	if n == 0 || n > len(payload)-2 {
		return nil, ErrPadding
	}
	for _, b := range payload[2+n:] {
		if b != 0 {
			return nil, ErrPadding
		}
	}
	return payload[2 : 2+n], nil
}

// AppendReply appends a HANDSHAKE REPLY payload to dst: the node's nonce,
// then msg (WELCOME or ERROR). The caller seals it with the handshake
// R2I key.
func AppendReply(dst []byte, serverNonce *[NonceSize]byte, msg []byte) []byte {
	return append(append(dst, serverNonce[:]...), msg...)
}

// ParseReply splits an opened HANDSHAKE REPLY payload.
func ParseReply(payload []byte) (serverNonce [NonceSize]byte, msg []byte, err error) {
	if len(payload) <= NonceSize {
		return serverNonce, nil, ErrShort
	}
	copy(serverNonce[:], payload)
	return serverNonce, payload[NonceSize:], nil
}

// ParseSession splits an opened SESSION payload into its channel and
// body; it returns [ErrChannel] for an unknown channel and [ErrShort]
// for an empty payload or body.
func ParseSession(payload []byte) (channel byte, body []byte, err error) {
	if len(payload) < 2 {
		return 0, nil, ErrShort
	}
	if payload[0] != ChannelKCP && payload[0] != ChannelMessage {
		return payload[0], nil, ErrChannel
	}
	return payload[0], payload[1:], nil
}

// customReliable is the offset of CUSTOM's reliable byte: type, to
// (u16), from (u8).
const customReliable = 1 + 2 + 1

// Unreliable reports whether msg (one im.game.v1 message) may travel on
// [ChannelMessage]: from the node FRAME, PONG and CUSTOM with
// reliable=false; from a client PING and CUSTOM with reliable=false.
func Unreliable(msg []byte, fromNode bool) bool {
	if len(msg) == 0 {
		return false
	}
	switch roomwire.Type(msg[0]) {
	case roomwire.TypeCustom:
		return len(msg) > customReliable && msg[customReliable] == 0
	case roomwire.TypeFrame, roomwire.TypePong:
		return fromNode
	case roomwire.TypePing:
		return !fromNode
	}
	return false
}
