package rooms

import (
	"time"

	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

type seatStatus uint8

const (
	seatFree    seatStatus = iota
	seatJoined             // admitted, never connected
	seatOnline             // connected: link is set
	seatOffline            // was connected; kept for the reconnect window
)

// seat is one seat of a room; its Room's lock guards it.
type seat struct {
	status    seatStatus
	username  string
	sessionID string
	link      *Link     // current connection; nil unless online
	gen       uint64    // connection generation, bumped by every WELCOME and release
	since     time.Time // joined: admitted at; offline: went offline at
	ready     bool

	input    []byte // newest INPUT since the last frame (cap MaxInputLen)
	hasInput bool

	// INPUT rate: times (UnixNano) of the inputs accepted in the last
	// window, as a ring of cap limit.
	times     []int64
	tHead, tN int
	overSec   int64 // last second in which an input was dropped
	overRun   int   // consecutive seconds with drops, ending at overSec

	// FRAME_REQ budget: what was charged, as of reqAt (UnixNano), in
	// units of 1/FrameReqWindow-ns frames, so that it drains by Room.reqCap
	// units a nanosecond; zero is a full budget.
	reqUsed int64
	reqAt   int64

	// CUSTOM rate: messages and data bytes.
	custMsgs, custBytes bucket

	// stuck: the last catch-up of the current connection asked for
	// frames no longer retained and there was no snapshot to bridge the
	// gap; the next snapshot that does is pushed to it.
	stuck bool
}

// bucket is a token bucket kept as what was spent, in billionths of a
// token, as of at (UnixNano), so that it drains by its rate per second
// units a nanosecond. The zero bucket is full.
type bucket struct {
	spent, at int64
}

// refill drains what the time since b.at has paid back, at rate tokens a
// second.
func (b *bucket) refill(now, rate int64) {
	if d := now - b.at; d > 0 {
		if d >= b.spent/rate+1 {
			b.spent = 0
		} else {
			b.spent -= d * rate
		}
	}
	b.at = max(b.at, now)
}

// fits reports whether n more tokens fit a bucket of burst tokens.
func (b *bucket) fits(n, burst int64) bool { return b.spent+n*1e9 <= burst*1e9 }

// take spends n tokens.
func (b *bucket) take(n int64) { b.spent += n * 1e9 }

// Peer is a connection as a room sees it; the transport implements it.
type Peer interface {
	// Send queues m without blocking. When it keeps m it takes its own
	// reference ([Msg.Retain]) and releases it once written or dropped.
	// It returns false when the queue is full or the peer is closing; the
	// room then drops the connection (MEMBER offline "network") and the
	// player may resume.
	Send(m *Msg) bool
	// Close sends the queued messages and final (when not nil, even past
	// the queue's bound), then closes the connection. It never blocks and
	// is idempotent; the peer retains final if it keeps it.
	Close(final *Msg)
}

// Admit gives seat to a login session (the control plane's join, C1): the
// seat is held ("joined") and is released with MEMBER left "timeout" unless
// its player connects within Config.ConnectTimeout. username is cut to
// roomwire.MaxUsernameLen bytes, invalid UTF-8 replaced by U+FFFD.
// Admitting the same session again is not an error. It returns ErrSeatTaken when another
// session holds the seat, ErrBadSeat for a seat outside the room,
// ErrRoomEnded once the room is closing and ErrDraining while the engine
// drains.
func (r *Room) Admit(seat int, username, sessionID string) error {
	if r.e.draining.Load() {
		return ErrDraining
	}
	r.mu.Lock()
	defer r.unlock()
	if r.state >= StateEnding {
		return ErrRoomEnded
	}
	if seat < 0 || seat >= len(r.seats) {
		return ErrBadSeat
	}
	s := &r.seats[seat]
	now := r.e.now()
	switch {
	case s.status == seatFree:
		s.status = seatJoined
		s.username = truncate(username, roomwire.MaxUsernameLen)
		s.sessionID = sessionID
		s.since = now
		r.wakeLocked(now.Add(r.e.cfg.ConnectTimeout))
	case s.sessionID != sessionID:
		return ErrSeatTaken
	case s.status == seatJoined:
		s.since = now
	}
	return nil
}

// Join connects peer to seat for the login session of a verified connect
// ticket (handshake HELLO) and sends it WELCOME. A connection the seat
// already has is replaced: it gets ERROR(5 seat_taken, "replaced") and is
// closed. It returns ErrRoomEnded once the room is closing,
// ErrSeatUnavailable when the seat is not held and ErrSeatTaken when
// another session holds it.
func (r *Room) Join(seat int, sessionID string, peer Peer) (*Link, error) {
	r.mu.Lock()
	defer r.unlock()
	if r.state >= StateEnding {
		return nil, ErrRoomEnded
	}
	if seat < 0 || seat >= len(r.seats) || r.seats[seat].status == seatFree {
		return nil, ErrSeatUnavailable
	}
	if r.seats[seat].sessionID != sessionID {
		return nil, ErrSeatTaken
	}
	return r.connectLocked(seat, peer, false, 0)
}

// Resume reconnects peer with the key of a verified resume token
// (handshake RESUME; see Config.SealResume),
// sends it WELCOME, then the frames after lastFrame, as [Link.FrameReq]
// answers them (SNAPSHOT first when they are no longer retained and a
// snapshot bridges the gap; when none does, the next one that does is
// pushed). It returns
// ErrRoomEnded once the room is closing and ErrResumeRejected when the
// key is not the seat's current one (used, or the seat was released).
func (r *Room) Resume(k ResumeKey, lastFrame uint32, peer Peer) (*Link, error) {
	r.mu.Lock()
	defer r.unlock()
	if r.state >= StateEnding {
		return nil, ErrRoomEnded
	}
	if k.RoomID != r.cfg.ID || k.Seat < 0 || k.Seat >= len(r.seats) {
		return nil, ErrResumeRejected
	}
	s := &r.seats[k.Seat]
	if (s.status != seatOnline && s.status != seatOffline) || s.sessionID != k.SessionID || s.gen != k.Gen {
		return nil, ErrResumeRejected
	}
	return r.connectLocked(k.Seat, peer, true, lastFrame)
}

func (r *Room) connectLocked(i int, peer Peer, resume bool, lastFrame uint32) (*Link, error) {
	s := &r.seats[i]
	if old := s.link; old != nil {
		m := r.errorLocked(roomwire.CodeSeatTaken, ReasonReplaced, nil)
		old.detach()
		old.peer.Close(m)
		m.Release()
	}
	wasOnline := s.status == seatOnline
	s.status = seatOnline
	s.gen++
	s.stuck = false
	l := &Link{r: r, seat: i, peer: peer, conv: r.e.conv.Add(1), attached: true}
	s.link = l

	var tok []byte
	if seal := r.e.cfg.SealResume; seal != nil {
		if t := seal(ResumeKey{RoomID: r.cfg.ID, Seat: i, SessionID: s.sessionID, Gen: s.gen}); len(t) <= roomwire.MaxResumeTokenLen {
			tok = t
		}
	}
	w := &roomwire.Welcome{
		Conv:         l.conv,
		Seat:         uint8(i),
		SyncMode:     uint8(r.cfg.SyncMode),
		RoomState:    uint8(r.state),
		Frame:        r.frame,
		ResumeToken:  tok,
		ServerTimeMS: uint64(r.e.now().UnixMilli()),
		SnapshotSeat: -1,
		MaxPlayers:   uint8(r.cfg.MaxPlayers),
	}
	if r.frames != nil {
		w.TickRate = uint8(r.cfg.TickRate)
		if r.cfg.SnapshotInterval > 0 {
			w.SnapshotSeat = int8(r.snapshotSeatLocked())
		}
	}
	if r.state != StateWaiting {
		w.StartFrame = 1
	}
	size := 64 + len(tok)
	for j := range r.seats {
		if o := &r.seats[j]; o.status != seatFree {
			w.Members = append(w.Members, roomwire.MemberInfo{Seat: uint8(j), Username: o.username, Online: o.status == seatOnline})
			size += 4 + len(o.username)
		}
	}
	m := r.encodeLocked(w, size)
	l.send(m)
	m.Release()
	if resume {
		c := r.planLocked(lastFrame+1, r.frame)
		s.stuck = c.gap
		if c.any() {
			r.sendLocked(l, c)
		}
	}
	if !wasOnline {
		r.emit(Event{Kind: SeatOnline, Seat: i, SessionID: s.sessionID})
		r.memberLocked(i, roomwire.MemberOnline, "")
		if r.state == StateWaiting && r.cfg.StartMode == StartAuto {
			r.startLocked()
		}
	}
	return l, nil
}

// snapshotSeatLocked returns the lowest online seat, or -1.
func (r *Room) snapshotSeatLocked() int {
	for i := range r.seats {
		if r.seats[i].status == seatOnline {
			return i
		}
	}
	return -1
}

// offlineLocked marks seat i offline after its connection went away and
// tells the others.
func (r *Room) offlineLocked(i int, reason string) {
	s := &r.seats[i]
	if s.link != nil {
		s.link.detach()
	}
	if r.state >= StateEnding || s.status != seatOnline {
		return
	}
	s.status = seatOffline
	s.since = r.e.now()
	s.hasInput = false
	r.wakeLocked(s.since.Add(r.cfg.ReconnectWindow))
	r.emit(Event{Kind: SeatOffline, Seat: i, Reason: reason, SessionID: s.sessionID})
	r.memberLocked(i, roomwire.MemberOffline, reason)
	r.checkAllReadyLocked()
}

// releaseLocked frees seat i, whose connection the caller has already
// detached, and tells the others.
func (r *Room) releaseLocked(i int, reason string) {
	s := &r.seats[i]
	if l := s.link; l != nil {
		l.detach()
		l.peer.Close(nil)
	}
	r.emit(Event{Kind: SeatReleased, Seat: i, Reason: reason, SessionID: s.sessionID})
	r.memberLocked(i, roomwire.MemberLeft, reason)
	gen := s.gen + 1
	input, times := s.input[:0], s.times
	*s = seat{gen: gen, input: input, times: times}
	r.checkAllReadyLocked()
}

// checkAllReadyLocked starts an all_ready room once every online seat is
// ready.
func (r *Room) checkAllReadyLocked() {
	if r.state != StateWaiting || r.cfg.StartMode != StartAllReady {
		return
	}
	online := 0
	for i := range r.seats {
		if s := &r.seats[i]; s.status == seatOnline {
			if !s.ready {
				return
			}
			online++
		}
	}
	if online > 0 {
		r.startLocked()
	}
}

// memberLocked sends MEMBER about seat i to every other online seat.
func (r *Room) memberLocked(i int, kind uint8, reason string) {
	if r.state >= StateEnding {
		return
	}
	m := r.encodeLocked(&roomwire.Member{Seat: uint8(i), Username: r.seats[i].username, Kind: kind, Reason: reason}, 8+len(r.seats[i].username)+len(reason))
	r.broadcastLocked(m, i)
	m.Release()
}

// broadcastLocked sends m to every online seat but except.
func (r *Room) broadcastLocked(m *Msg, except int) {
	for i := range r.seats {
		if l := r.seats[i].link; l != nil && i != except {
			l.send(m)
		}
	}
}

// encodeLocked encodes a message the room builds itself; its fields are
// within their caps by construction.
func (r *Room) encodeLocked(msg roomwire.Message, size int) *Msg {
	m, err := r.e.pools.encode(msg, size)
	if err != nil {
		panic("rooms: encoding " + msg.Type().String() + ": " + err.Error())
	}
	return m
}

func (r *Room) errorLocked(code uint8, reason string, result []byte) *Msg {
	return r.e.errorMsg(code, reason, result)
}

// catchUp is what answers a request for a range of frames: the SNAPSHOT
// when snap is set, then frames from through to (none when from > to).
// gap is set when frames asked for are gone and no snapshot bridges them.
type catchUp struct {
	snap, gap bool
	from, to  uint32
}

// any reports whether c sends anything.
func (c catchUp) any() bool { return c.snap || c.from <= c.to }

// planLocked returns the answer to a request for frames from through to:
// the retained ones, and when from is no longer retained the SNAPSHOT
// first and the frames after it — when the snapshot reaches the retained
// frames (SNAPSHOT.frame + 1 ≥ the oldest kept), so the client has no gap.
// A snapshot older than that is useless (the frames after it are gone):
// the answer is then the retained frames only, as the spec says for a
// room without a snapshot, with gap set.
func (r *Room) planLocked(from, to uint32) catchUp {
	none := catchUp{from: 1, to: 0}
	if r.frames == nil || r.frames.first == 0 {
		return none
	}
	from = max(from, 1)
	to = min(to, r.frame)
	if from > to {
		return none
	}
	c := catchUp{from: from, to: to}
	if from < r.frames.first {
		if r.snap != nil && r.snapAt+1 >= r.frames.first {
			c.snap = true
			c.from = max(c.from, r.snapAt+1)
		} else {
			c.gap = true
		}
		c.from = max(c.from, r.frames.first)
	}
	return c
}

// pushSnapshotLocked sends the newest snapshot and the frames after it to
// every stuck seat (see seat.stuck), when the snapshot bridges the gap:
// a client that could not be caught up recovers without asking again.
// The push is charged to the seat's FRAME_REQ budget; a seat over it
// stays stuck for the next snapshot.
func (r *Room) pushSnapshotLocked(now int64) {
	if r.snap == nil || r.snapAt+1 < r.frames.first {
		return
	}
	c := catchUp{snap: true, from: r.snapAt + 1, to: r.frame}
	for i := range r.seats {
		s := &r.seats[i]
		if !s.stuck || s.link == nil || !r.chargeLocked(s, r.costLocked(c), now) {
			continue
		}
		s.stuck = false
		r.sendLocked(s.link, c)
	}
}

// costLocked returns what c costs in frames against a seat's FRAME_REQ
// budget: its frames, plus the frames of the room's largest size that
// its SNAPSHOT would fill; at least 1, at most the whole budget.
func (r *Room) costLocked(c catchUp) int64 {
	n := int64(0)
	if c.from <= c.to {
		n = int64(c.to-c.from) + 1
	}
	if c.snap {
		n += int64((len(r.snap.Payload()) + r.frameUnit - 1) / r.frameUnit)
	}
	return min(max(n, 1), r.reqCap)
}

// chargeLocked takes cost frames from seat s's FRAME_REQ budget at now
// (UnixNano) and reports whether they were there; when not, it takes
// nothing. The budget holds r.reqCap frames and refills at that many per
// Config.FrameReqWindow.
func (r *Room) chargeLocked(s *seat, cost, now int64) bool {
	window := int64(r.e.cfg.FrameReqWindow)
	if d := now - s.reqAt; d >= window {
		s.reqUsed = 0
	} else if d > 0 {
		s.reqUsed = max(s.reqUsed-d*r.reqCap, 0)
	}
	s.reqAt = max(now, s.reqAt)
	if s.reqUsed+cost*window > r.reqCap*window {
		return false
	}
	s.reqUsed += cost * window
	return true
}

// sendLocked sends c to l: the SNAPSHOT, then the frames as FRAME_BATCH
// messages of at most 300 frames. It stops as soon as l's peer refuses a
// message: the connection is dropped, and building the rest (up to
// megabytes, with the room locked) would be wasted.
func (r *Room) sendLocked(l *Link, c catchUp) {
	if c.snap {
		l.send(r.snap)
	}
	from, to := c.from, c.to
	for from <= to && from != 0 && !l.dead {
		end := to
		if end-from >= roomwire.MaxFramesPerBatch {
			end = from + roomwire.MaxFramesPerBatch - 1
		}
		m := r.e.pools.get(4 + r.frames.size(from, end))
		m.buf = roomwire.AppendFramesHeader(m.buf, roomwire.TypeFrameBatch, int(end-from+1))
		for f := from; f <= end; f++ {
			m.buf = append(m.buf, r.frames.record(f)...)
		}
		r.e.pools.seal(m)
		l.send(m)
		m.Release()
		from = end + 1
	}
}
