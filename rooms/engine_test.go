package rooms_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/rooms"
)

// TestEngineRun runs the real scheduler: rooms tick at their own rates,
// a closed room leaves, and Run stops with its context.
func TestEngineRun(t *testing.T) {
	var ticks atomic.Int64
	e, err := rooms.New(rooms.Config{
		Logger:       slog.New(slog.DiscardHandler),
		CloseLinger:  10 * time.Millisecond,
		Housekeeping: 5 * time.Millisecond,
		ObserveTick:  func(_, _ time.Duration) { ticks.Add(1) },
	})
	if err != nil {
		t.Fatal(err)
	}
	var rs []*rooms.Room
	for i, rate := range []int{60, 20, 1} {
		rc := frameRoom(fmt.Sprintf("run-%d", i))
		rc.TickRate = rate
		r, err := e.Open(rc)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Admit(0, "u", session(0)); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Join(0, session(0), &writerPeer{}); err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	relay, err := e.Open(rooms.RoomConfig{ID: "relay", SyncMode: rooms.SyncRelay, MaxPlayers: 2, StartMode: rooms.StartManual})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	wait := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	wait("frames in the 60 Hz and 20 Hz rooms", func() bool { return rs[0].Frame() >= 6 && rs[1].Frame() >= 2 })
	if err := e.Run(ctx); !errors.Is(err, rooms.ErrRunning) {
		t.Errorf("second Run: %v, want ErrRunning", err)
	}
	if err := relay.Close("done", nil); err != nil {
		t.Fatal(err)
	}
	wait("the closed relay room to leave", func() bool { return e.Room("relay") == nil })
	if err := rs[0].Close("done", nil); err != nil {
		t.Fatal(err)
	}
	wait("the closed frame room to leave", func() bool { return e.Room("run-0") == nil })
	if e.Len() != 2 || ticks.Load() == 0 {
		t.Errorf("%d rooms left, %d ticks observed", e.Len(), ticks.Load())
	}
}
