package relaywire

import "fmt"

// Type is byte 3 of every message.
type Type uint8

// The message types, with direction. Types 4, 5 and 7 are reserved; 8 is
// "reserved" in Unity's documentation and REJECTED in Unity Transport ≥ 2.5.1.
const (
	TypeBind           Type = 0  // client → relay, 295 bytes
	TypeBindReceived   Type = 1  // relay → client, 4 bytes
	TypePing           Type = 2  // both ways, 22 bytes
	TypeConnectRequest Type = 3  // client → relay, 276 bytes
	TypeAccepted       Type = 6  // relay → requester, 36 bytes
	TypeRejected       Type = 8  // relay → requester, 36 bytes (layout chosen by Switchboard)
	TypeDisconnect     Type = 9  // client → relay → peer, 36 bytes
	TypeRelay          Type = 10 // client → relay → peer, 38 + N bytes
	TypeClose          Type = 11 // client → relay, 4 or 20 bytes
	TypeError          Type = 12 // relay → client, 21 bytes

	// Switchboard's extensions, outside the range Unity uses or reserves
	// (0–12). A Unity client never sends PEERS_SUBSCRIBE, so it never
	// receives PEER_EVENT.
	TypePeersSubscribe Type = 0x80 // host → relay, 20 bytes
	TypePeerEvent      Type = 0x81 // relay → subscribed host, 21 bytes
)

var typeNames = [256]string{
	TypeBind: "BIND", TypeBindReceived: "BIND_RECEIVED", TypePing: "PING",
	TypeConnectRequest: "CONNECT_REQUEST", TypeAccepted: "ACCEPTED",
	TypeRejected: "REJECTED", TypeDisconnect: "DISCONNECT", TypeRelay: "RELAY",
	TypeClose: "CLOSE", TypeError: "ERROR",
	TypePeersSubscribe: "PEERS_SUBSCRIBE", TypePeerEvent: "PEER_EVENT",
}

// String returns the protocol's name of t, such as "CONNECT_REQUEST".
func (t Type) String() string {
	if n := typeNames[t]; n != "" {
		return n
	}
	return fmt.Sprintf("TYPE_%d", uint8(t))
}

// Known reports whether t is one of the twelve message types: Unity's ten
// and Switchboard's PEERS_SUBSCRIBE and PEER_EVENT.
func (t Type) Known() bool { return typeNames[t] != "" }

// Sizes of the protocol's fields and messages, in bytes. Every message but
// RELAY and CLOSE has exactly one size; a decoder rejects any other.
const (
	HeaderSize         = 4   // DA 72, version 0, type
	AllocationIDSize   = 16  // an allocation id, RFC 4122 byte order
	ConnectionDataSize = 255 // the connection data field of BIND and CONNECT_REQUEST
	KeySize            = 64  // the allocation key, the HMAC-SHA256 key of BIND
	HMACSize           = 32  // the HMAC field of BIND

	BindSize           = 295 // header, accept mode, nonce, length, connection data, HMAC
	BindSignedSize     = 263 // the bytes of a BIND the HMAC covers: all before the HMAC
	BindReceivedSize   = 4   // header only
	PingSize           = 22  // header, from, sequence number
	ConnectRequestSize = 276 // header, allocation id, length, connection data
	AcceptedSize       = 36  // header, from, to
	RejectedSize       = 36  // header, from, to
	DisconnectSize     = 36  // header, from, to
	RelayHeaderSize    = 38  // header, from, to, data length; the payload follows
	CloseSize          = 4   // the bare form of CLOSE
	CloseWithIDSize    = 20  // CLOSE with the sender's allocation id
	ErrorSize          = 21  // header, allocation id, error code
	PeersSubscribeSize = 20  // header, allocation id
	PeerEventSize      = 21  // header, event, peer allocation id

	// MaxRelayPayload is the most a RELAY can carry: its length field is a
	// u16. Carriers limit it further: Unity Transport's largest UDP message
	// is 1472 bytes (a payload of 1434); the relay node's limit is its own
	// configuration.
	MaxRelayPayload = 65535
	// MaxMessageSize is the size of the largest message, a RELAY with
	// MaxRelayPayload bytes.
	MaxMessageSize = RelayHeaderSize + MaxRelayPayload
)

// Protocol constants of the header and of BIND.
const (
	Signature0     byte  = 0xDA // byte 0 of every message
	Signature1     byte  = 0x72 // byte 1 of every message
	Version        uint8 = 0    // byte 2: the only version
	AcceptModeAuto uint8 = 0    // BIND accept mode: the relay accepts while there are free slots; the only mode
	// UTPSequence is the PING sequence number Unity Transport always sends.
	UTPSequence uint16 = 1
)

// ErrorCode is the code of an ERROR message.
type ErrorCode uint8

// The error codes of ERROR, with Unity Transport's reaction to each.
const (
	CodeInvalidVersion ErrorCode = 0 // logged
	CodeTimedOut       ErrorCode = 1 // fatal: the client needs a new allocation
	CodeUnauthorized   ErrorCode = 2 // logged
	CodeClientMismatch ErrorCode = 3 // the client's address changed: it re-binds with a larger nonce
	CodeNotFound       ErrorCode = 4 // fatal: the client needs a new allocation
	CodeNotConnected   ErrorCode = 5 // logged
	CodeSelfConnect    ErrorCode = 6 // logged
)

var codeNames = [...]string{
	CodeInvalidVersion: "invalid_protocol_version",
	CodeTimedOut:       "timed_out",
	CodeUnauthorized:   "unauthorized",
	CodeClientMismatch: "allocation_id_client_mismatch",
	CodeNotFound:       "allocation_id_not_found",
	CodeNotConnected:   "not_connected",
	CodeSelfConnect:    "self_connect_not_allowed",
}

// String returns the code's name, such as "allocation_id_not_found", or
// "unknown" for a code the protocol does not define.
func (c ErrorCode) String() string {
	if c.Known() {
		return codeNames[c]
	}
	return "unknown"
}

// Known reports whether c is one of the codes 0–6.
func (c ErrorCode) Known() bool { return int(c) < len(codeNames) }

// Fatal reports whether Unity Transport gives up the allocation on c
// (codes 1 and 4): the player needs a new allocation.
func (c ErrorCode) Fatal() bool { return c == CodeTimedOut || c == CodeNotFound }

// PeerEventKind is the event byte of PEER_EVENT.
type PeerEventKind uint8

// The events of PEER_EVENT.
const (
	PeerSubscribed   PeerEventKind = 0 // the ack of PEERS_SUBSCRIBE; Peer is the host's own id
	PeerConnected    PeerEventKind = 1 // the relay accepted Peer's CONNECT_REQUEST
	PeerDisconnected PeerEventKind = 2 // Peer disconnected from the host, or its allocation ended
)

var peerEventNames = [...]string{
	PeerSubscribed: "subscribed", PeerConnected: "connected", PeerDisconnected: "disconnected",
}

// String returns the event's name, such as "connected", or "unknown".
func (k PeerEventKind) String() string {
	if k.Known() {
		return peerEventNames[k]
	}
	return "unknown"
}

// Known reports whether k is one of the events 0–2.
func (k PeerEventKind) Known() bool { return int(k) < len(peerEventNames) }

// Message is one of the twelve message types. Every implementation is a
// pointer to one of the structs below.
type Message interface {
	// Type returns the message's type.
	Type() Type
	// AppendTo appends the encoded message, header first, to b. It fails
	// with a [*FieldError] only where a field cannot be encoded (a RELAY
	// payload over MaxRelayPayload, connection data padded with non-zero
	// bytes), and then returns b unchanged.
	AppendTo(b []byte) ([]byte, error)
	// Unmarshal decodes a whole message, header included, into the
	// receiver, replacing every field. It fails with a [*FieldError]. Byte
	// slices alias data; arrays are copies.
	Unmarshal(data []byte) error
}

// Bind binds the sender's address to its allocation (client → relay). The
// relay finds the allocation from ConnectionData, checks HMAC with the
// allocation's key and answers BIND_RECEIVED.
//
//	off size field
//	  0   4  header DA 72 00 00
//	  4   1  accept_mode              0 (AUTO); anything else is invalid
//	  5   2  nonce                    little-endian
//	  7   1  connection_data_length   Unity Transport always writes 255
//	  8 255  connection_data          zero bytes after connection_data_length
//	263  32  hmac                     HMAC-SHA256(key, bytes 0..262)
type Bind struct {
	AcceptMode           uint8 // AcceptModeAuto
	Nonce                uint16
	ConnectionDataLength uint8
	ConnectionData       ConnectionData
	HMAC                 [HMACSize]byte
}

// BindReceived acknowledges a BIND (relay → client). It has no body.
type BindReceived struct{}

// Ping keeps an allocation alive (both ways). Unity Transport ignores the
// content of a PING it receives.
//
//	off size field
//	  0   4  header DA 72 00 02
//	  4  16  from_allocation_id
//	 20   2  sequence_number   little-endian; Unity Transport always sends 1
type Ping struct {
	From     AllocationID
	Sequence uint16
}

// ConnectRequest asks to connect to the allocation whose connection data is
// ToConnectionData, the host's (client → relay).
//
//	off size field
//	  0   4  header DA 72 00 03
//	  4  16  allocation_id                the requester's own
//	 20   1  to_connection_data_length    Unity Transport always writes 255
//	 21 255  to_connection_data           zero bytes after the length
type ConnectRequest struct {
	AllocationID           AllocationID
	ToConnectionDataLength uint8
	ToConnectionData       ConnectionData
}

// Accepted answers a CONNECT_REQUEST (relay → requester): From is the host,
// To the requester.
//
//	off size field
//	  0   4  header DA 72 00 06
//	  4  16  from_allocation_id
//	 20  16  to_allocation_id
type Accepted struct {
	From, To AllocationID
}

// Rejected answers a CONNECT_REQUEST when the host has no free slot (relay →
// requester). Unity Transport reads only its header; its body is
// Switchboard's choice and mirrors ACCEPTED: From is the host, To the
// requester.
//
//	off size field
//	  0   4  header DA 72 00 08
//	  4  16  from_allocation_id
//	 20  16  to_allocation_id
type Rejected struct {
	From, To AllocationID
}

// Disconnect ends the connection between two allocations; the relay
// forwards it to To (client → relay → peer). It does not release the
// sender's allocation.
//
//	off size field
//	  0   4  header DA 72 00 09
//	  4  16  from_allocation_id
//	 20  16  to_allocation_id
type Disconnect struct {
	From, To AllocationID
}

// Relay carries a game datagram from one allocation to another; the relay
// forwards it unchanged (client → relay → peer).
//
//	off size field
//	  0   4  header DA 72 00 0A
//	  4  16  from_allocation_id
//	 20  16  to_allocation_id
//	 36   2  data_length   big-endian; equals the bytes that follow
//	 38   N  data
type Relay struct {
	From, To AllocationID
	Data     []byte // ≤ MaxRelayPayload; aliases the decoded buffer
}

// Close releases the sender's allocation (client → relay). Unity Transport
// never sends it and its layout is not published: a relay accepts the bare
// header and the header followed by the sender's allocation id.
//
//	off size field
//	  0   4  header DA 72 00 0B
//	  4  16  allocation_id   optional
type Close struct {
	HasAllocationID bool // false: the bare 4-byte form
	AllocationID    AllocationID
}

// Error reports an error to a client (relay → client). It also implements
// error, so a client can return it as is.
//
//	off size field
//	  0   4  header DA 72 00 0C
//	  4  16  allocation_id   the recipient's own
//	 20   1  error_code
type Error struct {
	AllocationID AllocationID
	Code         ErrorCode
}

// PeersSubscribe asks the relay to tell the sender, a host, when peers
// connect to it and leave (client → relay; Switchboard only). The relay
// accepts it only from the allocation's bound address and only for an
// allocation that no CONNECT_REQUEST of its own has made a joiner. It
// answers PEER_EVENT subscribed, then one PEER_EVENT connected per peer
// connected now, then one PEER_EVENT per change. Sending it again repeats
// the ack and the list of connected peers.
//
//	off size field
//	  0   4  header DA 72 00 80
//	  4  16  allocation_id   the sender's own
type PeersSubscribe struct {
	AllocationID AllocationID
}

// PeerEvent tells a subscribed host that a peer connected or left (relay →
// host; Switchboard only).
//
//	off size field
//	  0   4  header DA 72 00 81
//	  4   1  event                0 subscribed, 1 connected, 2 disconnected; others invalid
//	  5  16  peer_allocation_id   for subscribed, the host's own id
type PeerEvent struct {
	Event PeerEventKind
	Peer  AllocationID
}

func (m *Error) Error() string {
	return fmt.Sprintf("relaywire: relay error %d %s", uint8(m.Code), m.Code)
}

// Type implementations.

func (*Bind) Type() Type           { return TypeBind }
func (*BindReceived) Type() Type   { return TypeBindReceived }
func (*Ping) Type() Type           { return TypePing }
func (*ConnectRequest) Type() Type { return TypeConnectRequest }
func (*Accepted) Type() Type       { return TypeAccepted }
func (*Rejected) Type() Type       { return TypeRejected }
func (*Disconnect) Type() Type     { return TypeDisconnect }
func (*Relay) Type() Type          { return TypeRelay }
func (*Close) Type() Type          { return TypeClose }
func (*Error) Type() Type          { return TypeError }
func (*PeersSubscribe) Type() Type { return TypePeersSubscribe }
func (*PeerEvent) Type() Type      { return TypePeerEvent }

// New returns a new zero message of type t, or nil when t is not known.
func New(t Type) Message {
	switch t {
	case TypeBind:
		return new(Bind)
	case TypeBindReceived:
		return new(BindReceived)
	case TypePing:
		return new(Ping)
	case TypeConnectRequest:
		return new(ConnectRequest)
	case TypeAccepted:
		return new(Accepted)
	case TypeRejected:
		return new(Rejected)
	case TypeDisconnect:
		return new(Disconnect)
	case TypeRelay:
		return new(Relay)
	case TypeClose:
		return new(Close)
	case TypeError:
		return new(Error)
	case TypePeersSubscribe:
		return new(PeersSubscribe)
	case TypePeerEvent:
		return new(PeerEvent)
	}
	return nil
}
