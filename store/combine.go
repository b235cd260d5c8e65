package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// maxCombined bounds the updates of one room written together.
const maxCombined = 64

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
type combiner struct {
	db *DB

	mu    sync.Mutex
	rooms map[string]*roomQueue // guarded by mu; rooms being written
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
	return &combiner{db: db, rooms: make(map[string]*roomQueue)}
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

	c.write(id, batch)

	c.mu.Lock()
	if len(q.waiting) == 0 {
		delete(c.rooms, id)
	} else {
		close(q.waiting[0].lead)
	}
	c.mu.Unlock()
}

// errNothingWritten aborts a combined update whose functions all failed.
var errNothingWritten = errors.New("store: nothing to write")

// write applies the batch to the record and writes it, and gives each
// update its result. It runs detached from the callers' contexts, for
// Config.UpdateTimeout at most, since it writes for all of them.
func (c *combiner) write(id string, batch []*roomOp) {
	ctx, cancel := context.WithTimeout(context.Background(), c.db.cfg.UpdateTimeout)
	defer cancel()
	errs := make([]error, len(batch))
	room, err := update(ctx, c.db.rooms, "room", id, func(r *Room) error {
		normalizeRoom(r)
		written := false
		for i, op := range batch {
			next := r.Clone()
			if err := op.fn(next); err != nil {
				errs[i] = err
				continue
			}
			if next.RoomID != id {
				errs[i] = fmt.Errorf("store: update room %s: room_id changed to %q", id, next.RoomID)
				continue
			}
			normalizeRoom(next)
			*r, errs[i], written = *next, nil, true
		}
		if !written {
			return errNothingWritten
		}
		return nil
	})
	for i, op := range batch {
		switch {
		case errors.Is(err, errNothingWritten):
			op.err = errs[i]
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
