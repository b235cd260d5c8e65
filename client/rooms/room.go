package rooms

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboardgg/switchboard/protocol/frameassembly"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// Input is one seat's input in a [Frame].
type Input struct {
	Seat uint8
	Data []byte // owned by the receiver of the Frame
}

// Frame is one lockstep frame, delivered in order, without gaps or
// duplicates, on [Room.Frames]. It owns its memory.
type Frame struct {
	// Number is the frame number. For a restore, it is the frame the
	// snapshot stands at; the next Frame is Number + 1.
	Number uint32
	// Restore reports a SNAPSHOT from the node: the frames the game missed
	// are no longer kept, so it must replace its state with Snapshot, the
	// state after frame Number, and go on with the frames that follow.
	Restore bool
	// SnapshotDue is set when this client is the room's snapshot provider
	// and Number is a multiple of Config.SnapshotInterval: after applying
	// this frame, send the state with [Room.PutSnapshot] (unless
	// Config.SnapshotFunc does it).
	SnapshotDue bool
	// Inputs holds the seats that sent an input for this frame; empty when
	// nobody did. Nil for a restore.
	Inputs []Input
	// Snapshot is the game state of a restore; nil otherwise.
	Snapshot []byte
}

// EventKind says what an [Event] reports.
type EventKind uint8

const (
	// EventMember: MEMBER. Seat, Username, MemberKind and Reason are set.
	EventMember EventKind = iota + 1
	// EventRoomState: ROOM_STATE. State, StartFrame, Reason and Result are
	// set; state 3 (ending) carries the game's result.
	EventRoomState
	// EventCustom: a CUSTOM message. Seat is the sender; To, Reliable and Data
	// are set.
	EventCustom
	// EventSnapshot: a SNAPSHOT replaced the game state at Frame; the restore
	// itself is delivered in order on Frames.
	EventSnapshot
	// EventDisconnected: the connection dropped (Err says why); the room
	// reconnects by itself. Sends fail with ErrNotConnected meanwhile.
	EventDisconnected
	// EventResumed: the room is connected again. Rejoined is true when the
	// resume was rejected and the room joined again with C1 and HELLO.
	EventResumed
	// EventClosed: the room ended; the last event before both channels
	// close. Err is the cause (see [Room.Err]); for a room closed by the game
	// backend it matches ErrRoomClosed and Reason and Result are set.
	EventClosed
)

var eventNames = [...]string{"", "member", "room_state", "custom", "snapshot", "disconnected", "resumed", "closed"}

func (k EventKind) String() string {
	if int(k) < len(eventNames) && k != 0 {
		return eventNames[k]
	}
	return "unknown"
}

// Event is something that happened in the room other than a frame. Which
// fields are set depends on Kind.
type Event struct {
	Kind       EventKind
	Seat       uint8  // member's seat; a CUSTOM's sender
	Username   string // member
	MemberKind uint8  // roomwire.MemberOnline, MemberOffline or MemberLeft
	Reason     string // member, room state, closed
	State      uint8  // room state: roomwire.StateWaiting, StatePlaying, StateEnding
	StartFrame uint32 // room state
	Result     []byte // room state, closed: the game backend's result JSON
	To         uint16 // custom: the seat mask as sent
	Reliable   bool   // custom
	Data       []byte // custom; owned
	Frame      uint32 // snapshot
	Rejoined   bool   // resumed
	Err        error  // disconnected, closed
}

// Member is a seat of the room as this client knows it.
type Member struct {
	Seat     uint8
	Username string
	Online   bool
}

// State is what the client knows about the room: the last WELCOME updated
// by MEMBER and ROOM_STATE.
type State struct {
	RoomID       string
	Seat         uint8 // this client's seat
	SyncMode     uint8 // roomwire.SyncFrame or SyncRelay
	TickRate     uint8
	RoomState    uint8  // roomwire.StateWaiting, StatePlaying or StateEnding
	StartFrame   uint32 // 0 before the start
	MaxPlayers   uint8
	SnapshotSeat int8     // the seat that sends snapshots; -1 when off
	Members      []Member // by seat
}

// Stats counts what happened to a room's connection.
type Stats struct {
	Connects          uint64 // successful handshakes, the first included
	Disconnects       uint64
	ReconnectAttempts uint64
	Resumes           uint64 // reconnections by RESUME
	Rejoins           uint64 // reconnections by C1 + HELLO after a rejected resume
	SnapshotRestores  uint64 // SNAPSHOTs applied
	FrameRequests     uint64 // FRAME_REQ sent
	FramesDelivered   uint64
	InvalidMessages   uint64 // messages from the node that did not decode
	UDPFallbacks      uint64 // connections that fell back to WebSocket after no answer over UDP
	// PathChallenges counts the node's PATH_CHALLENGEs answered over UDP:
	// the node saw this client's datagrams come from a new address (a NAT
	// rebinding) and checked that it receives there (rooms-udp.md §8).
	PathChallenges uint64
}

type stats struct {
	connects, disconnects, attempts, resumes, rejoins atomic.Uint64
	restores, frameReqs, frames, invalid, fallbacks   atomic.Uint64
	paths                                             atomic.Uint64
}

// Room is a connection to a room on a game node, kept alive across
// disconnections: see the package documentation. Its methods are safe for
// concurrent use.
//
// A Room runs three goroutines: the reader (decodes, orders frames, fills
// Frames and Events), the writer (the socket's only writer) and the
// supervisor (PING, silence detection, reconnection); over UDP there is no
// writer of its own (see [UDPSocket]). Close stops and joins them all.
type Room struct {
	// immutable after Connect
	client    *Client
	cfg       *Config
	log       *slog.Logger
	roomID    string
	csid      string
	ticket    string
	frames    chan Frame
	events    chan Event
	ctx       context.Context // the room's lifetime; canceled by Close
	cancel    context.CancelFunc
	finished  chan struct{} // closed when every goroutine has ended
	deliverFn func(roomwire.TickFrame)

	// owned by the reader goroutine; the supervisor uses them only while no
	// reader runs
	asm      *frameassembly.Assembler
	frameMsg roomwire.Frame
	batchMsg roomwire.FrameBatch

	lastFrame    atomic.Uint32 // the assembler's Last: INPUT.ack_frame
	provider     atomic.Bool   // this seat is the snapshot seat
	delivering   atomic.Bool   // a goroutine waits on a full Frames or Events
	stats        stats
	clock        clock
	closeOnce    sync.Once
	snapInterval uint32

	mu          sync.Mutex // guards the fields below
	conn        conn       // nil while reconnecting and after the end
	state       State
	snapshotsOn bool
	resumeToken []byte
	wsURL       string
	udp         udpTarget // the UDP channel of the latest C1, if haveUDP
	haveUDP     bool
	transport   string // of the last connection
	window      time.Duration
	leaving     bool
	err         error // why the room ended
}

// Frames returns the channel of frames, in order. It is closed after the
// room ends, right after EventClosed. The reader waits while it is full (it
// stops reading the socket), so drain it; the same holds for Events.
func (r *Room) Frames() <-chan Frame { return r.frames }

// Events returns the channel of events; see [EventKind]. It is closed after
// EventClosed.
func (r *Room) Events() <-chan Event { return r.events }

// Done is closed when the room has ended and its goroutines have exited.
func (r *Room) Done() <-chan struct{} { return r.finished }

// Err returns nil while the room runs, and then why it ended: ErrClosed
// after Close or Leave, a *NodeError (ErrKicked, ErrRoomClosed,
// ErrNodeDraining, ErrSeatTaken, …), an *APIError from a failed re-join, or
// ErrReconnectWindowExpired.
func (r *Room) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// State returns a copy of what the client knows about the room.
func (r *Room) State() State {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.state
	s.Members = append([]Member(nil), s.Members...)
	return s
}

// LastFrame returns the last frame queued on Frames (or the WELCOME's frame
// before any): the ack_frame of SendInput and the last_frame of a resume.
// Once a Frame has been received from Frames, LastFrame is at least its
// number.
func (r *Room) LastFrame() uint32 { return r.lastFrame.Load() }

// Transport returns the channel of the current (or last) connection:
// TransportUDP or TransportWS.
func (r *Room) Transport() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.transport
}

// RTT returns the median round-trip time of the last 10 PINGs; 0 before the
// first PONG.
func (r *Room) RTT() time.Duration { return r.clock.rtt() }

// ServerTime returns the estimated current time of the node's clock.
func (r *Room) ServerTime() time.Time { return r.clock.serverTime(r.cfg.Now()) }

// Stats returns the room's counters.
func (r *Room) Stats() Stats {
	s := &r.stats
	return Stats{
		Connects:          s.connects.Load(),
		Disconnects:       s.disconnects.Load(),
		ReconnectAttempts: s.attempts.Load(),
		Resumes:           s.resumes.Load(),
		Rejoins:           s.rejoins.Load(),
		SnapshotRestores:  s.restores.Load(),
		FrameRequests:     s.frameReqs.Load(),
		FramesDelivered:   s.frames.Load(),
		InvalidMessages:   s.invalid.Load(),
		UDPFallbacks:      s.fallbacks.Load(),
		PathChallenges:    s.paths.Load(),
	}
}

// current returns the live connection, or ErrClosed or ErrNotConnected.
func (r *Room) current() (conn, error) {
	r.mu.Lock()
	c, ended, leaving := r.conn, r.err != nil, r.leaving
	r.mu.Unlock()
	switch {
	case ended || leaving || r.ctx.Err() != nil:
		return nil, ErrClosed
	case c == nil:
		return nil, ErrNotConnected
	}
	return c, nil
}

// SendInput sends this frame's input (≤ 128 bytes) with ack_frame set to
// [Room.LastFrame]. Send one per frame, at most twice the tick rate per
// second. It fails with ErrNotConnected while reconnecting and ErrClosed
// after the end; it allocates nothing.
func (r *Room) SendInput(data []byte) error {
	c, err := r.current()
	if err != nil {
		return err
	}
	return c.sendInput(r.lastFrame.Load(), data)
}

// SendCustom sends an application message (≤ 1024 bytes) to the seats in
// the mask to (bit n for seat n; 0 means everyone else). Over WebSocket it
// always arrives; reliable is passed on to the receivers.
func (r *Room) SendCustom(to uint16, reliable bool, data []byte) error {
	c, err := r.current()
	if err != nil {
		return err
	}
	return c.send(&roomwire.Custom{To: to, Reliable: reliable, Data: data})
}

// Ready says this player is ready (rooms with start mode all_ready).
func (r *Room) Ready() error {
	c, err := r.current()
	if err != nil {
		return err
	}
	return c.send(&roomwire.Ready{})
}

// PutSnapshot sends the game state after frame (≤ 64 KiB) as SNAPSHOT_PUT;
// see Frame.SnapshotDue.
func (r *Room) PutSnapshot(frame uint32, data []byte) error {
	c, err := r.current()
	if err != nil {
		return err
	}
	return c.send(&roomwire.SnapshotPut{Frame: frame, Data: data})
}

// Leave leaves the room for good, as the seed asks: LEAVE on the socket,
// close it, then C2. The room ends with ErrClosed. ctx bounds the wait for
// the LEAVE to go out and the C2 call; Leave returns the C2 error.
func (r *Room) Leave(ctx context.Context) error {
	r.mu.Lock()
	r.leaving = true
	c := r.conn
	r.mu.Unlock()
	if c != nil && c.sendLeave() == nil {
		select {
		case <-c.done():
		case <-ctx.Done():
		}
	}
	r.Close()
	_, err := r.client.Leave(ctx, r.roomID)
	return err
}

// Close ends the room at once without leaving it: the seat stays held for
// the reconnect window, so the game can come back (C3, then Connect). It
// waits for the room's goroutines to exit and is idempotent. It must not be
// called from Config.SnapshotFunc.
func (r *Room) Close() error {
	r.closeOnce.Do(func() {
		r.mu.Lock()
		if r.err == nil {
			r.err = ErrClosed
		}
		r.mu.Unlock()
		r.cancel()
	})
	<-r.finished
	return nil
}

// end records why the room ended, unless it already has a reason.
func (r *Room) end(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

// emit queues an event, waiting while Events is full, until the room is
// closed.
func (r *Room) emit(ev Event) {
	select {
	case r.events <- ev:
		return
	default:
	}
	r.delivering.Store(true)
	select {
	case r.events <- ev:
	case <-r.ctx.Done():
	}
	r.delivering.Store(false)
}

// pushFrame queues a frame, waiting while Frames is full, until the room is
// closed.
func (r *Room) pushFrame(f Frame) {
	select {
	case r.frames <- f:
		return
	default:
	}
	r.delivering.Store(true)
	select {
	case r.frames <- f:
	case <-r.ctx.Done():
	}
	r.delivering.Store(false)
}
