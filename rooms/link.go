package rooms

import (
	"encoding/binary"

	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// Link is one connection's binding to its seat, returned by [Room.Join] and
// [Room.Resume]. The transport passes the messages it reads from the
// connection to its methods, and calls [Link.Disconnected] when the
// connection ends. Once the seat has another connection, or is released,
// the link is detached and its methods do nothing.
//
// Byte slices passed to the methods are copied before they return.
type Link struct {
	// immutable
	r    *Room
	seat int
	peer Peer
	conv uint32

	// guarded by r.mu
	attached bool // still the seat's connection
	dead     bool // Send failed; settled by Room.unlock
}

// Room returns the link's room.
func (l *Link) Room() *Room { return l.r }

// Seat returns the link's seat.
func (l *Link) Seat() int { return l.seat }

// Conv returns WELCOME.conv, the KCP conversation of the UDP channel.
func (l *Link) Conv() uint32 { return l.conv }

func (l *Link) send(m *Msg) {
	if l.dead {
		return
	}
	if !l.peer.Send(m) {
		l.dead = true
		l.r.dead = true
	}
}

// detach unbinds the link from its seat. The caller holds r.mu.
func (l *Link) detach() {
	l.attached = false
	if s := &l.r.seats[l.seat]; s.link == l {
		s.link = nil
	}
}

// Input records an INPUT: the newest one a seat sends between two ticks
// goes into the next frame. Inputs over 2 × tick_rate per second (sliding)
// are dropped; after Config.RateLimitSeconds consecutive seconds with drops
// the connection gets ERROR 7 rate_limited and the seat is released. Relay
// rooms ignore INPUT, and so do rooms not playing.
func (l *Link) Input(data []byte) {
	r := l.r
	if r.frames == nil || len(data) > roomwire.MaxInputLen {
		return
	}
	now := r.e.now().UnixNano()
	r.mu.Lock()
	defer r.unlock()
	if !l.attached {
		return
	}
	s := &r.seats[l.seat]
	for s.tN > 0 && s.times[s.tHead] <= now-int64(r.window) {
		s.tHead++
		if s.tHead == len(s.times) {
			s.tHead = 0
		}
		s.tN--
	}
	if s.tN == len(s.times) {
		if r.overLimitLocked(s, now) {
			m := r.errorLocked(roomwire.CodeRateLimited, "", nil)
			l.detach()
			l.peer.Close(m)
			m.Release()
			r.releaseLocked(l.seat, ReasonRateLimited)
		}
		return
	}
	s.times[(s.tHead+s.tN)%len(s.times)] = now
	s.tN++
	if r.state != StatePlaying {
		return
	}
	s.input = append(s.input[:0], data...)
	s.hasInput = true
}

// overLimitLocked counts a dropped input at now and reports whether the
// seat has now been over the limit for RateLimitSeconds seconds in a row.
func (r *Room) overLimitLocked(s *seat, now int64) bool {
	sec := now / 1e9
	switch {
	case s.overRun > 0 && sec == s.overSec:
		return false
	case s.overRun > 0 && sec == s.overSec+1:
		s.overRun++
	default:
		s.overRun = 1
	}
	s.overSec = sec
	return s.overRun >= r.e.cfg.RateLimitSeconds
}

// FrameReq answers a FRAME_REQ for frames from through to with FRAME_BATCH
// messages of at most 300 frames, in order; frames no longer retained are
// replaced by the SNAPSHOT when there is one that the retained frames
// continue. When there is none, the retained frames are sent, and the next
// snapshot that bridges the gap is pushed to the connection with the
// frames after it. A request is answered even when its frames were sent
// before (the client may have lost them); one over the seat's budget (see
// Config.FrameReqWindow) is ignored and counted in
// Stats.FrameReqsRefused.
func (l *Link) FrameReq(from, to uint32) {
	r := l.r
	if r.frames == nil {
		return
	}
	now := r.e.now().UnixNano()
	r.mu.Lock()
	defer r.unlock()
	if !l.attached {
		return
	}
	s := &r.seats[l.seat]
	c := r.planLocked(from, to)
	if c.gap || c.any() {
		s.stuck = c.gap
	}
	if !c.any() {
		return
	}
	if !r.chargeLocked(s, r.costLocked(c), now) {
		r.e.frameReqsRefused.Add(1)
		return
	}
	r.sendLocked(l, c)
}

// Custom routes a CUSTOM message to the online seats of the mask to (0: all
// of them), never back to the sender, with from set to the sender's seat and
// to as sent. Seats offline miss it. Messages over the seat's CUSTOM rate
// (Config.CustomRate and the others) are dropped.
func (l *Link) Custom(to uint16, reliable bool, data []byte) {
	r := l.r
	if len(data) > roomwire.MaxCustomLen {
		return
	}
	now := r.e.now().UnixNano()
	r.mu.Lock()
	defer r.unlock()
	if !l.attached || r.state >= StateEnding {
		return
	}
	mask := to
	if mask == 0 {
		mask = 0xFFFF
	}
	mask &^= 1 << l.seat
	n := 0
	for i := range r.seats {
		if mask&(1<<i) != 0 && r.seats[i].link != nil {
			n++
		}
	}
	if n == 0 || !r.customRateLocked(&r.seats[l.seat], len(data), now) {
		return
	}
	// CUSTOM: u16 to, u8 from, bool reliable, bytes data.
	m := r.e.pools.get(8 + len(data))
	m.buf = append(m.buf, byte(roomwire.TypeCustom), byte(to>>8), byte(to), byte(l.seat), 0)
	if reliable {
		m.buf[len(m.buf)-1] = 1
	}
	m.buf = binary.AppendUvarint(m.buf, uint64(len(data)))
	m.buf = append(m.buf, data...)
	r.e.pools.seal(m)
	for i := range r.seats {
		if o := r.seats[i].link; o != nil && mask&(1<<i) != 0 {
			o.send(m)
		}
	}
	m.Release()
}

// customRateLocked charges a CUSTOM of size bytes to seat s at now
// (UnixNano) and reports whether both of its buckets could pay for it.
func (r *Room) customRateLocked(s *seat, size int, now int64) bool {
	c := &r.e.cfg
	s.custMsgs.refill(now, int64(c.CustomRate))
	s.custBytes.refill(now, int64(c.CustomByteRate))
	if !s.custMsgs.fits(1, int64(c.CustomBurst)) || !s.custBytes.fits(int64(size), int64(c.CustomByteBurst)) {
		return false
	}
	s.custMsgs.take(1)
	s.custBytes.take(int64(size))
	return true
}

// Ready marks the seat ready; an all_ready room starts once every online
// seat is.
func (l *Link) Ready() {
	r := l.r
	r.mu.Lock()
	defer r.unlock()
	if !l.attached {
		return
	}
	r.seats[l.seat].ready = true
	r.checkAllReadyLocked()
}

// SnapshotPut keeps the snapshot when snapshots are on, frame is a frame
// produced already, and it is newer than the snapshot kept; otherwise it
// does nothing. A snapshot kept is pushed, with the frames after it, to
// the connections whose last catch-up it would have completed (see
// [Link.FrameReq]).
func (l *Link) SnapshotPut(frame uint32, data []byte) {
	r := l.r
	if r.frames == nil || r.cfg.SnapshotInterval <= 0 || len(data) > roomwire.MaxSnapshotLen {
		return
	}
	now := r.e.now().UnixNano()
	r.mu.Lock()
	defer r.unlock()
	if !l.attached || frame == 0 || frame > r.frame || (r.snap != nil && frame <= r.snapAt) {
		return
	}
	// SNAPSHOT: u32 frame, bytes data.
	m := r.e.pools.get(8 + len(data))
	m.buf = append(m.buf, byte(roomwire.TypeSnapshot))
	m.buf = binary.BigEndian.AppendUint32(m.buf, frame)
	m.buf = binary.AppendUvarint(m.buf, uint64(len(data)))
	m.buf = append(m.buf, data...)
	r.e.pools.seal(m)
	if r.snap != nil {
		r.snap.Release()
	}
	r.snap, r.snapAt = m, frame
	r.pushSnapshotLocked(now)
}

// Leave releases the seat for good (LEAVE): the others get MEMBER left
// "left" and the connection is closed.
func (l *Link) Leave() {
	r := l.r
	r.mu.Lock()
	defer r.unlock()
	if !l.attached || r.state >= StateEnding {
		return
	}
	r.releaseLocked(l.seat, ReasonLeft)
}

// Disconnected tells the room the connection is gone; reason is
// ReasonNetwork, or ReasonTimeout when it was idle (another one is cut to
// roomwire.MaxReasonLen). The seat goes offline (MEMBER offline) for the
// room's reconnect window.
func (l *Link) Disconnected(reason string) {
	reason = truncate(reason, roomwire.MaxReasonLen)
	r := l.r
	r.mu.Lock()
	defer r.unlock()
	if !l.attached {
		return
	}
	r.offlineLocked(l.seat, reason)
}
