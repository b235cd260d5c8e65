package node

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/switchboardgg/switchboard/roomdb"
	"github.com/switchboardgg/switchboard/rooms"
)

// recordQueue writes the rooms' state changes to the shared records. Rooms
// hand it events with their lock held (it implements rooms.Observer and
// never blocks); one worker applies them in order, with one
// compare-and-set update per room per batch.
type recordQueue struct {
	// immutable
	db   *roomdb.DB // nil: events are dropped
	max  int
	now  func() time.Time
	log  *slog.Logger
	wake chan struct{}

	mu      sync.Mutex
	q       []rooms.Event
	busy    bool // the worker is applying a batch
	idle    chan struct{}
	dropped int
}

func newRecordQueue(db *roomdb.DB, max int, now func() time.Time, log *slog.Logger) *recordQueue {
	return &recordQueue{db: db, max: max, now: now, log: log, wake: make(chan struct{}, 1)}
}

// RoomEvent implements rooms.Observer.
func (w *recordQueue) RoomEvent(ev rooms.Event) {
	if w.db == nil {
		return
	}
	w.mu.Lock()
	if len(w.q) >= w.max {
		w.dropped++
		if w.dropped == 1 || w.dropped%1000 == 0 {
			w.log.Warn("record updates dropped: queue full", "dropped", w.dropped)
		}
		w.mu.Unlock()
		return
	}
	w.q = append(w.q, ev)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run applies the queued events until ctx ends.
func (w *recordQueue) run(ctx context.Context) {
	var batch []rooms.Event
	for {
		w.mu.Lock()
		batch, w.q = w.q, batch[:0]
		w.busy = len(batch) > 0
		if !w.busy && w.idle != nil {
			close(w.idle)
			w.idle = nil
		}
		w.mu.Unlock()
		if len(batch) == 0 {
			select {
			case <-ctx.Done():
				return
			case <-w.wake:
			}
			continue
		}
		w.apply(ctx, batch)
		clear(batch)
	}
}

// flush waits until every event queued so far is applied.
func (w *recordQueue) flush(ctx context.Context) error {
	w.mu.Lock()
	if len(w.q) == 0 && !w.busy {
		w.mu.Unlock()
		return nil
	}
	if w.idle == nil {
		w.idle = make(chan struct{})
	}
	idle := w.idle
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

var errNoChange = errors.New("node: no change")

// apply writes a batch, grouping the events of each room in order.
func (w *recordQueue) apply(ctx context.Context, batch []rooms.Event) {
	done := make(map[string]bool)
	for i, ev := range batch {
		if done[ev.RoomID] {
			continue
		}
		done[ev.RoomID] = true
		var evs []rooms.Event
		for _, e := range batch[i:] {
			if e.RoomID == ev.RoomID {
				evs = append(evs, e)
			}
		}
		if err := w.update(ctx, ev.RoomID, evs); err != nil && ctx.Err() == nil {
			w.log.Warn("record update failed", "room", ev.RoomID, "err", err)
		}
	}
}

// update applies evs to the record of room id.
func (w *recordQueue) update(ctx context.Context, id string, evs []rooms.Event) error {
	ctx, cancel := context.WithTimeout(ctx, DefaultUpdateTimeout)
	defer cancel()
	now := w.now().UTC()
	_, err := w.db.UpdateRoom(ctx, id, func(r *roomdb.Room) error {
		changed := false
		for _, ev := range evs {
			changed = applyEvent(r, ev, now) || changed
		}
		if !changed {
			return errNoChange
		}
		return nil
	})
	if errors.Is(err, errNoChange) || errors.Is(err, roomdb.ErrNotFound) {
		return nil
	}
	return err
}

// applyEvent changes r for ev and reports whether anything changed. Seat
// events apply only while the seat is held by the event's session.
func applyEvent(r *roomdb.Room, ev rooms.Event, now time.Time) bool {
	switch ev.Kind {
	case rooms.SeatOnline, rooms.SeatOffline:
		st := r.Seat(ev.Seat)
		if st == nil || st.SessionID != ev.SessionID {
			return false
		}
		if ev.Kind == rooms.SeatOffline {
			if st.Status == roomdb.SeatOffline {
				return false
			}
			st.Status = roomdb.SeatOffline
			return true
		}
		st.Status = roomdb.SeatOnline
		st.ConnectedAt = &now
		return true
	case rooms.SeatReleased:
		st := r.Seat(ev.Seat)
		if st == nil || st.SessionID != ev.SessionID {
			return false
		}
		return r.RemoveSeat(ev.Seat)
	case rooms.RoomPlaying:
		if r.State != roomdb.StateWaiting || r.StartedAt != nil {
			return false
		}
		r.State = roomdb.StatePlaying
		r.StartedAt = &now
		return true
	case rooms.RoomEnding:
		if r.Status == roomdb.StatusClosed || (r.State == roomdb.StateEnding && r.Status == roomdb.StatusClosing) {
			return false
		}
		r.State = roomdb.StateEnding
		r.Status = roomdb.StatusClosing
		if r.CloseReason == "" {
			r.CloseReason = ev.Reason
			if len(ev.Result) > 0 {
				r.CloseResult = append([]byte(nil), ev.Result...)
			}
		}
		return true
	case rooms.RoomClosed:
		if r.Status == roomdb.StatusClosed {
			return false
		}
		r.Status = roomdb.StatusClosed
		r.State = roomdb.StateEnding
		if r.CloseReason == "" {
			r.CloseReason = ev.Reason
		}
		r.ClosedAt = &now
		return true
	}
	return false
}
