package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/node"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
	"github.com/switchboardgg/switchboard/store"
)

// TestRecordsSurviveOutage: the seat and room changes made while the node
// cannot reach NATS reach the records once it can again, however many
// there were.
func TestRecordsSurviveOutage(t *testing.T) {
	e := newEnvProxied(t, true, true, func(c *node.Config) {
		c.UpdateTimeout = 200 * time.Millisecond
		c.Rooms.CloseLinger = 50 * time.Millisecond
	})
	ctx := context.Background()
	getRoom := func() *store.Room {
		r, err := e.db.GetRoom(ctx, "outage")
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	rec := record("outage", func(r *store.Room) { r.StartMode = store.StartManual })
	var cs []*client
	for seat := range 4 {
		c, _ := e.join(rec, seat)
		cs = append(cs, c)
	}
	waitFor(t, "seats online in the record", func() bool {
		r := getRoom()
		for seat := range 4 {
			if st := r.Seat(seat); st == nil || st.Status != store.SeatOnline {
				return false
			}
		}
		return true
	})

	e.proxy.SetBlackout(true)
	for seat := range 3 {
		cs[seat].send(&roomwire.Leave{})
		cs[seat].expectClosed()
	}
	cs[3].nc.Close()
	waitFor(t, "seat 3 offline", func() bool {
		return e.counter("switchboard_node_disconnects_total", "reason", "client_closed")+
			e.counter("switchboard_node_disconnects_total", "reason", "network") >= 1
	})
	time.Sleep(500 * time.Millisecond) // updates fail meanwhile
	if _, err := e.srv.Commands().Close(ctx, &store.CloseRequest{RoomID: "outage", Reason: "game_over"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "room gone from the engine", func() bool { return e.srv.Engine().Room("outage") == nil })
	time.Sleep(500 * time.Millisecond)
	if r := getRoom(); r.Status == store.StatusClosed || len(r.Seats) != 4 {
		t.Fatalf("record changed during the outage: %+v", r)
	}

	e.proxy.SetBlackout(false)
	waitFor(t, "the record to catch up", func() bool {
		r := getRoom()
		return r.Status == store.StatusClosed && len(r.Seats) == 1 && r.Seat(3) != nil && r.Seat(3).Status == store.SeatOffline
	})
	if r := getRoom(); r.CloseReason != "game_over" || r.ClosedAt == nil {
		t.Errorf("record %+v", r)
	}
}
