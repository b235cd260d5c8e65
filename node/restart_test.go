package node_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/node"
	"github.com/switchboardgg/switchboard/store"
)

// A node restarted with the id of a previous process takes back that
// process's rooms: their records are closed with reason node_restarted
// before it serves commands, instead of staying open for control to admit
// players into rooms whose engine state is gone. Other nodes' rooms are
// not touched.
func TestRestartClosesRoomsOfThePreviousRun(t *testing.T) {
	e := newEnv(t, true, nil)
	ctx := context.Background()
	old := record("old", func(r *store.Room) {
		r.NodeID = "node-again"
		r.Seats = []store.Seat{{Seat: 0, Username: "user0", SessionID: session(0), Status: store.SeatOnline, JoinedAt: time.Now().UTC()}}
	})
	other := record("other", func(r *store.Room) { r.NodeID = "node-test" })
	closedBefore := record("done", func(r *store.Room) {
		r.NodeID = "node-again"
		r.MarkClosed("finished", time.Now())
	})
	for _, r := range []*store.Room{old, other, closedBefore} {
		if err := e.db.CreateRoom(ctx, r); err != nil {
			t.Fatal(err)
		}
	}

	startNode(t, e, "node-again")
	get := func(id string) *store.Room {
		r, err := e.db.GetRoom(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	waitFor(t, "the room of the previous run closed", func() bool { return get("old").Status == store.StatusClosed })
	if r := get("old"); r.Status != store.StatusClosed || r.CloseReason != store.CloseReasonNodeRestarted || r.ClosedAt == nil {
		t.Errorf("room of the previous run: status %s reason %q; want closed, %s", r.Status, r.CloseReason, store.CloseReasonNodeRestarted)
	}
	if r := get("other"); r.Status != store.StatusOpen {
		t.Errorf("another node's room: status %s, want open", r.Status)
	}
	if r := get("done"); r.CloseReason != "finished" {
		t.Errorf("a room closed before: reason %q, want finished", r.CloseReason)
	}
}

// startNode starts another node of e's deployment with id, and waits for
// its registry entry.
func startNode(t *testing.T, e *env, id string) {
	t.Helper()
	srv, err := node.New(node.Config{ID: id, Logger: discard, DB: e.db, Backbone: e.bb, Signer: e.signer})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := <-served; !errors.Is(err, node.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	waitFor(t, "node "+id+" registered", func() bool {
		_, err := e.db.GetNode(context.Background(), id)
		return err == nil
	})
}

// Closed rooms are purged in the background once past their retention,
// even when nobody reads them: the node purges its own and those of nodes
// gone from the registry, not those of a live node nor recent ones.
func TestClosedRoomsPurgedInBackground(t *testing.T) {
	e := newEnv(t, true, nil)
	ctx := context.Background()
	long := time.Now().Add(-store.ClosedRoomRetention - time.Hour)
	rooms := map[string]*store.Room{
		"old-mine":   record("old-mine", func(r *store.Room) { r.NodeID = "node-purger"; r.MarkClosed("done", long) }),
		"old-orphan": record("old-orphan", func(r *store.Room) { r.NodeID = "node-gone"; r.MarkClosed("done", long) }),
		"old-live":   record("old-live", func(r *store.Room) { r.NodeID = "node-other"; r.MarkClosed("done", long) }),
		"recent":     record("recent", func(r *store.Room) { r.NodeID = "node-purger"; r.MarkClosed("done", time.Now()) }),
		"open":       record("open", func(r *store.Room) { r.NodeID = "node-purger" }),
	}
	for _, r := range rooms {
		if err := e.db.CreateRoom(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.db.PutNode(ctx, &store.Node{NodeID: "node-other"}); err != nil { // live, not purging
		t.Fatal(err)
	}
	startNode(t, e, "node-purger")
	gone := func(id string) bool {
		_, err := e.db.GetRoom(ctx, id)
		return errors.Is(err, store.ErrNotFound)
	}
	waitFor(t, "old closed rooms purged", func() bool { return gone("old-mine") && gone("old-orphan") })
	for _, id := range []string{"old-live", "recent", "open"} {
		if gone(id) {
			t.Errorf("room %s purged", id)
		}
	}
}
