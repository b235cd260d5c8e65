package frameassembly

import "github.com/switchboardgg/switchboard/protocol/roomwire"

// MaxBuffered is the number of frames an [Assembler] keeps while it waits for
// a missing one: twice the largest FRAME_BATCH ([roomwire.MaxFramesPerBatch]).
// A frame numbered next + MaxBuffered or higher is dropped on arrival and
// requested again later. frames.json states the same bound as "max_buffered".
const MaxBuffered = 2 * roomwire.MaxFramesPerBatch

// gapFrames is how far ahead of next the newest frame must be before a
// FRAME_REQ is sent: a FRAME carries its frame and the two before it, so a
// smaller gap fills itself.
const gapFrames = 3

// An Assembler orders the frames of one room for one client; see the package
// documentation for the algorithm. The zero value is ready to use and expects
// frame 1, as after a WELCOME with frame 0.
type Assembler struct {
	last    uint64 // the last frame delivered; next is last + 1
	newest  uint64 // highest frame number received ≥ next, buffered or not
	reqNext uint64 // the next for which a FRAME_REQ was returned; 0 for none
	count   int    // frames in slots
	// slots is a ring of MaxBuffered entries, allocated on first use; frame n
	// lives in slots[n%MaxBuffered]. Every buffered frame lies in
	// [next, next+MaxBuffered), so no two share a slot.
	slots []slot
}

// slot holds one buffered frame in memory the Assembler owns and reuses.
type slot struct {
	full  bool
	frame roomwire.TickFrame // its Inputs are reused; their Data point into data
	data  []byte             // the input bytes of frame, one after the other
}

// New returns an Assembler for a client that received a WELCOME whose frame
// is welcomeFrame: it delivers frames from welcomeFrame + 1 on.
func New(welcomeFrame uint32) *Assembler {
	a := new(Assembler)
	a.Reset(welcomeFrame)
	return a
}

// Reset empties the Assembler and expects frame welcomeFrame + 1, as [New]
// does, keeping its memory for reuse. It is for a client that starts over
// without game state to keep; a client that keeps its game state across a
// new HELLO calls [Assembler.CatchUp] instead.
func (a *Assembler) Reset(welcomeFrame uint32) {
	for i := range a.slots {
		a.slots[i].full = false
	}
	*a = Assembler{last: uint64(welcomeFrame), slots: a.slots}
}

// Next returns the number of the frame the Assembler delivers next.
// It wraps to 0 only after frame 4294967295 has been delivered.
func (a *Assembler) Next() uint32 { return uint32(a.last + 1) }

// Last returns the last frame delivered, or the frame of the WELCOME or
// SNAPSHOT that set the Assembler if none has been delivered since: the
// frame the game state stands at. It is the value of INPUT.ack_frame and
// RESUME.last_frame.
func (a *Assembler) Last() uint32 { return uint32(a.last) }

// Buffered returns how many frames wait in the buffer; never more than
// [MaxBuffered].
func (a *Assembler) Buffered() int { return a.count }

// Push takes the frames of one FRAME or FRAME_BATCH message, in any order,
// and calls deliver with every frame that is now in order, oldest first.
// When a gap remains that the redundancy of FRAME cannot fill, it returns
// the FRAME_REQ to send and true; it returns a request at most once for each
// value of [Assembler.Next].
//
// Push copies what it keeps: frames may alias a buffer the caller reuses.
// The frame passed to deliver stays valid until the next call of Push,
// Snapshot or Reset.
func (a *Assembler) Push(frames []roomwire.TickFrame, deliver func(roomwire.TickFrame)) (roomwire.FrameReq, bool) {
	next := a.last + 1
	for i := range frames {
		f := &frames[i]
		n := uint64(f.Number)
		if n < next {
			continue // already delivered
		}
		a.newest = max(a.newest, n)
		if n >= next+MaxBuffered {
			continue // beyond the bound: requested again below
		}
		if a.slots == nil {
			a.slots = make([]slot, MaxBuffered)
		}
		s := &a.slots[n%MaxBuffered]
		if s.full {
			continue // a duplicate: only frame n can occupy this slot now
		}
		s.store(f)
		a.count++
	}
	a.drain(deliver)
	next = a.last + 1
	if a.newest >= next+gapFrames && a.reqNext != next {
		a.reqNext = next
		return roomwire.FrameReq{From: uint32(next), To: uint32(a.newest - 1)}, true
	}
	return roomwire.FrameReq{}, false
}

// Snapshot applies a SNAPSHOT of frame: the game state now stands at frame,
// so the Assembler expects frame + 1, drops buffered frames up to frame, and
// calls deliver with the buffered frames that are now in order. The caller
// restores the game state from the snapshot before calling Snapshot. A
// snapshot older than [Assembler.Last] moves next back, and the frames after
// it are delivered again as they arrive.
func (a *Assembler) Snapshot(frame uint32, deliver func(roomwire.TickFrame)) {
	a.last = uint64(frame)
	next := a.last + 1
	if a.count > 0 {
		for i := range a.slots {
			s := &a.slots[i]
			n := uint64(s.frame.Number)
			if s.full && (n < next || n >= next+MaxBuffered) {
				s.full = false
				a.count--
			}
		}
	}
	a.drain(deliver)
}

// CatchUp is for a client that joined again with HELLO after its resume was
// rejected and keeps its game state: the node does not resend the frames
// missed while disconnected, so CatchUp returns FRAME_REQ(from=next,
// to=welcomeFrame) and true when welcomeFrame ≥ next, and false when nothing
// is missing. Either way it forgets the requests made on the old connection,
// and buffered frames stay.
func (a *Assembler) CatchUp(welcomeFrame uint32) (roomwire.FrameReq, bool) {
	a.reqNext = 0
	next := a.last + 1
	if uint64(welcomeFrame) < next {
		return roomwire.FrameReq{}, false
	}
	a.reqNext = next
	return roomwire.FrameReq{From: uint32(next), To: welcomeFrame}, true
}

// drain delivers buffered frames from next on while there is no gap.
func (a *Assembler) drain(deliver func(roomwire.TickFrame)) {
	for a.count > 0 {
		next := a.last + 1
		s := &a.slots[next%MaxBuffered]
		if !s.full {
			return
		}
		s.full = false
		a.count--
		a.last = next
		deliver(s.frame)
	}
}

// store copies f into s, reusing the memory s already has.
func (s *slot) store(f *roomwire.TickFrame) {
	size := 0
	for i := range f.Inputs {
		size += len(f.Inputs[i].Data)
	}
	if cap(s.data) < size {
		s.data = make([]byte, size)
	}
	s.data = s.data[:size]
	k := len(f.Inputs)
	if cap(s.frame.Inputs) < k {
		s.frame.Inputs = make([]roomwire.SeatInput, k)
	}
	s.frame.Inputs = s.frame.Inputs[:k]
	off := 0
	for i := range f.Inputs {
		in := &f.Inputs[i]
		end := off + copy(s.data[off:], in.Data)
		s.frame.Inputs[i] = roomwire.SeatInput{Seat: in.Seat, Data: s.data[off:end:end]}
		off = end
	}
	s.frame.Number = f.Number
	s.full = true
}
