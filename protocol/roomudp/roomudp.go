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
	// ChannelInputs (client → node) carries the client's newest INPUTs
	// not yet acknowledged, each with its sequence number: see
	// [AppendInputs] and [ParseInputs].
	ChannelInputs = 2
	// ChannelFrame (node → client) carries one FRAME behind the highest
	// input sequence the node has taken from this session: see
	// [AppendFrame] and [ParseFrame].
	ChannelFrame = 3
	// ChannelPathChallenge (node → client) carries [PathDataSize] random
	// bytes that the node sends to a session's new source address before
	// it sends there freely (rooms-udp.md §8): see [AppendPath].
	ChannelPathChallenge = 4
	// ChannelPathResponse (client → node) carries the [PathDataSize]
	// bytes of a PATH_CHALLENGE the client received, back at once.
	ChannelPathResponse = 5
)

// PathDataSize is the size of a PATH_CHALLENGE's and a PATH_RESPONSE's
// body: as QUIC's (RFC 9000 §19.17).
const PathDataSize = 8

// PathData is the body of a PATH_CHALLENGE or PATH_RESPONSE.
type PathData [PathDataSize]byte

// Sizes and limits of the INPUTS and FRAME channels.
const (
	// MaxInputsPerDatagram is the most INPUTs one INPUTS datagram
	// repeats. With inputs of 128 bytes they fit in 1,093 bytes.
	MaxInputsPerDatagram = 8
	// InputsHeaderSize is an INPUTS body's header: first_seq u32, count u8.
	InputsHeaderSize = 5
	// MaxInputEntry is the largest entry of an INPUTS body: a length
	// byte and an INPUT message (type, ack_frame, a 2-byte varint
	// length and 128 bytes of data).
	MaxInputEntry = 1 + 1 + 4 + 2 + roomwire.MaxInputLen
	// FrameHeaderSize is a FRAME body's header: input_seq u32.
	FrameHeaderSize = 4
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
	ErrInputs  = errors.New("roomudp: malformed INPUTS body")
	ErrFrame   = errors.New("roomudp: malformed FRAME body")
	ErrPath    = errors.New("roomudp: malformed PATH_CHALLENGE or PATH_RESPONSE body")
	// ErrDirection is [CheckDirection]'s: a channel the sender may not use.
	ErrDirection = errors.New("roomudp: channel not sent in this direction")
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
	if payload[0] > ChannelPathResponse {
		return payload[0], nil, ErrChannel
	}
	return payload[0], payload[1:], nil
}

// CheckDirection returns [ErrDirection] when channel ch (a known one) is
// not sent by that side: INPUTS and PATH_RESPONSE go client → node only,
// FRAME and PATH_CHALLENGE node → client only. KCP and MESSAGE go both
// ways.
func CheckDirection(ch byte, fromNode bool) error {
	switch ch {
	case ChannelInputs, ChannelPathResponse:
		if fromNode {
			return ErrDirection
		}
	case ChannelFrame, ChannelPathChallenge:
		if !fromNode {
			return ErrDirection
		}
	}
	return nil
}

// AppendPath appends a PATH_CHALLENGE or PATH_RESPONSE body to dst: the
// [PathDataSize] bytes of d.
func AppendPath(dst []byte, d *PathData) []byte { return append(dst, d[:]...) }

// ParsePath reads a PATH_CHALLENGE or PATH_RESPONSE body; it returns
// [ErrPath] unless the body is exactly [PathDataSize] bytes.
func ParsePath(body []byte) (PathData, error) {
	var d PathData
	if len(body) != PathDataSize {
		return d, ErrPath
	}
	copy(d[:], body)
	return d, nil
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

// AppendInputsHeader appends an INPUTS body's header to dst: the sequence
// number of its first (oldest) input and how many follow. Append each
// input with [AppendInputEntry], oldest first, sequence numbers
// consecutive.
func AppendInputsHeader(dst []byte, firstSeq uint32, count int) []byte {
	dst = binary.BigEndian.AppendUint32(dst, firstSeq)
	return append(dst, byte(count))
}

// AppendInputEntry appends one entry of an INPUTS body: the length of
// input (one encoded INPUT message, at most [MaxInputEntry]−1 bytes) and
// the message.
func AppendInputEntry(dst, input []byte) []byte {
	return append(append(dst, byte(len(input))), input...)
}

// Inputs is a parsed INPUTS body. Its entries alias the body.
type Inputs struct {
	FirstSeq uint32 // the sequence number of the first entry
	Count    int    // 1..MaxInputsPerDatagram
	rest     []byte // the entries not yet returned by Next
	next     uint32
}

// Last returns the sequence number of the last (newest) entry.
func (in *Inputs) Last() uint32 { return in.FirstSeq + uint32(in.Count) - 1 }

// Next returns the next entry's sequence number and INPUT message, and
// false once every entry has been returned.
func (in *Inputs) Next() (seq uint32, msg []byte, ok bool) {
	if len(in.rest) == 0 {
		return 0, nil, false
	}
	n := int(in.rest[0])
	msg, in.rest = in.rest[1:1+n], in.rest[1+n:]
	seq = in.next
	in.next++
	return seq, msg, true
}

// ParseInputs checks an INPUTS body whole before anything is used: the
// first sequence number is at least 1 and the last does not pass 2³²−1,
// the count is 1..[MaxInputsPerDatagram], every entry is a non-empty
// message of type INPUT of at most [MaxInputEntry]−1 bytes, and no byte
// follows the last entry. It returns [ErrInputs] otherwise. The INPUT
// messages themselves are decoded by the receiver.
func ParseInputs(body []byte) (Inputs, error) {
	if len(body) < InputsHeaderSize {
		return Inputs{}, ErrInputs
	}
	first := binary.BigEndian.Uint32(body)
	count := int(body[4])
	if first == 0 || count == 0 || count > MaxInputsPerDatagram || uint64(first)+uint64(count)-1 > 1<<32-1 {
		return Inputs{}, ErrInputs
	}
	rest := body[InputsHeaderSize:]
	for i, r := 0, rest; i < count; i++ {
		if len(r) < 2 {
			return Inputs{}, ErrInputs
		}
		n := int(r[0])
		if n == 0 || n > MaxInputEntry-1 || n > len(r)-1 || roomwire.Type(r[1]) != roomwire.TypeInput {
			return Inputs{}, ErrInputs
		}
		r = r[1+n:]
		if i == count-1 && len(r) != 0 {
			return Inputs{}, ErrInputs
		}
	}
	return Inputs{FirstSeq: first, Count: count, rest: rest, next: first}, nil
}

// AppendFrame appends a FRAME body to dst: inputSeq, the highest input
// sequence number the node has taken from the session (0 for none), then
// frame, one encoded FRAME message.
func AppendFrame(dst []byte, inputSeq uint32, frame []byte) []byte {
	return append(binary.BigEndian.AppendUint32(dst, inputSeq), frame...)
}

// ParseFrame splits a FRAME body; it returns [ErrFrame] when the body is
// too short or its message is not a FRAME. The message aliases body.
func ParseFrame(body []byte) (inputSeq uint32, frame []byte, err error) {
	if len(body) <= FrameHeaderSize || roomwire.Type(body[FrameHeaderSize]) != roomwire.TypeFrame {
		return 0, nil, ErrFrame
	}
	return binary.BigEndian.Uint32(body), body[FrameHeaderSize:], nil
}
