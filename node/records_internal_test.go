package node

import (
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/rooms"
	"github.com/switchboardgg/switchboard/store"
)

// TestRoomChange checks the coalesced changes against the record they
// leave: a sequence of events and admissions, possibly split into a part
// being written and a newer part pending, applied to a record.
func TestRoomChange(t *testing.T) {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	type step struct {
		ev      rooms.Event
		admit   string // session admitted to ev.Seat
		pending bool   // from here on, the changes arrive while the others are written
	}
	ev := func(k rooms.EventKind, seat int, session string) step {
		return step{ev: rooms.Event{Kind: k, RoomID: "r", Seat: seat, SessionID: session, Reason: "why"}}
	}
	admit := func(seat int, session string) step { return step{ev: rooms.Event{Seat: seat}, admit: session} }
	seat := func(n int, session, status string) store.Seat {
		return store.Seat{Seat: n, Username: "u-" + session, SessionID: session, Status: status, JoinedAt: t0}
	}
	tests := []struct {
		name  string
		seats []store.Seat // of the record before
		steps []step
		want  map[int]string // seat → "session/status" after
	}{
		{"online, offline", []store.Seat{seat(0, "a", store.SeatJoined)},
			[]step{ev(rooms.SeatOnline, 0, "a"), ev(rooms.SeatOffline, 0, "a")},
			map[int]string{0: "a/offline"}},
		{"released", []store.Seat{seat(0, "a", store.SeatOnline)},
			[]step{ev(rooms.SeatOffline, 0, "a"), ev(rooms.SeatReleased, 0, "a")},
			map[int]string{}},
		{"release of a seat another session holds", []store.Seat{seat(0, "b", store.SeatJoined)},
			[]step{ev(rooms.SeatReleased, 0, "a")},
			map[int]string{0: "b/joined"}},
		{"released, then admitted again", []store.Seat{seat(0, "a", store.SeatOffline)},
			[]step{ev(rooms.SeatReleased, 0, "a"), admit(0, "a")},
			map[int]string{0: "a/joined"}},
		{"released, admitted again and online", []store.Seat{seat(0, "a", store.SeatOffline)},
			[]step{ev(rooms.SeatReleased, 0, "a"), admit(0, "a"), ev(rooms.SeatOnline, 0, "a")},
			map[int]string{0: "a/online"}},
		{"admitted again after the release was written", nil,
			[]step{admit(0, "a")},
			map[int]string{0: "a/joined"}},
		{"admitted again while the release is written", []store.Seat{seat(0, "a", store.SeatOffline)},
			[]step{ev(rooms.SeatReleased, 0, "a"), {ev: rooms.Event{Seat: 0}, admit: "a", pending: true}},
			map[int]string{0: "a/joined"}},
		{"admitted while connected", []store.Seat{seat(0, "a", store.SeatOnline)},
			[]step{admit(0, "a")},
			map[int]string{0: "a/online"}},
		{"released, the seat given to another session", []store.Seat{seat(0, "a", store.SeatOnline)},
			[]step{ev(rooms.SeatReleased, 0, "a"), admit(0, "b"), ev(rooms.SeatOnline, 0, "b")},
			map[int]string{0: "b/online"}},
		{"seats apart", []store.Seat{seat(0, "a", store.SeatJoined), seat(1, "b", store.SeatJoined)},
			[]step{ev(rooms.SeatOnline, 0, "a"), ev(rooms.SeatReleased, 1, "b")},
			map[int]string{0: "a/online"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &store.Room{RoomID: "r", Status: store.StatusOpen, State: store.StateWaiting, MaxPlayers: 4}
			for _, s := range tc.seats {
				r.PutSeat(s)
			}
			w := &recordQueue{pending: map[string]*roomChange{}}
			writing := new(roomChange)
			c := writing
			for _, s := range tc.steps {
				if s.pending && c == writing {
					c = new(roomChange)
					w.pending["r"] = c
				}
				if s.admit != "" {
					c.admitted(s.ev.Seat, "u-"+s.admit, s.admit, t0)
				} else {
					c.event(s.ev, t0)
				}
			}
			writing.apply(r, func(seat int, session string) bool { return w.heldAgain("r", seat, session) })
			if c != writing {
				c.apply(r, func(int, string) bool { return false })
			}
			got := map[int]string{}
			for _, s := range r.Seats {
				got[s.Seat] = s.SessionID + "/" + s.Status
				if s.Username != "u-"+s.SessionID {
					t.Errorf("seat %d username %q", s.Seat, s.Username)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("seats %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("seats %v, want %v", got, tc.want)
				}
			}
		})
	}

	t.Run("room state", func(t *testing.T) {
		r := &store.Room{RoomID: "r", Status: store.StatusOpen, State: store.StateWaiting}
		c := new(roomChange)
		c.event(rooms.Event{Kind: rooms.RoomPlaying}, t0)
		c.event(rooms.Event{Kind: rooms.RoomEnding, Reason: "game_over", Result: []byte(`{"w":1}`)}, t0.Add(time.Second))
		c.event(rooms.Event{Kind: rooms.RoomClosed, Reason: "other"}, t0.Add(2*time.Second))
		if !c.apply(r, nil) {
			t.Fatal("no change")
		}
		if r.Status != store.StatusClosed || r.State != store.StateEnding || r.CloseReason != "game_over" ||
			string(r.CloseResult) != `{"w":1}` || !r.StartedAt.Equal(t0) || !r.ClosedAt.Equal(t0.Add(2*time.Second)) {
			t.Errorf("record %+v", r)
		}
		if c.apply(r, nil) {
			t.Error("applied twice")
		}
	})
}
