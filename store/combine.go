package store

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/switchboardgg/switchboard/backbone"
)

// maxCombined bounds the updates of one room written together.
const maxCombined = 64

// maxCachedRooms bounds the room records the combiner remembers.
const maxCachedRooms = 10_000

// combiner makes this process the one writer of each room record it
// updates: the updates of a room that arrive while one is being written
// wait, and are then applied together, in arrival order, to one read of
// the record and written with one compare-and-set. Players filling a room
// together thus no longer retry against each other; only other processes
// (another control, the room's node) can make a write conflict.
//
// The caller whose update finds nobody writing the room does the writing
// (it leads); when it is done and updates wait, it hands the lead to the
// oldest waiting caller. No goroutine is started.
//
// The combiner remembers the record and revision it last wrote of each
// room (up to maxCachedRooms), and applies the next updates to that copy
// without reading the record again: the compare-and-set write fails if
// anyone else wrote it since, and the updates are then applied again to
// a fresh read. An update refused on the remembered copy is also applied
// again to a fresh read, so that no update is refused on stale data.
type combiner struct {
	db *DB

	mu     sync.Mutex
	rooms  map[string]*roomQueue // guarded by mu; rooms being written
	cached map[string]cachedRoom // guarded by mu; the last write of a room
}

// cachedRoom is a room record as this process last wrote it.
type cachedRoom struct {
	room *Room // not modified
	rev  uint64
}

// roomQueue is the updates of one room waiting to be written.
type roomQueue struct {
	waiting []*roomOp // guarded by combiner.mu
}

// roomOp is one caller's update.
type roomOp struct {
	fn   func(*Room) error
	room *Room         // result, set before done is closed
	err  error         // result
	done chan struct{} // closed when the result is set
	lead chan struct{} // closed when this caller must write the next batch
}

func newCombiner(db *DB) *combiner {
	return &combiner{db: db, rooms: make(map[string]*roomQueue), cached: make(map[string]cachedRoom)}
}

// update applies fn to room id with the updates of the room that other
// callers of this process make at the same time; see [DB.UpdateRoom].
func (c *combiner) update(ctx context.Context, id string, fn func(*Room) error) (*Room, error) {
	op := &roomOp{fn: fn, done: make(chan struct{}), lead: make(chan struct{})}
	c.mu.Lock()
	q := c.rooms[id]
	leads := q == nil
	if leads {
		q = &roomQueue{}
		c.rooms[id] = q
	}
	q.waiting = append(q.waiting, op)
	c.mu.Unlock()

	if !leads {
		select {
		case <-op.done:
			return op.room, op.err
		case <-op.lead:
		case <-ctx.Done():
			c.mu.Lock()
			select {
			case <-op.lead: // handed the lead just now: it must be taken
				c.mu.Unlock()
			default:
				if i := indexOp(q.waiting, op); i >= 0 { // not taken yet: give up
					q.waiting = append(q.waiting[:i], q.waiting[i+1:]...)
					c.mu.Unlock()
					return nil, fmt.Errorf("store: update room %s: %w", id, ctx.Err())
				}
				c.mu.Unlock()
				<-op.done // being written: wait for the outcome
				return op.room, op.err
			}
		}
	}
	c.lead(id, q)
	<-op.done
	return op.room, op.err
}

func indexOp(ops []*roomOp, op *roomOp) int {
	for i, o := range ops {
		if o == op {
			return i
		}
	}
	return -1
}

// lead writes one batch of q, the caller's own update first, then hands
// the lead on or, when nothing waits, forgets the room.
func (c *combiner) lead(id string, q *roomQueue) {
	c.mu.Lock()
	n := min(len(q.waiting), maxCombined)
	batch := append([]*roomOp(nil), q.waiting[:n]...)
	q.waiting = append(q.waiting[:0], q.waiting[n:]...)
	c.mu.Unlock()

	defer func() {
		if p := recover(); p != nil { // an update's fn panicked: fail the batch, pass the lead on
			for _, op := range batch {
				select {
				case <-op.done:
				default:
					op.err = fmt.Errorf("store: update room %s: panic in an update", id)
					close(op.done)
				}
			}
			c.handOff(id, q)
			panic(p)
		}
	}()
	c.write(id, batch)
	c.handOff(id, q)
}

// handOff gives the lead of room id to the oldest waiting update, or
// forgets the room when none waits.
func (c *combiner) handOff(id string, q *roomQueue) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(q.waiting) == 0 {
		delete(c.rooms, id)
		return
	}
	close(q.waiting[0].lead)
}

// write applies the batch to the record and writes it, and gives each
// update its result. It runs detached from the callers' contexts, for
// Config.UpdateTimeout at most, since it writes for all of them.
func (c *combiner) write(id string, batch []*roomOp) {
	ctx, cancel := context.WithTimeout(context.Background(), c.db.cfg.UpdateTimeout)
	defer cancel()
	room, errs, err := c.apply(ctx, id, batch)
	for i, op := range batch {
		switch {
		case err != nil:
			op.err = err
		case errs[i] != nil:
			op.err = errs[i]
		default:
			op.room = room.Clone()
		}
		close(op.done)
	}
}

// apply is the compare-and-set loop of a batch. It returns the room
// written (nil if every update failed), the error of each update, and
// the error that failed them all.
func (c *combiner) apply(ctx context.Context, id string, batch []*roomOp) (*Room, []error, error) {
	errs := make([]error, len(batch))
	c.mu.Lock()
	cached, fromCache := c.cached[id]
	c.mu.Unlock()
	for attempt := range c.db.cfg.MaxRetries {
		var (
			r   *Room
			rev uint64
			err error
		)
		if fromCache {
			r, rev = cached.room.Clone(), cached.rev
		} else if r, rev, err = c.db.rooms.Get(ctx, roomKey(id)); err != nil {
			c.forget(id)
			return nil, nil, storeErr("update", "room", id, err)
		}
		normalizeRoom(r)
		written, refused := false, false
		for i, op := range batch {
			next := r.Clone()
			if err := op.fn(next); err != nil {
				errs[i], refused = err, true
				continue
			}
			if next.RoomID != id {
				errs[i], refused = fmt.Errorf("store: update room %s: room_id changed to %q", id, next.RoomID), true
				continue
			}
			normalizeRoom(next)
			r, errs[i], written = next, nil, true
		}
		if fromCache && refused {
			fromCache = false // refused on what may be stale: read and apply again
			continue
		}
		if !written {
			return nil, errs, nil
		}
		nrev, err := c.db.rooms.UpdateAt(ctx, roomKey(id), r, rev)
		if err == nil {
			c.remember(id, r, nrev)
			return r, errs, nil
		}
		c.forget(id)
		if !errors.Is(err, backbone.ErrConflict) {
			return nil, nil, storeErr("update", "room", id, err)
		}
		if !fromCache {
			if err := backbone.Backoff(ctx, attempt); err != nil {
				return nil, nil, fmt.Errorf("store: update room %s: %w", id, err)
			}
		}
		fromCache = false
	}
	return nil, nil, fmt.Errorf("store: update room %s after %d attempts: %w", id, c.db.cfg.MaxRetries, ErrConflict)
}

// remember keeps r (not modified afterwards) as the room's record at rev.
func (c *combiner) remember(id string, r *Room, rev uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.cached[id]; !ok && len(c.cached) >= maxCachedRooms {
		for k := range c.cached { // one, at random
			delete(c.cached, k)
			break
		}
	}
	c.cached[id] = cachedRoom{room: r, rev: rev}
}

// forget drops the remembered record of room id.
func (c *combiner) forget(id string) {
	c.mu.Lock()
	delete(c.cached, id)
	c.mu.Unlock()
}
