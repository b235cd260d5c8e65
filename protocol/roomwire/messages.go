package roomwire

import "fmt"

// Type is the first byte of every message.
type Type uint8

// The 18 message types of im.game.v1, with direction.
const (
	TypeHello       Type = 0x01 // client → node, only inside the handshake
	TypeWelcome     Type = 0x02 // node → client
	TypeResume      Type = 0x03 // client → node, only inside the handshake
	TypeInput       Type = 0x10 // client → node
	TypeFrame       Type = 0x11 // node → client
	TypeFrameReq    Type = 0x12 // client → node
	TypeFrameBatch  Type = 0x13 // node → client
	TypeCustom      Type = 0x20 // both ways
	TypeReady       Type = 0x30 // client → node
	TypeStart       Type = 0x31 // client → node (not accepted by nodes yet)
	TypeRoomState   Type = 0x32 // node → client
	TypeMember      Type = 0x33 // node → client
	TypeSnapshotPut Type = 0x40 // client → node
	TypeSnapshot    Type = 0x41 // node → client
	TypePing        Type = 0x50 // client → node
	TypePong        Type = 0x51 // node → client
	TypeLeave       Type = 0x60 // client → node
	TypeError       Type = 0x7F // node → client
)

var typeNames = [256]string{
	TypeHello: "HELLO", TypeWelcome: "WELCOME", TypeResume: "RESUME",
	TypeInput: "INPUT", TypeFrame: "FRAME", TypeFrameReq: "FRAME_REQ",
	TypeFrameBatch: "FRAME_BATCH", TypeCustom: "CUSTOM", TypeReady: "READY",
	TypeStart: "START", TypeRoomState: "ROOM_STATE", TypeMember: "MEMBER",
	TypeSnapshotPut: "SNAPSHOT_PUT", TypeSnapshot: "SNAPSHOT", TypePing: "PING",
	TypePong: "PONG", TypeLeave: "LEAVE", TypeError: "ERROR",
}

// String returns the protocol's name of t, such as "FRAME_REQ".
func (t Type) String() string {
	if n := typeNames[t]; n != "" {
		return n
	}
	return fmt.Sprintf("TYPE_0x%02X", uint8(t))
}

// Known reports whether t is one of the 18 types of protocol version 1.
func (t Type) Known() bool { return typeNames[t] != "" }

// Caps. The first group is fixed by the protocol; the second is Switchboard's
// own, chosen so that every message has a bounded size (see
// docs/protocol/rooms.md).
const (
	MaxSDKVersionLen    = 64         // HELLO.sdk_version
	MaxResumeTokenLen   = 256        // WELCOME.resume_token
	MaxInputLen         = 128        // INPUT.data, and each input inside frames
	MaxCustomLen        = 1024       // CUSTOM.data
	MaxSnapshotLen      = 65536      // SNAPSHOT_PUT.data, SNAPSHOT.data
	MaxFramesPerFrame   = 3          // FRAME: the newest frame and the two before it
	MaxFramesPerBatch   = 300        // FRAME_BATCH
	MaxUsernameLen      = 64         // WELCOME member username, MEMBER.username
	MaxReasonLen        = 64         // ROOM_STATE.reason, MEMBER.reason, ERROR.reason
	MaxErrorMessageLen  = 256        // ERROR.message
	MaxResultLen        = 16384      // ROOM_STATE.result, ERROR.result (JSON from the game backend)
	MaxMembers          = MaxPlayers // WELCOME.members; rooms have at most 16 seats
	MaxConnectTicketLen = 1024       // handshake token of a HELLO
)

// Values of WELCOME.sync_mode.
const (
	SyncFrame uint8 = 1 // lockstep frame sync
	SyncRelay uint8 = 2 // message relay, CUSTOM only
)

// Values of WELCOME.room_state and ROOM_STATE.state.
const (
	StateWaiting uint8 = 1
	StatePlaying uint8 = 2
	StateEnding  uint8 = 3
)

// Values of MEMBER.kind.
const (
	MemberOnline  uint8 = 1
	MemberOffline uint8 = 2 // reason network or timeout; the member may come back
	MemberLeft    uint8 = 3 // the seat is released
)

// Message is one of the 18 message types. Every implementation is a pointer to
// one of the structs below.
type Message interface {
	// Type returns the message's type byte.
	Type() Type
	// AppendTo appends the encoded message, type byte first, to b. It fails
	// with a [*FieldError] when a field is over its cap.
	AppendTo(b []byte) ([]byte, error)
	// Unmarshal decodes a whole message, type byte included, into the
	// receiver, replacing every field. Byte fields alias data.
	Unmarshal(data []byte) error
}

// Hello opens a connection with a connect ticket (handshake kind 1).
type Hello struct {
	ClientNonce uint64
	SDKVersion  string // ≤ MaxSDKVersionLen bytes
}

// MemberInfo is one seat in WELCOME.members.
type MemberInfo struct {
	Seat     uint8
	Username string
	Online   bool
}

// Welcome answers a successful handshake.
type Welcome struct {
	Conv         uint32 // KCP conversation of the UDP channel; WebSocket ignores it
	Seat         uint8
	SyncMode     uint8 // SyncFrame or SyncRelay
	TickRate     uint8
	RoomState    uint8 // StateWaiting, StatePlaying or StateEnding
	StartFrame   uint32
	Frame        uint32 // newest frame produced, 0 before the start
	Members      []MemberInfo
	ResumeToken  []byte // ≤ MaxResumeTokenLen
	ServerTimeMS uint64 // Unix epoch milliseconds
	SnapshotSeat int8   // seat that provides snapshots, -1 when off
	MaxPlayers   uint8
}

// Resume reopens a connection with a resume token (handshake kind 2).
type Resume struct {
	ClientNonce uint64
	LastFrame   uint32
}

// Input is a seat's input for the next frame.
type Input struct {
	AckFrame uint32
	Data     []byte // ≤ MaxInputLen
}

// SeatInput is one seat's input inside a frame.
type SeatInput struct {
	Seat uint8
	Data []byte // ≤ MaxInputLen
}

// TickFrame is one lockstep frame: the inputs of the seats that sent one.
type TickFrame struct {
	Number uint32
	Inputs []SeatInput // at most 255
}

// Frame carries the newest frame and up to two before it.
type Frame struct {
	Frames []TickFrame // ≤ MaxFramesPerFrame
}

// FrameReq asks for frames From through To, inclusive.
type FrameReq struct {
	From, To uint32
}

// FrameBatch answers a FRAME_REQ or a resume.
type FrameBatch struct {
	Frames []TickFrame // ≤ MaxFramesPerBatch
}

// Custom is an application message routed by seat mask.
type Custom struct {
	To       uint16 // seat bit mask; 0 means everyone but the sender
	From     uint8  // stamped by the node; clients send 0
	Reliable bool
	Data     []byte // ≤ MaxCustomLen
}

// Ready says the player is ready (start mode all_ready).
type Ready struct{}

// Start asks the node to start the room. Nodes do not accept it yet.
type Start struct{}

// RoomState announces a change of room state.
type RoomState struct {
	State      uint8
	StartFrame uint32
	Reason     string // ≤ MaxReasonLen
	Result     []byte // ≤ MaxResultLen, JSON from the game backend or empty
}

// Member announces a member coming online, going offline or leaving.
type Member struct {
	Seat     uint8
	Username string // ≤ MaxUsernameLen
	Kind     uint8  // MemberOnline, MemberOffline or MemberLeft
	Reason   string // ≤ MaxReasonLen
}

// SnapshotPut uploads the game state at Frame.
type SnapshotPut struct {
	Frame uint32
	Data  []byte // ≤ MaxSnapshotLen
}

// Snapshot delivers the game state at Frame.
type Snapshot struct {
	Frame uint32
	Data  []byte // ≤ MaxSnapshotLen
}

// Ping is the client's heartbeat.
type Ping struct {
	ClientMS uint64
	RTTMS    uint32
}

// Pong answers a PING.
type Pong struct {
	ClientMS uint64
	ServerMS uint64
}

// Leave says the player leaves the room for good.
type Leave struct{}

// Error reports an error; see the Code constants. It also implements error,
// so a client can return it as is.
type Error struct {
	Code    uint8
	Message string // ≤ MaxErrorMessageLen
	Reason  string // ≤ MaxReasonLen
	Result  []byte // ≤ MaxResultLen
}

func (m *Error) Error() string {
	name := CodeName(m.Code)
	switch {
	case m.Reason != "":
		return fmt.Sprintf("roomwire: node error %d %s (%s): %s", m.Code, name, m.Reason, m.Message)
	case m.Message != "":
		return fmt.Sprintf("roomwire: node error %d %s: %s", m.Code, name, m.Message)
	}
	return fmt.Sprintf("roomwire: node error %d %s", m.Code, name)
}

// Node error codes (ERROR.code).
const (
	CodeTicketInvalid       uint8 = 1
	CodeTicketExpired       uint8 = 2
	CodeRoomNotFound        uint8 = 3
	CodeRoomFull            uint8 = 4
	CodeSeatTaken           uint8 = 5
	CodeProtocolUnsupported uint8 = 6
	CodeRateLimited         uint8 = 7
	CodeKicked              uint8 = 8
	CodeRoomClosed          uint8 = 9
	CodeNodeDraining        uint8 = 10
	CodeResumeRejected      uint8 = 11
)

var codeNames = [...]string{
	CodeTicketInvalid: "ticket_invalid", CodeTicketExpired: "ticket_expired",
	CodeRoomNotFound: "room_not_found", CodeRoomFull: "room_full",
	CodeSeatTaken: "seat_taken", CodeProtocolUnsupported: "protocol_unsupported",
	CodeRateLimited: "rate_limited", CodeKicked: "kicked",
	CodeRoomClosed: "room_closed", CodeNodeDraining: "node_draining",
	CodeResumeRejected: "resume_rejected",
}

// CodeName returns the protocol's name of an ERROR code, such as "kicked", or
// "unknown" for a code version 1 does not define.
func CodeName(code uint8) string {
	if int(code) < len(codeNames) && codeNames[code] != "" {
		return codeNames[code]
	}
	return "unknown"
}

// Type implementations.

func (*Hello) Type() Type       { return TypeHello }
func (*Welcome) Type() Type     { return TypeWelcome }
func (*Resume) Type() Type      { return TypeResume }
func (*Input) Type() Type       { return TypeInput }
func (*Frame) Type() Type       { return TypeFrame }
func (*FrameReq) Type() Type    { return TypeFrameReq }
func (*FrameBatch) Type() Type  { return TypeFrameBatch }
func (*Custom) Type() Type      { return TypeCustom }
func (*Ready) Type() Type       { return TypeReady }
func (*Start) Type() Type       { return TypeStart }
func (*RoomState) Type() Type   { return TypeRoomState }
func (*Member) Type() Type      { return TypeMember }
func (*SnapshotPut) Type() Type { return TypeSnapshotPut }
func (*Snapshot) Type() Type    { return TypeSnapshot }
func (*Ping) Type() Type        { return TypePing }
func (*Pong) Type() Type        { return TypePong }
func (*Leave) Type() Type       { return TypeLeave }
func (*Error) Type() Type       { return TypeError }

// New returns a new zero message of type t, or nil when t is unknown.
func New(t Type) Message {
	switch t {
	case TypeHello:
		return new(Hello)
	case TypeWelcome:
		return new(Welcome)
	case TypeResume:
		return new(Resume)
	case TypeInput:
		return new(Input)
	case TypeFrame:
		return new(Frame)
	case TypeFrameReq:
		return new(FrameReq)
	case TypeFrameBatch:
		return new(FrameBatch)
	case TypeCustom:
		return new(Custom)
	case TypeReady:
		return new(Ready)
	case TypeStart:
		return new(Start)
	case TypeRoomState:
		return new(RoomState)
	case TypeMember:
		return new(Member)
	case TypeSnapshotPut:
		return new(SnapshotPut)
	case TypeSnapshot:
		return new(Snapshot)
	case TypePing:
		return new(Ping)
	case TypePong:
		return new(Pong)
	case TypeLeave:
		return new(Leave)
	case TypeError:
		return new(Error)
	}
	return nil
}
