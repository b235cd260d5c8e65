package p2pwire

import "strconv"

// Version is the protocol version a HELLO and a WELCOME carry. A hub answers
// a HELLO of another version with ERROR unsupported_version.
const Version = 1

// Kind is the first byte of every frame body and of every opened datagram:
// what the message is. Kinds 0x01–0x1F travel on the TLS link, 0x20–0x3F in
// sealed datagrams; PING and PONG travel on both.
type Kind uint8

// The kinds. Control kinds are exchanged with the other end of the link (the
// hub, or the peer at the other end of a direct path) and carry no routing
// fields; routed kinds carry To, From or the broadcast flag (see [Routing]).
const (
	KindNone Kind = 0 // not a kind: the Kind of errors found before the kind is known

	// Control, TLS link.
	KindHello      Kind = 0x01 // peer → hub, first frame: version, ticket or resume token
	KindWelcome    Kind = 0x02 // hub → peer, answer to HELLO: peer id, network, limits, UDP key
	KindPeerSet    Kind = 0x03 // hub → peer: the full peer set of the network (snapshot)
	KindPeerEvents Kind = 0x04 // hub → peer: coalesced joins and leaves since the last snapshot or events
	KindError      Kind = 0x05 // hub → peer: an error code, optionally about one message id or peer
	KindPing       Kind = 0x06 // either way, TLS or UDP: keepalive, answered by PONG with the same value
	KindPong       Kind = 0x07 // answer to PING
	KindGoodbye    Kind = 0x08 // peer → hub: leaving for good, no resume window

	// Hole punching, TLS link (punch.go).
	KindPunchRequest Kind = 0x09 // peer → hub: punch to a peer over UDP or TCP
	KindPunchOffer   Kind = 0x0A // hub → both peers: pair key, the other's candidates, deadline
	KindPunchResult  Kind = 0x0B // peer → hub: the punch's outcome

	// Routed, TLS link.
	KindMessage  Kind = 0x10 // one-way message to a peer or broadcast
	KindRequest  Kind = 0x11 // request to one peer; carries a message id
	KindResponse Kind = 0x12 // response to a REQUEST, with the request's message id

	// Datagrams (inside the sealed UDP envelope).
	KindRegister   Kind = 0x20 // peer → hub: proves UDP reachability, lists local candidates
	KindRegistered Kind = 0x21 // hub → peer: the public endpoint the hub observed
	KindUDPMessage Kind = 0x22 // unreliable message to a peer or broadcast
	KindReliable   Kind = 0x23 // a KCP segment of a reliable channel
	KindJumbo      Kind = 0x24 // one fragment of a jumbo message

	// Hole punching, between the peers (sealed with the pair key).
	KindPunchProbe Kind = 0x25 // to each candidate of the other side; first frame on a punched TCP connection
	KindPunchAck   Kind = 0x26 // answer to a probe, to its source

	// Path validation, between a peer and the hub's UDP port (path.go).
	KindPathChallenge Kind = 0x27 // hub → peer: 8 random bytes, to an endpoint not yet validated
	KindPathResponse  Kind = 0x28 // peer → hub: the challenge's 8 bytes, from the socket it came on
)

var kindNames = map[Kind]string{
	KindHello: "HELLO", KindWelcome: "WELCOME", KindPeerSet: "PEER_SET", KindPeerEvents: "PEER_EVENTS",
	KindError: "ERROR", KindPing: "PING", KindPong: "PONG", KindGoodbye: "GOODBYE",
	KindMessage: "MESSAGE", KindRequest: "REQUEST", KindResponse: "RESPONSE",
	KindRegister: "REGISTER", KindRegistered: "REGISTERED", KindUDPMessage: "UDP_MESSAGE",
	KindReliable: "RELIABLE", KindJumbo: "JUMBO",
	KindPunchRequest: "PUNCH_REQUEST", KindPunchOffer: "PUNCH_OFFER", KindPunchResult: "PUNCH_RESULT",
	KindPunchProbe: "PUNCH_PROBE", KindPunchAck: "PUNCH_ACK",
	KindPathChallenge: "PATH_CHALLENGE", KindPathResponse: "PATH_RESPONSE",
}

// String returns the kind's name as docs/protocol/p2p.md spells it, or
// "kind 0xNN" for a kind this version does not define.
func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return "kind 0x" + strconv.FormatUint(uint64(k)|0x100, 16)[1:]
}

// Known reports whether this version defines k.
func (k Kind) Known() bool { return kindClass[k] != classNone }

// Routed reports whether k carries routing fields (MESSAGE, REQUEST,
// RESPONSE, UDP_MESSAGE, RELIABLE, JUMBO).
func (k Kind) Routed() bool { return kindClass[k]&classRouted != 0 }

// FromHubOnly reports whether only a hub sends k (WELCOME, PEER_SET,
// PEER_EVENTS, ERROR, REGISTERED, PUNCH_OFFER, PATH_CHALLENGE).
func (k Kind) FromHubOnly() bool { return kindClass[k]&classHubOnly != 0 }

// ToHubOnly reports whether k is sent only by a peer, and only to a hub
// (HELLO, GOODBYE, PUNCH_REQUEST, PUNCH_RESULT, REGISTER, PATH_RESPONSE):
// a peer drops it from the hub or from another peer.
func (k Kind) ToHubOnly() bool { return kindClass[k]&classToHubOnly != 0 }

// OnStream reports whether k may be sent on the TLS link (and on a punched
// TCP connection).
func (k Kind) OnStream() bool { return kindClass[k]&classStream != 0 }

// OnDatagram reports whether k may be sent in a sealed datagram.
func (k Kind) OnDatagram() bool { return kindClass[k]&classDatagram != 0 }

const (
	classNone      = 0
	classStream    = 1 << 0
	classDatagram  = 1 << 1
	classRouted    = 1 << 2
	classBroadcast = 1 << 3 // routed kinds that may be broadcast
	classHubOnly   = 1 << 4 // control kinds only a hub sends
	classToHubOnly = 1 << 5 // control kinds only a peer sends, to a hub
)

var kindClass = [256]uint8{
	KindHello: classStream | classToHubOnly, KindWelcome: classStream | classHubOnly, KindPeerSet: classStream | classHubOnly,
	KindPeerEvents: classStream | classHubOnly, KindError: classStream | classHubOnly,
	KindPing: classStream | classDatagram, KindPong: classStream | classDatagram,
	KindGoodbye:    classStream | classToHubOnly,
	KindMessage:    classStream | classRouted | classBroadcast,
	KindRequest:    classStream | classRouted,
	KindResponse:   classStream | classRouted,
	KindRegister:   classDatagram | classToHubOnly,
	KindRegistered: classDatagram | classHubOnly,
	KindUDPMessage: classDatagram | classRouted | classBroadcast,
	KindReliable:   classDatagram | classRouted,
	KindJumbo:      classDatagram | classRouted | classBroadcast,

	KindPunchRequest: classStream | classToHubOnly,
	KindPunchOffer:   classStream | classHubOnly,
	KindPunchResult:  classStream | classToHubOnly,
	KindPunchProbe:   classDatagram,
	KindPunchAck:     classDatagram,

	KindPathChallenge: classDatagram | classHubOnly,
	KindPathResponse:  classDatagram | classToHubOnly,
}

// Limits. Each is enforced by the decoder and the encoder of the field it
// names; docs/protocol/p2p.md lists them with the layouts.
const (
	// FrameHeaderSize is the size of the length prefix of a TLS frame.
	FrameHeaderSize = 4
	// MinFrameSize is the smallest frame body: the kind and route flags bytes.
	MinFrameSize = 2
	// MaxFrameSize is the hard cap on a frame body, whatever a hub is
	// configured with: 16 MiB. A hub announces its own, smaller, maximum
	// in WELCOME.max_frame_size and a reader passes it to [ReadFrame].
	MaxFrameSize = 16 << 20
	// DefaultMaxFrameSize is the maximum frame body a reader accepts when
	// given 0: 1 MiB.
	DefaultMaxFrameSize = 1 << 20
	// MinAnnouncedFrameSize is the smallest WELCOME.max_frame_size: 4 KiB,
	// room for the largest control message header and envelope fields.
	MinAnnouncedFrameSize = 4 << 10

	MaxPeerIDLen      = 96   // peer id bytes; a username (≤ 64) plus "~" plus a random suffix
	MaxNetworkLen     = 64   // WELCOME network name bytes
	MaxTicketLen      = 2048 // HELLO ticket bytes
	MaxResumeTokenLen = 64   // HELLO and WELCOME resume token bytes
	MaxHeaderLen      = 1024 // envelope header string bytes
	MaxPairs          = 32   // envelope key/value pairs
	MaxKeyLen         = 64   // key bytes (at least 1)
	MaxValueLen       = 1024 // value bytes
	MaxReasonLen      = 256  // ERROR reason bytes
	MaxPeersInSet     = 4096 // PEER_SET peers and PEER_EVENTS events per frame
	MaxCandidates     = 16   // REGISTER candidates
	UDPSecretSize     = 32   // WELCOME UDP secret bytes
)

// PeerID names a peer on a hub. The hub assigns it per connection as
// "<username>~<random>": 1 to MaxPeerIDLen bytes of A-Z a-z 0-9 _ . - ~, so
// it prints safely and splits on whitespace. The wire treats it as opaque
// bytes compared bytewise.
type PeerID string

// Username returns the part of p before its last "~", or "" when there is
// none.
func (p PeerID) Username() string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '~' {
			return string(p[:i])
		}
	}
	return ""
}

// Valid reports whether p has 1 to MaxPeerIDLen bytes, all allowed.
func (p PeerID) Valid() bool { return len(p) > 0 && len(p) <= MaxPeerIDLen && peerIDBytesOK(p) }

func peerIDBytesOK[S ~string | ~[]byte](p S) bool {
	for i := 0; i < len(p); i++ {
		if !peerIDByte[p[i]] {
			return false
		}
	}
	return true
}

var peerIDByte = func() (t [256]bool) {
	for c := 'A'; c <= 'Z'; c++ {
		t[c], t[c+'a'-'A'] = true, true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	t['_'], t['.'], t['-'], t['~'] = true, true, true, true
	return t
}()

// ErrorCode is the code of an ERROR message.
type ErrorCode uint16

// The error codes. A decoder accepts every non-zero code (a client treats an
// unknown one as "internal"); 0 is reserved.
const (
	CodeMalformed          ErrorCode = 1  // a frame did not decode; the hub closes the connection
	CodeUnsupportedVersion ErrorCode = 2  // HELLO.version is not one the hub speaks; closing
	CodeUnauthorized       ErrorCode = 3  // ticket or resume token refused (expired, forged, wrong hub); closing
	CodeForbidden          ErrorCode = 4  // the user is banned from the network, or the frame is not allowed (From set, wrong direction)
	CodeUnknownPeer        ErrorCode = 5  // the destination is not in the sender's network
	CodeTooLarge           ErrorCode = 6  // a message over the hub's maximum size
	CodeRateLimited        ErrorCode = 7  // over the per-peer message rate; the message was dropped
	CodeQuotaExceeded      ErrorCode = 8  // over the per-peer or per-network bandwidth quota; dropped
	CodeNetworkFull        ErrorCode = 9  // the network has its maximum number of peers; closing
	CodeKicked             ErrorCode = 10 // removed by the server API; closing
	CodeSlowConsumer       ErrorCode = 11 // the peer's send queue overflowed; closing
	CodeInternal           ErrorCode = 12 // the hub failed; the message may not have been delivered
	CodeShuttingDown       ErrorCode = 13 // the hub is stopping; closing, reconnect through the API
	CodeTimeout            ErrorCode = 14 // no HELLO in time; closing
	CodeNotRegistered      ErrorCode = 15 // a punch needs both peers registered on UDP; one is not
)

var codeNames = map[ErrorCode]string{
	CodeMalformed: "malformed", CodeUnsupportedVersion: "unsupported_version", CodeUnauthorized: "unauthorized",
	CodeForbidden: "forbidden", CodeUnknownPeer: "unknown_peer", CodeTooLarge: "too_large",
	CodeRateLimited: "rate_limited", CodeQuotaExceeded: "quota_exceeded", CodeNetworkFull: "network_full",
	CodeKicked: "kicked", CodeSlowConsumer: "slow_consumer", CodeInternal: "internal",
	CodeShuttingDown: "shutting_down", CodeTimeout: "timeout", CodeNotRegistered: "not_registered",
}

// String returns the code's name, or "code N" for one this version does not
// define.
func (c ErrorCode) String() string {
	if s, ok := codeNames[c]; ok {
		return s
	}
	return "code " + strconv.Itoa(int(c))
}

// Channel is a reliable UDP channel. Each has its own KCP conversation per
// pair of peers, so a large transfer on one never holds up another.
type Channel uint8

// The channels.
const (
	Ch1      Channel = 1 // standard retransmission timers
	Ch2      Channel = 2 // standard retransmission timers
	Realtime Channel = 3 // KCP no-delay mode: low timeouts, fast resend
)

// String returns "ch1", "ch2", "realtime" or "channel N".
func (c Channel) String() string {
	switch c {
	case Ch1:
		return "ch1"
	case Ch2:
		return "ch2"
	case Realtime:
		return "realtime"
	}
	return "channel " + strconv.Itoa(int(c))
}

// Valid reports whether c is Ch1, Ch2 or Realtime.
func (c Channel) Valid() bool { return c >= Ch1 && c <= Realtime }

// EventOp says what happened to a peer in PEER_EVENTS.
type EventOp uint8

// The event ops.
const (
	PeerJoined EventOp = 1
	PeerLeft   EventOp = 2
)
