package rooms

import (
	"encoding/binary"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// State is a room's lifecycle state.
type State uint8

// Room states. The first three are the values of ROOM_STATE.state.
const (
	StateWaiting State = 1 // before the start
	StatePlaying State = 2 // started; frame rooms produce frames
	StateEnding  State = 3 // closed by the server, connections close after CloseLinger
	StateClosed  State = 4 // gone: no connections, removed from the engine
)

// String returns the state's name as the records spell it.
func (s State) String() string {
	switch s {
	case StateWaiting:
		return "waiting"
	case StatePlaying:
		return "playing"
	case StateEnding:
		return "ending"
	case StateClosed:
		return "closed"
	}
	return "unknown"
}

// Reasons of MEMBER messages and seat events.
const (
	ReasonNetwork     = "network"      // MEMBER offline: the connection dropped
	ReasonTimeout     = "timeout"      // MEMBER offline: idle; MEMBER left: connect_timeout or reconnect window
	ReasonLeft        = "left"         // MEMBER left: LEAVE or the client's leave call
	ReasonKicked      = "kicked"       // MEMBER left: kicked by the game backend
	ReasonRateLimited = "rate_limited" // MEMBER left: 10 s over the INPUT limit
	ReasonExpired     = "expired"      // ROOM_STATE 3: max duration reached
	ReasonReplaced    = "replaced"     // ERROR 5 to a connection replaced by a newer one
	ReasonDraining    = "node_draining"
)

// Room is one running room: its seats, its frames and its rules. A transport
// feeds it through [Room.Join], [Room.Resume] and the [Link] they return;
// the control plane's commands arrive as [Room.Admit], [Room.Start],
// [Room.Close], [Room.Kick] and [Room.Release]; the engine's scheduler, or a
// test, calls [Room.Tick].
//
// All methods are safe for concurrent use. Messages to peers are queued
// with the room's lock held, so every peer sees them in the room's order.
type Room struct {
	// immutable after Open
	e        *Engine
	cfg      RoomConfig
	period   time.Duration // between ticks: 1/tick_rate, or Housekeeping
	log      *slog.Logger
	limit    int           // INPUT per second per seat (2 × tick_rate)
	window   time.Duration // INPUT rate window
	expireAt time.Time
	// FRAME_REQ budget per seat in frames (the frames kept), and the
	// largest frame's size, the unit a SNAPSHOT costs.
	reqCap    int64
	frameUnit int

	mu       sync.Mutex
	state    State
	seats    []seat
	frame    uint32    // newest frame produced, 0 before the first
	frames   *frameLog // nil in relay rooms
	snap     *Msg      // newest SNAPSHOT, nil when none
	snapAt   uint32    // its frame
	closeAt  time.Time // StateEnding: when the connections close
	reason   string    // StateEnding, StateClosed: why
	deadline time.Time // earliest timer, checked by Tick
	dead     bool      // some link's Send failed: settle before unlocking
	logs     roomLogs  // written by unlock once the lock is released
}

// roomLogs are the log lines a room owes; logging waits until the room's
// lock is released, so a slow log handler never holds up the room.
type roomLogs struct {
	closing, closed bool
	closingReason   string
	closedReason    string
}

// ID returns the room's id.
func (r *Room) ID() string { return r.cfg.ID }

// Config returns the room's configuration, defaults filled in.
func (r *Room) Config() RoomConfig { return r.cfg }

// State returns the room's state.
func (r *Room) State() State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state
}

// Frame returns the newest frame produced, 0 before the first.
func (r *Room) Frame() uint32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.frame
}

// unlock settles the links whose peers failed, releases the lock, then
// writes the log lines owed. Every method that sends ends with it.
func (r *Room) unlock() {
	for r.dead {
		r.dead = false
		for i := range r.seats {
			if l := r.seats[i].link; l != nil && l.dead {
				l.peer.Close(nil)
				r.offlineLocked(i, ReasonNetwork)
			}
		}
	}
	logs := r.logs
	r.logs = roomLogs{}
	r.mu.Unlock()
	if logs.closing {
		r.log.Info("room closing", "reason", logs.closingReason)
	}
	if logs.closed {
		r.log.Info("room closed", "reason", logs.closedReason)
	}
}

// Tick runs the room's timers and, while a frame room plays, produces the
// next frame from the newest INPUT of each seat since the last one. It
// returns false once the room is closed. The engine's scheduler calls it
// every 1/tick_rate (relay rooms: every Config.Housekeeping); tests call it
// with their own clock.
func (r *Room) Tick(now time.Time) bool {
	r.mu.Lock()
	defer r.unlock()
	if r.state == StateClosed {
		return false
	}
	if !now.Before(r.deadline) {
		r.timersLocked(now)
	}
	if r.state == StatePlaying && r.frames != nil {
		r.produceLocked()
	}
	return r.state != StateClosed
}

// produceLocked appends frame r.frame+1 to the log and broadcasts a FRAME
// with it and the two before it.
func (r *Room) produceLocked() {
	n := r.frame + 1
	size, count := 5, 0
	for i := range r.seats {
		if s := &r.seats[i]; s.hasInput {
			size += 2 + len(s.input)
			count++
		}
	}
	rec := r.frames.append(size)
	binary.BigEndian.PutUint32(rec, n)
	rec[4] = byte(count)
	p := 5
	for i := range r.seats {
		if s := &r.seats[i]; s.hasInput {
			rec[p], rec[p+1] = byte(i), byte(len(s.input))
			p += 2 + copy(rec[p+2:], s.input)
			s.hasInput = false
		}
	}
	r.frame = n

	first := r.frames.first
	if n >= first+roomwire.MaxFramesPerFrame {
		first = n - roomwire.MaxFramesPerFrame + 1
	}
	m := r.e.pools.get(2 + r.frames.size(first, n))
	m.buf = roomwire.AppendFramesHeader(m.buf, roomwire.TypeFrame, int(n-first+1))
	for f := first; f <= n; f++ {
		m.buf = append(m.buf, r.frames.record(f)...)
	}
	r.e.pools.seal(m)
	r.broadcastLocked(m, -1)
	m.Release()
}

// timersLocked runs what is due at now: the end of a close, the room's
// expiry, connect timeouts and reconnect windows. It sets r.deadline to the
// next one.
func (r *Room) timersLocked(now time.Time) {
	if r.state == StateEnding {
		if !now.Before(r.closeAt) {
			r.finishLocked(r.reason)
			return
		}
	} else if !now.Before(r.expireAt) {
		r.closeLocked(now, ReasonExpired, nil)
	}
	next := r.expireAt
	if r.state == StateEnding {
		next = r.closeAt
	}
	for i := range r.seats {
		s := &r.seats[i]
		var d time.Time
		switch s.status {
		case seatJoined:
			d = s.since.Add(r.e.cfg.ConnectTimeout)
		case seatOffline:
			d = s.since.Add(r.cfg.ReconnectWindow)
		default:
			continue
		}
		if r.state == StateEnding {
			continue
		}
		if !now.Before(d) {
			r.releaseLocked(i, ReasonTimeout)
			continue
		}
		if d.Before(next) {
			next = d
		}
	}
	r.deadline = next
}

// wakeLocked makes sure Tick checks the timers at t or earlier.
func (r *Room) wakeLocked(t time.Time) {
	if t.Before(r.deadline) {
		r.deadline = t
	}
}

// Start starts a manual room. It returns ErrNotManual for other start
// modes, ErrStarted once started and ErrRoomEnded once closing.
func (r *Room) Start() error {
	r.mu.Lock()
	defer r.unlock()
	switch {
	case r.state >= StateEnding:
		return ErrRoomEnded
	case r.cfg.StartMode != StartManual:
		return ErrNotManual
	case r.state != StateWaiting:
		return ErrStarted
	}
	r.startLocked()
	return nil
}

func (r *Room) startLocked() {
	r.setStateLocked(StatePlaying)
	r.emit(Event{Kind: RoomPlaying})
	m := r.encodeLocked(&roomwire.RoomState{State: roomwire.StatePlaying, StartFrame: 1}, 16)
	r.broadcastLocked(m, -1)
	m.Release()
}

func (r *Room) setStateLocked(s State) {
	r.e.stateCount[r.state].Add(-1)
	r.state = s
	if s != StateClosed {
		r.e.stateCount[s].Add(1)
	}
}

// Close closes the room: ROOM_STATE(3, reason, result) to everyone, then
// ERROR(9 room_closed, reason, result), and the connections close
// Config.CloseLinger later. It returns ErrRoomEnded when the room is
// already closing. reason is at most roomwire.MaxReasonLen bytes and result
// roomwire.MaxResultLen (longer ones are cut); invalid UTF-8 in reason is
// replaced by U+FFFD.
func (r *Room) Close(reason string, result []byte) error {
	r.mu.Lock()
	defer r.unlock()
	if r.state >= StateEnding {
		return ErrRoomEnded
	}
	r.closeLocked(r.e.now(), reason, result)
	return nil
}

func (r *Room) closeLocked(now time.Time, reason string, result []byte) {
	reason = truncate(reason, roomwire.MaxReasonLen)
	if len(result) > roomwire.MaxResultLen {
		result = result[:roomwire.MaxResultLen]
	}
	result = append([]byte(nil), result...)
	start := uint32(0)
	if r.state == StatePlaying {
		start = 1
	}
	r.setStateLocked(StateEnding)
	r.reason = reason
	r.closeAt = now.Add(r.e.cfg.CloseLinger)
	r.wakeLocked(r.closeAt)
	r.emit(Event{Kind: RoomEnding, Reason: reason, Result: result})
	m := r.encodeLocked(&roomwire.RoomState{State: roomwire.StateEnding, StartFrame: start, Reason: reason, Result: result}, 16+len(reason)+len(result))
	r.broadcastLocked(m, -1)
	m.Release()
	m = r.errorLocked(roomwire.CodeRoomClosed, reason, result)
	r.broadcastLocked(m, -1)
	m.Release()
	r.logs.closing, r.logs.closingReason = true, reason
}

// finishLocked closes every connection and removes the room.
func (r *Room) finishLocked(reason string) {
	for i := range r.seats {
		if l := r.seats[i].link; l != nil {
			l.detach()
			l.peer.Close(nil)
		}
	}
	r.setStateLocked(StateClosed)
	r.reason = reason
	if r.snap != nil {
		r.snap.Release()
		r.snap = nil
	}
	r.emit(Event{Kind: RoomClosed, Reason: reason})
	r.e.remove(r)
	r.logs.closed, r.logs.closedReason = true, reason
}

// drain sends ERROR 10 node_draining to every connection, closes them and
// removes the room at once.
func (r *Room) drain() {
	r.mu.Lock()
	defer r.unlock()
	if r.state == StateClosed {
		return
	}
	m := r.errorLocked(roomwire.CodeNodeDraining, "", nil)
	for i := range r.seats {
		if l := r.seats[i].link; l != nil {
			l.detach()
			l.peer.Close(m)
		}
	}
	m.Release()
	r.finishLocked(ReasonDraining)
}

// Kick releases seat: its connection, if any, gets ERROR(8 kicked, reason)
// and is closed at once, and the others get MEMBER left "kicked". reason
// is cut and sanitized as Close's. It returns ErrSeatUnavailable when nobody
// holds the seat.
func (r *Room) Kick(seat int, reason string) error {
	r.mu.Lock()
	defer r.unlock()
	if r.state >= StateEnding {
		return ErrRoomEnded
	}
	if seat < 0 || seat >= len(r.seats) {
		return ErrBadSeat
	}
	if r.seats[seat].status == seatFree {
		return ErrSeatUnavailable
	}
	if l := r.seats[seat].link; l != nil {
		m := r.errorLocked(roomwire.CodeKicked, truncate(reason, roomwire.MaxReasonLen), nil)
		l.detach()
		l.peer.Close(m)
		m.Release()
	}
	r.releaseLocked(seat, ReasonKicked)
	return nil
}

// Release frees seat for the player who left through the client API (C2):
// the connection, if any, is dropped and the others get MEMBER left "left".
// sessionID, when not empty, must be the seat holder's. It returns
// ErrSeatUnavailable when the seat is not held (by that session).
func (r *Room) Release(seat int, sessionID string) error {
	r.mu.Lock()
	defer r.unlock()
	if r.state >= StateEnding {
		return ErrRoomEnded
	}
	if seat < 0 || seat >= len(r.seats) {
		return ErrBadSeat
	}
	s := &r.seats[seat]
	if s.status == seatFree || (sessionID != "" && s.sessionID != sessionID) {
		return ErrSeatUnavailable
	}
	if l := s.link; l != nil {
		l.detach()
		l.peer.Close(nil)
	}
	r.releaseLocked(seat, ReasonLeft)
	return nil
}

// emit hands an event to the observer.
func (r *Room) emit(ev Event) {
	if r.e.cfg.Observer != nil {
		ev.RoomID = r.cfg.ID
		r.e.cfg.Observer.RoomEvent(ev)
	}
}

// truncate returns s as valid UTF-8, every invalid byte replaced by U+FFFD,
// cut to at most n bytes without splitting a character. Strings that go
// into messages pass through it: the encoder rejects invalid UTF-8, and a
// room encodes with its lock held.
func truncate(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 { // do not cut a UTF-8 sequence
		n--
	}
	return s[:n]
}
