package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/switchboardgg/switchboard/rooms"
	"github.com/switchboardgg/switchboard/store"
)

// Retries of the record worker: after a failed update it pauses, from
// retryMin doubling up to Config.UpdateTimeout, until an update succeeds.
// While updates fail it logs at most once per failLogEvery.
const (
	retryMin     = 100 * time.Millisecond
	failLogEvery = 30 * time.Second
)

// recordQueue writes the rooms' state changes to the shared records. Rooms
// hand it events with their lock held (it implements rooms.Observer and
// never blocks). It keeps, per room, only the latest state that the record
// must learn — the room's state and each seat's latest change — so what
// waits is bounded by the rooms and their seats, whatever the number of
// events, and nothing is dropped while the records cannot be reached. One
// worker writes each room's pending changes with one compare-and-set
// update, and retries failed ones.
type recordQueue struct {
	// immutable
	db      *store.DB // nil: events are dropped
	timeout time.Duration
	now     func() time.Time
	log     *slog.Logger
	wake    chan struct{}

	mu      sync.Mutex
	pending map[string]*roomChange // by room id
	busy    bool                   // the worker holds changes it took
	idle    chan struct{}          // closed when nothing is pending or held
}

func newRecordQueue(db *store.DB, timeout time.Duration, now func() time.Time, log *slog.Logger) *recordQueue {
	return &recordQueue{
		db: db, timeout: timeout, now: now, log: log,
		wake:    make(chan struct{}, 1),
		pending: make(map[string]*roomChange),
	}
}

// roomChange is what the record of one room must learn.
type roomChange struct {
	playing     bool
	startedAt   time.Time
	ending      bool
	endReason   string
	endResult   []byte // not modified (rooms.Event.Result)
	closed      bool
	closeReason string
	closedAt    time.Time
	seats       [rooms.MaxSeats]seatChange
}

// seatOp is the status change of a seat.
type seatOp uint8

const (
	opNone     seatOp = iota // no status change
	opJoined                 // status joined: admitted again after a release
	opOnline                 // status online
	opOffline                // status offline
	opReleased               // the seat is free
)

// seatChange is the latest change of one seat. Only the seat's holder's
// record is changed: a change applies to the seat while the record shows
// it held by session; an admission (ensure) also puts the seat back when
// the record lacks it.
type seatChange struct {
	session  string // login session of the change; empty: nothing pending
	op       seatOp
	at       time.Time // opOnline: connected_at
	released string    // an earlier session whose release is pending too

	ensure   bool      // the engine admitted session: the record must hold the seat
	username string    // ensure: of a seat put back
	joinedAt time.Time // ensure: of a seat put back
}

// then returns c followed by the later change n.
func (c seatChange) then(n seatChange) seatChange {
	switch {
	case c.session == "":
		return n
	case n.session == "":
		return c
	}
	r := n
	if r.released == "" {
		r.released = c.released
		if n.session != c.session && c.op == opReleased {
			r.released = c.session
		}
	}
	if n.session != c.session {
		return r
	}
	switch {
	case n.op == opNone && c.op == opReleased: // released, then admitted again
		r.op = opJoined
	case n.op == opNone:
		r.op, r.at = c.op, c.at
	}
	r.ensure = n.ensure || (c.ensure && n.op != opReleased)
	if !n.ensure {
		r.username, r.joinedAt = c.username, c.joinedAt
	}
	return r
}

// apply changes seat i of r and reports whether anything changed.
// heldAgain reports whether a release of the seat by a session is
// superseded: the engine admitted the session again since.
func (c *seatChange) apply(r *store.Room, i int, heldAgain func(session string) bool) bool {
	changed := false
	if c.released != "" && !heldAgain(c.released) {
		changed = r.ReleaseSeat(i, c.released)
	}
	if r.Seat(i) == nil {
		if !c.ensure || c.op == opReleased || !r.RestoreSeat(i, c.username, c.session, c.joinedAt) {
			return changed
		}
		changed = true
	}
	switch c.op {
	case opReleased:
		if heldAgain(c.session) {
			return changed
		}
		return r.ReleaseSeat(i, c.session) || changed
	case opJoined:
		return r.SetSeatStatus(i, c.session, store.SeatJoined, time.Time{}) || changed
	case opOnline:
		return r.SetSeatStatus(i, c.session, store.SeatOnline, c.at) || changed
	case opOffline:
		return r.SetSeatStatus(i, c.session, store.SeatOffline, time.Time{}) || changed
	}
	return changed
}

// event records ev, which happened at now.
func (c *roomChange) event(ev rooms.Event, now time.Time) {
	var op seatOp
	switch ev.Kind {
	case rooms.SeatOnline:
		op = opOnline
	case rooms.SeatOffline:
		op = opOffline
	case rooms.SeatReleased:
		op = opReleased
	case rooms.RoomPlaying:
		if !c.playing {
			c.playing, c.startedAt = true, now
		}
		return
	case rooms.RoomEnding:
		if !c.ending {
			c.ending, c.endReason, c.endResult = true, ev.Reason, ev.Result
		}
		return
	case rooms.RoomClosed:
		if !c.closed {
			c.closed, c.closeReason, c.closedAt = true, ev.Reason, now
		}
		return
	default:
		return
	}
	if ev.Seat < 0 || ev.Seat >= len(c.seats) || ev.SessionID == "" {
		return
	}
	c.seats[ev.Seat] = c.seats[ev.Seat].then(seatChange{session: ev.SessionID, op: op, at: now})
}

// admitted records that session was admitted to seat at now.
func (c *roomChange) admitted(seat int, username, session string, now time.Time) {
	c.seats[seat] = c.seats[seat].then(seatChange{session: session, ensure: true, username: username, joinedAt: now})
}

// then adds the later changes n to c.
func (c *roomChange) then(n *roomChange) {
	if n.playing && !c.playing {
		c.playing, c.startedAt = true, n.startedAt
	}
	if n.ending && !c.ending {
		c.ending, c.endReason, c.endResult = true, n.endReason, n.endResult
	}
	if n.closed && !c.closed {
		c.closed, c.closeReason, c.closedAt = true, n.closeReason, n.closedAt
	}
	for i := range c.seats {
		c.seats[i] = c.seats[i].then(n.seats[i])
	}
}

// apply changes r and reports whether anything changed. heldAgain
// reports whether a release of seat by session is superseded.
func (c *roomChange) apply(r *store.Room, heldAgain func(seat int, session string) bool) bool {
	changed := false
	if c.playing {
		changed = r.MarkPlaying(c.startedAt) || changed
	}
	for i := range c.seats {
		if c.seats[i].session != "" {
			changed = c.seats[i].apply(r, i, func(session string) bool { return heldAgain(i, session) }) || changed
		}
	}
	if c.ending {
		changed = r.MarkEnding(c.endReason, c.endResult) || changed
	}
	if c.closed {
		changed = r.MarkClosed(c.closeReason, c.closedAt) || changed
	}
	return changed
}

// RoomEvent implements rooms.Observer.
func (w *recordQueue) RoomEvent(ev rooms.Event) {
	if w.db == nil {
		return
	}
	now := w.now().UTC()
	w.mu.Lock()
	c := w.pending[ev.RoomID]
	if c == nil {
		c = new(roomChange)
		w.pending[ev.RoomID] = c
	}
	c.event(ev, now)
	w.mu.Unlock()
	w.signal()
}

// admitted records that the engine admitted session to seat of room id:
// the record must show the seat held by the session, which it may no
// longer do when the node released the seat just before (C1 again while
// the release was on its way to the record).
func (w *recordQueue) admitted(id string, seat int, username, session string) {
	if w.db == nil || seat < 0 || seat >= rooms.MaxSeats || session == "" {
		return
	}
	now := w.now().UTC()
	w.mu.Lock()
	c := w.pending[id]
	if c == nil {
		c = new(roomChange)
		w.pending[id] = c
	}
	c.admitted(seat, username, session, now)
	w.mu.Unlock()
	w.signal()
}

// heldAgain reports whether a change pending for seat of room id, newer
// than the ones being written, has the seat held by session: a release by
// session being written is then superseded and skipped, and the seat is
// marked joined (the engine admitted the session again after releasing
// it).
func (w *recordQueue) heldAgain(id string, seat int, session string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.pending[id]
	if c == nil {
		return false
	}
	n := &c.seats[seat]
	if n.session != session || n.op == opReleased { // held again only through an admission
		return false
	}
	if n.op == opNone {
		n.op = opJoined
	}
	return true
}

func (w *recordQueue) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run writes the pending changes until ctx ends.
func (w *recordQueue) run(ctx context.Context) {
	var (
		batch    = make(map[string]*roomChange)
		failures int // updates failed in a row
		logged   time.Time
		pause    = time.NewTimer(0)
	)
	defer pause.Stop()
	for {
		w.mu.Lock()
		if len(w.pending) == 0 {
			w.busy = false
			if w.idle != nil {
				close(w.idle)
				w.idle = nil
			}
			w.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-w.wake:
			}
			continue
		}
		batch, w.pending = w.pending, batch
		w.busy = true
		w.mu.Unlock()

		err := w.apply(ctx, batch)
		if len(batch) > 0 { // not written: back in front of what came since
			w.mu.Lock()
			for id, c := range batch {
				if n := w.pending[id]; n != nil {
					c.then(n)
				}
				w.pending[id] = c
			}
			n := len(w.pending)
			w.mu.Unlock()
			clear(batch)
			if ctx.Err() != nil {
				return
			}
			failures++
			if now := time.Now(); failures == 1 || now.Sub(logged) >= failLogEvery {
				logged = now
				w.log.Warn("record updates failing; retrying", "rooms_pending", n, "failures", failures, "err", err)
			}
			pause.Reset(min(retryMin<<min(failures-1, 16), max(w.timeout, retryMin)))
			select {
			case <-ctx.Done():
				return
			case <-pause.C:
			}
			continue
		}
		if failures > 0 {
			w.log.Info("record updates written again", "failures", failures)
			failures = 0
		}
	}
}

// apply writes the changes of batch, removing from it the rooms written.
// It stops at the first update that failed and may succeed later, and
// returns its error.
func (w *recordQueue) apply(ctx context.Context, batch map[string]*roomChange) error {
	for id, c := range batch {
		err := w.update(ctx, id, c)
		switch {
		case err == nil, errors.Is(err, store.ErrNotFound):
		case errors.Is(err, store.ErrTooLarge), errors.Is(err, store.ErrInvalidID):
			w.log.Warn("record update refused", "room", id, "err", err) // retrying would not help
		default:
			return fmt.Errorf("room %s: %w", id, err)
		}
		delete(batch, id)
	}
	return nil
}

var errNoChange = errors.New("node: no change")

// update writes c to the record of room id.
func (w *recordQueue) update(ctx context.Context, id string, c *roomChange) error {
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	heldAgain := func(seat int, session string) bool { return w.heldAgain(id, seat, session) }
	_, err := w.db.UpdateRoom(ctx, id, func(r *store.Room) error {
		if !c.apply(r, heldAgain) {
			return errNoChange
		}
		return nil
	})
	if errors.Is(err, errNoChange) {
		return nil
	}
	return err
}

// takeBack closes in the records the rooms that node nodeID ran before
// this process started (the same id, kept across restarts): their engine
// state died with the old process, so their players could neither
// resume nor be told; closing them with reason node_restarted lets C1
// answer 409 room_not_open and the game backend see why, instead of
// control admitting players into an empty engine room whose record still
// shows the old seats. It returns the number of rooms closed.
func (w *recordQueue) takeBack(ctx context.Context, nodeID string, runs func(roomID string) bool) (int, error) {
	if w.db == nil {
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(ctx, takeBackTimeout)
	defer cancel()
	old, err := w.db.RoomsOfNode(ctx, nodeID)
	if err != nil {
		return 0, fmt.Errorf("node: take back rooms: %w", err)
	}
	now := w.now().UTC()
	closed := 0
	for _, r := range old {
		if runs(r.RoomID) {
			continue
		}
		_, err := w.db.UpdateRoom(ctx, r.RoomID, func(rec *store.Room) error {
			if rec.NodeID != nodeID || !rec.MarkClosed(store.CloseReasonNodeRestarted, now) {
				return errNoChange
			}
			return nil
		})
		switch {
		case err == nil:
			closed++
		case errors.Is(err, errNoChange), errors.Is(err, store.ErrNotFound):
		default:
			return closed, fmt.Errorf("node: take back room %s: %w", r.RoomID, err)
		}
	}
	return closed, nil
}

// purgeEvery is the period of the purge of closed rooms.
const purgeEvery = 10 * time.Minute

// purgeLoop deletes, at start and then every purgeEvery, the rooms closed
// more than store.ClosedRoomRetention ago that this node ran, or whose
// node is gone from the registry, so that closed rooms go even when
// nobody reads them (control also deletes one it reads). Several nodes
// may purge the same orphan; deleting twice is harmless.
func (w *recordQueue) purgeLoop(ctx context.Context, nodeID string) {
	if w.db == nil {
		return
	}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, purgeEvery/2)
		n, err := w.db.PurgeClosedRooms(pctx, w.now().Add(-store.ClosedRoomRetention), func(r *store.Room) bool {
			if r.NodeID == nodeID {
				return true
			}
			_, err := w.db.GetNode(pctx, r.NodeID)
			return errors.Is(err, store.ErrNotFound)
		})
		cancel()
		switch {
		case err != nil && ctx.Err() == nil:
			w.log.Warn("purge of closed rooms failed; retrying later", "purged", n, "err", err)
		case n > 0:
			w.log.Info("purged closed rooms", "rooms", n)
		}
		t.Reset(purgeEvery)
	}
}

// takeBackTimeout bounds the records' take-back at start.
const takeBackTimeout = 30 * time.Second

// flush waits until every change made so far is written.
func (w *recordQueue) flush(ctx context.Context) error {
	w.mu.Lock()
	if len(w.pending) == 0 && !w.busy {
		w.mu.Unlock()
		return nil
	}
	if w.idle == nil {
		w.idle = make(chan struct{})
	}
	idle := w.idle
	w.mu.Unlock()
	w.signal()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
