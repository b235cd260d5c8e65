package node_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/node"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
	"github.com/switchboardgg/switchboard/rooms"
	"github.com/switchboardgg/switchboard/store"
)

// TestCommands drives the node the way control does: records in the KV,
// commands over NATS, and checks what the players see and what the node
// writes back to the records.
func TestCommands(t *testing.T) {
	e := newEnv(t, true, func(c *node.Config) { c.Rooms.CloseLinger = 200 * time.Millisecond })
	ctx := context.Background()
	cmd := func(verb string, req any) (*store.CommandReply, error) {
		return store.SendCommand(ctx, e.bb, "node-test", verb, req)
	}
	getRoom := func(id string) *store.Room {
		r, err := e.db.GetRoom(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	codeOf := func(err error) string {
		var ce *store.CommandError
		if errors.As(err, &ce) {
			return ce.Code + "/" + ce.Reason
		}
		return "?"
	}

	n, err := e.db.GetNode(ctx, "node-test")
	if err != nil || n.WSURL != e.url || n.Draining {
		t.Fatalf("registry entry %+v, %v", n, err)
	}

	rec := record("cmd", func(r *store.Room) { r.StartMode = store.StartManual })
	a, _ := e.join(rec, 0)
	b, _ := e.join(rec, 1)
	c, _ := e.join(rec, 2)
	waitFor(t, "seats online in the record", func() bool {
		r := getRoom("cmd")
		return len(r.Seats) == 3 && r.Seat(0).Status == store.SeatOnline && r.Seat(2).Status == store.SeatOnline
	})

	t.Run("admit errors", func(t *testing.T) {
		_, err := cmd(store.VerbAdmit, &store.AdmitRequest{Room: rec, Seat: 0, Username: "x", SessionID: "other"})
		if got := codeOf(err); got != "conflict/seat_taken" {
			t.Errorf("admit held seat: %s", got)
		}
		_, err = cmd(store.VerbAdmit, &store.AdmitRequest{Room: rec, Seat: 9, Username: "x", SessionID: "other"})
		if got := codeOf(err); got != "invalid_argument/" {
			t.Errorf("admit seat 9: %s", got)
		}
	})

	t.Run("start", func(t *testing.T) {
		reply, err := cmd(store.VerbStart, &store.StartRequest{Room: rec})
		if err != nil || reply.Room == nil || reply.Room.State != store.StatePlaying || reply.Room.StartedAt == nil {
			t.Fatalf("start: %+v, %v", reply, err)
		}
		if rs := expect[*roomwire.RoomState](a); rs.State != roomwire.StatePlaying || rs.StartFrame != 1 {
			t.Errorf("ROOM_STATE %+v", rs)
		}
		if _, err := cmd(store.VerbStart, &store.StartRequest{Room: rec}); codeOf(err) != "conflict/already_started" {
			t.Errorf("second start: %v", err)
		}
		if _, err := cmd(store.VerbStart, &store.StartRequest{Room: record("nope", nil)}); codeOf(err) != "not_found/" {
			t.Errorf("start unknown room: %v", err)
		}
	})

	t.Run("kick", func(t *testing.T) {
		if _, err := cmd(store.VerbKick, &store.KickRequest{RoomID: "cmd", Seat: 2, Reason: "afk"}); err != nil {
			t.Fatal(err)
		}
		if er := c.expectError(roomwire.CodeKicked); er.Reason != "afk" {
			t.Errorf("ERROR 8 reason %q", er.Reason)
		}
		for {
			if m := expect[*roomwire.Member](a); m.Seat == 2 && m.Kind == roomwire.MemberLeft {
				if m.Reason != "kicked" {
					t.Errorf("MEMBER left reason %q", m.Reason)
				}
				break
			}
		}
		waitFor(t, "kicked seat released in the record", func() bool { return getRoom("cmd").Seat(2) == nil })
		if _, err := cmd(store.VerbKick, &store.KickRequest{RoomID: "cmd", Seat: 2}); codeOf(err) != "not_found/" {
			t.Errorf("kick empty seat: %v", err)
		}
	})

	t.Run("leave", func(t *testing.T) {
		if _, err := cmd(store.VerbLeave, &store.LeaveRequest{RoomID: "cmd", Seat: 1, SessionID: "someone"}); codeOf(err) != "not_found/" {
			t.Errorf("leave by another session: %v", err)
		}
		if _, err := cmd(store.VerbLeave, &store.LeaveRequest{RoomID: "cmd", Seat: 1, SessionID: session(1)}); err != nil {
			t.Fatal(err)
		}
		b.expectClosed()
		for {
			if m := expect[*roomwire.Member](a); m.Seat == 1 && m.Kind == roomwire.MemberLeft {
				if m.Reason != "left" {
					t.Errorf("MEMBER left reason %q", m.Reason)
				}
				break
			}
		}
		waitFor(t, "seat released in the record", func() bool { return getRoom("cmd").Seat(1) == nil })
	})

	t.Run("close", func(t *testing.T) {
		if _, err := cmd(store.VerbClose, &store.CloseRequest{RoomID: "cmd", Reason: "game_over", Result: []byte(`{"winner":0}`)}); err != nil {
			t.Fatal(err)
		}
		rs := expect[*roomwire.RoomState](a)
		if rs.State != roomwire.StateEnding || rs.Reason != "game_over" || string(rs.Result) != `{"winner":0}` || rs.StartFrame != 1 {
			t.Errorf("ROOM_STATE %+v", rs)
		}
		er := a.expectError(roomwire.CodeRoomClosed)
		if er.Reason != "game_over" || string(er.Result) != `{"winner":0}` {
			t.Errorf("ERROR 9 %+v", er)
		}
		waitFor(t, "room closed in the record", func() bool {
			r := getRoom("cmd")
			return r.Status == store.StatusClosed && r.ClosedAt != nil
		})
		if r := getRoom("cmd"); r.CloseReason != "game_over" || r.State != store.StateEnding {
			t.Errorf("record %+v", r)
		}
		if _, err := cmd(store.VerbClose, &store.CloseRequest{RoomID: "cmd"}); codeOf(err) != "not_found/" {
			t.Errorf("close of a closed room: %v", err)
		}
	})

	t.Run("seat offline in the record", func(t *testing.T) {
		r2 := record("off", nil)
		x, _ := e.join(r2, 0)
		waitFor(t, "online", func() bool { return getRoom("off").Seat(0).Status == store.SeatOnline })
		x.nc.Close()
		waitFor(t, "offline", func() bool { return getRoom("off").Seat(0).Status == store.SeatOffline })
		if r := getRoom("off"); r.State != store.StatePlaying {
			t.Errorf("auto room state %q, want playing", r.State)
		}
	})

	t.Run("drain", func(t *testing.T) {
		r3 := record("dr", nil)
		y, _ := e.join(r3, 0)
		if _, err := cmd(store.VerbDrain, &store.DrainRequest{}); err != nil {
			t.Fatal(err)
		}
		y.expectError(roomwire.CodeNodeDraining)
		if n, err := e.db.GetNode(ctx, "node-test"); err != nil || !n.Draining {
			t.Errorf("registry entry %+v, %v: want draining", n, err)
		}
		late := e.dial() // a draining node answers handshakes with ERROR 10
		late.hello(e.ticket("dr", 0, nil))
		late.expectError(roomwire.CodeNodeDraining)
		_, err := cmd(store.VerbAdmit, &store.AdmitRequest{Room: record("late", nil), Seat: 0, Username: "u", SessionID: "s"})
		if codeOf(err) != "unavailable/node_draining" {
			t.Errorf("admit while draining: %v", err)
		}
		waitFor(t, "drained rooms closed in the record", func() bool {
			return getRoom("dr").Status == store.StatusClosed && getRoom("off").Status == store.StatusClosed
		})
		if got := getRoom("dr").CloseReason; got != rooms.ReasonDraining {
			t.Errorf("close reason %q", got)
		}
	})
}

// TestShutdownRemovesRegistryEntry: after Shutdown the node is gone from
// the registry and its command subjects have no responder.
func TestShutdownRemovesRegistryEntry(t *testing.T) {
	e := newEnv(t, true, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.GetNode(ctx, "node-test"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("registry entry after shutdown: %v", err)
	}
	if _, err := store.SendCommand(ctx, e.bb, "node-test", store.VerbDrain, &store.DrainRequest{}); !errors.Is(err, store.ErrNodeUnavailable) {
		t.Errorf("command after shutdown: %v", err)
	}
}

// TestReadmitAfterRelease: a login session whose seat the node released
// and then admitted again (C1 again before, or after, the release reached
// the record) ends up holding the seat in the record, as in the engine.
func TestReadmitAfterRelease(t *testing.T) {
	for _, pending := range []bool{true, false} {
		name := "release written"
		if pending {
			name = "release pending"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnvProxied(t, true, true, func(c *node.Config) { c.UpdateTimeout = 200 * time.Millisecond })
			ctx := context.Background()
			getRoom := func() *store.Room {
				r, err := e.db.GetRoom(ctx, "readmit")
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			rec := record("readmit", func(r *store.Room) { r.StartMode = store.StartManual })
			a, _ := e.join(rec, 0)
			b, _ := e.join(rec, 1)
			waitFor(t, "seats online in the record", func() bool {
				r := getRoom()
				return r.Seat(0) != nil && r.Seat(0).Status == store.SeatOnline && r.Seat(1) != nil && r.Seat(1).Status == store.SeatOnline
			})
			if pending {
				e.proxy.SetBlackout(true)
			}
			a.send(&roomwire.Leave{}) // released by the node
			a.expectClosed()
			if !pending {
				waitFor(t, "seat 0 released in the record", func() bool { return getRoom().Seat(0) == nil })
			}
			// Control admits the session again (C1 again).
			if _, err := e.srv.Commands().Admit(ctx, &store.AdmitRequest{Room: getRoom(), Seat: 0, Username: "user0", SessionID: session(0)}); err != nil {
				t.Fatal(err)
			}
			b.nc.Close() // a later change, to know when the record caught up
			e.proxy.SetBlackout(false)
			waitFor(t, "seat 1 offline in the record", func() bool {
				st := getRoom().Seat(1)
				return st != nil && st.Status == store.SeatOffline
			})
			waitFor(t, "seat 0 held again in the record", func() bool {
				st := getRoom().Seat(0)
				return st != nil && st.SessionID == session(0) && st.Status == store.SeatJoined
			})
			// The player connects to the seat it holds.
			c := e.dial()
			c.hello(e.ticket("readmit", 0, nil))
			expect[*roomwire.Welcome](c)
			waitFor(t, "seat 0 online in the record", func() bool {
				st := getRoom().Seat(0)
				return st != nil && st.Status == store.SeatOnline
			})
		})
	}
}
