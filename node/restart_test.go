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

	srv, err := node.New(node.Config{ID: "node-again", Logger: discard, DB: e.db, Backbone: e.bb, Signer: e.signer})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := <-served; !errors.Is(err, node.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	}()
	waitFor(t, "the restarted node registered", func() bool {
		_, err := e.db.GetNode(ctx, "node-again")
		return err == nil
	})
	// It registers after the take-back: the record is closed by now.
	get := func(id string) *store.Room {
		r, err := e.db.GetRoom(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
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
