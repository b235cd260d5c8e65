package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Players filling a room together through one DB: every seat lands, the
// refused updates leave no trace, and nobody retries against the others:
// each update's function runs once, or twice when it was refused on the
// remembered copy and applied again to a fresh read (no compare-and-set
// conflicts within a process).
func TestUpdateRoomCombined(t *testing.T) {
	db := newEnv(t).db(Config{})
	ctx := context.Background()
	r := newRoom("r1")
	r.MaxPlayers = 16
	if err := db.CreateRoom(ctx, r); err != nil {
		t.Fatal(err)
	}
	const players = 48 // three per seat: two of each three are refused
	var (
		wg      sync.WaitGroup
		joined  atomic.Int64
		refused atomic.Int64
		calls   atomic.Int64
		full    = errors.New("full")
	)
	for i := range players {
		wg.Go(func() {
			got, err := db.UpdateRoom(ctx, "r1", func(r *Room) error {
				calls.Add(1)
				n := r.FreeSeat()
				if n < 0 {
					return full
				}
				r.PutSeat(Seat{Seat: n, Username: fmt.Sprintf("u%d", i), SessionID: fmt.Sprintf("s%d", i), Status: SeatJoined})
				return nil
			})
			switch {
			case errors.Is(err, full):
				refused.Add(1)
			case err != nil:
				t.Errorf("player %d: %v", i, err)
			case got.SeatOfUser(fmt.Sprintf("u%d", i)) == nil:
				t.Errorf("player %d: the room returned lacks the seat", i)
			default:
				joined.Add(1)
			}
		})
	}
	wg.Wait()
	got, err := db.GetRoom(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if joined.Load() != 16 || refused.Load() != players-16 || len(got.Seats) != 16 {
		t.Fatalf("joined %d, refused %d, seats %d; want 16, %d, 16", joined.Load(), refused.Load(), len(got.Seats), players-16)
	}
	if n := calls.Load(); n > 2*players {
		t.Errorf("the update functions ran %d times for %d updates: they retried against each other", n, players)
	}
}

// An update waiting behind a slow one gives up when its context ends, and
// is not applied.
func TestUpdateRoomWaitCanceled(t *testing.T) {
	db := newEnv(t).db(Config{})
	ctx := context.Background()
	if err := db.CreateRoom(ctx, newRoom("r1")); err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	var first sync.Once // only the first run holds the room; a non-blocking send could miss the reader
	go func() {
		_, err := db.UpdateRoom(ctx, "r1", func(r *Room) error {
			first.Do(func() {
				entered <- struct{}{}
				<-release
			})
			r.TickRate = 30
			return nil
		})
		done <- err
	}()
	<-entered
	wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err := db.UpdateRoom(wctx, "r1", func(r *Room) error { r.MaxPlayers = 9; return nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting update: %v, want its context's error", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The room is free again and the canceled update left no trace.
	got, err := db.UpdateRoom(ctx, "r1", func(*Room) error { return nil })
	if err != nil || got.TickRate != 30 || got.MaxPlayers == 9 {
		t.Fatalf("room = %+v, %v; want tick 30 and max_players untouched", got, err)
	}
}

// An update refused on the record this process remembers is applied again
// to a fresh read: another process may have changed the room since.
func TestUpdateRoomNotRefusedOnStaleCopy(t *testing.T) {
	e := newEnv(t)
	a, b := e.db(Config{}), e.db(Config{})
	ctx := context.Background()
	r := newRoom("r1")
	r.MaxPlayers = 1
	if err := a.CreateRoom(ctx, r); err != nil {
		t.Fatal(err)
	}
	take := func(user string) func(*Room) error {
		return func(r *Room) error {
			n := r.FreeSeat()
			if n < 0 {
				return errors.New("full")
			}
			r.PutSeat(Seat{Seat: n, Username: user, SessionID: user, Status: SeatJoined})
			return nil
		}
	}
	if _, err := a.UpdateRoom(ctx, "r1", take("u1")); err != nil {
		t.Fatal(err)
	}
	// Another process frees the seat; a still remembers it taken.
	if _, err := b.UpdateRoom(ctx, "r1", func(r *Room) error { r.RemoveSeat(0); return nil }); err != nil {
		t.Fatal(err)
	}
	got, err := a.UpdateRoom(ctx, "r1", take("u2"))
	if err != nil || got.SeatOfUser("u2") == nil {
		t.Fatalf("UpdateRoom = %+v, %v; want u2 seated", got, err)
	}
}

// An update whose function panics fails its batch and does not wedge the
// room: later updates go through.
func TestUpdateRoomPanicDoesNotWedge(t *testing.T) {
	db := newEnv(t).db(Config{})
	ctx := context.Background()
	if err := db.CreateRoom(ctx, newRoom("r1")); err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic was swallowed")
			}
		}()
		_, _ = db.UpdateRoom(ctx, "r1", func(*Room) error { panic("boom") })
	}()
	got, err := db.UpdateRoom(ctx, "r1", func(r *Room) error { r.TickRate = 42; return nil })
	if err != nil || got.TickRate != 42 {
		t.Fatalf("update after a panic: %+v, %v", got, err)
	}
}
