package store

import (
	"errors"
	"time"
)

// The transitions of a room record and its seats are written here and
// nowhere else: control (joins, closes, expiry, releases when the node is
// gone) and the game node (seat status, play, end) both call them inside
// [DB.UpdateRoom]. Each reports whether it changed the room, so that a
// caller can skip a write that would change nothing.

// Errors of [Room.TakeSeat].
var (
	// ErrRoomNotOpen: the room is closing, closed or past its
	// max_duration_seconds.
	ErrRoomNotOpen = errors.New("store: room is not open")
	// ErrRoomFull: no seat is free.
	ErrRoomFull = errors.New("store: room is full")
	// ErrSeatTaken: the seat asked for is held or outside the room.
	ErrSeatTaken = errors.New("store: seat is taken")
	// ErrJoinedElsewhere: the user holds a seat through another login
	// session (another device).
	ErrJoinedElsewhere = errors.New("store: user joined on another device")
)

// SeatClaim is a login session asking for a seat of a room (C1).
type SeatClaim struct {
	Username        string
	SessionID       string
	ClientSessionID string
	// Seat is the seat of the join ticket; nil means the lowest free
	// seat.
	Seat *int
}

// Expired reports whether the room is past its max_duration_seconds at
// now.
func (r *Room) Expired(now time.Time) bool {
	return r.MaxDurationSeconds > 0 && !now.Before(r.CreatedAt.Add(time.Duration(r.MaxDurationSeconds)*time.Second))
}

// Joinable reports whether the room takes joins at now: open and not
// expired.
func (r *Room) Joinable(now time.Time) bool {
	return r.Status == StatusOpen && !r.Expired(now)
}

// HeldSeat returns the seat that login session sessionID holds, updating
// its client session id, and whether the room changed; seat is -1 when
// the session holds none.
func (r *Room) HeldSeat(sessionID, clientSessionID string) (seat int, changed bool) {
	st := r.SeatOfSession(sessionID)
	if st == nil {
		return -1, false
	}
	if st.ClientSessionID == clientSessionID {
		return st.Seat, false
	}
	st.ClientSessionID = clientSessionID
	return st.Seat, true
}

// TakeSeat gives the claim a new seat, joined at now: the claim's seat,
// or else the lowest free one. It fails with ErrRoomNotOpen,
// ErrJoinedElsewhere, ErrSeatTaken or ErrRoomFull. The caller checks
// first that the session holds no seat ([Room.HeldSeat]).
func (r *Room) TakeSeat(c SeatClaim, now time.Time) (int, error) {
	if !r.Joinable(now) {
		return -1, ErrRoomNotOpen
	}
	if r.SeatOfUser(c.Username) != nil {
		return -1, ErrJoinedElsewhere
	}
	n := r.FreeSeat()
	if c.Seat != nil {
		n = *c.Seat
		if n < 0 || n >= r.MaxPlayers || r.Seat(n) != nil {
			return -1, ErrSeatTaken
		}
	} else if n < 0 {
		return -1, ErrRoomFull
	}
	r.PutSeat(Seat{
		Seat:            n,
		Username:        c.Username,
		SessionID:       c.SessionID,
		ClientSessionID: c.ClientSessionID,
		Status:          SeatJoined,
		JoinedAt:        now.UTC(),
	})
	return n, nil
}

// ReleaseSeat frees seat n if login session sessionID holds it.
func (r *Room) ReleaseSeat(n int, sessionID string) bool {
	if st := r.Seat(n); st == nil || st.SessionID != sessionID {
		return false
	}
	return r.RemoveSeat(n)
}

// RestoreSeat puts seat n back for a session that the game node admitted
// (the record lost it to a release that the admission superseded), unless
// the room is not open, the seat is outside it or held, or the session or
// user holds another seat.
func (r *Room) RestoreSeat(n int, username, sessionID string, joinedAt time.Time) bool {
	if r.Status != StatusOpen || n < 0 || n >= r.MaxPlayers || r.Seat(n) != nil ||
		r.SeatOfSession(sessionID) != nil || r.SeatOfUser(username) != nil {
		return false
	}
	r.PutSeat(Seat{Seat: n, Username: username, SessionID: sessionID, Status: SeatJoined, JoinedAt: joinedAt})
	return true
}

// SetSeatStatus sets the status of seat n if login session sessionID
// holds it: SeatJoined (admitted again, not connected), SeatOnline
// (connected at at) or SeatOffline.
func (r *Room) SetSeatStatus(n int, sessionID, status string, at time.Time) bool {
	st := r.Seat(n)
	if st == nil || st.SessionID != sessionID {
		return false
	}
	switch status {
	case SeatJoined:
		if st.Status == SeatJoined {
			return false
		}
		st.Status, st.ConnectedAt = SeatJoined, nil
	case SeatOnline:
		if st.Status == SeatOnline && st.ConnectedAt != nil && st.ConnectedAt.Equal(at) {
			return false
		}
		st.Status, st.ConnectedAt = SeatOnline, &at
	case SeatOffline:
		if st.Status == SeatOffline {
			return false
		}
		st.Status = SeatOffline
	default:
		return false
	}
	return true
}

// MarkPlaying marks a waiting room playing since at.
func (r *Room) MarkPlaying(at time.Time) bool {
	if r.State != StateWaiting || r.StartedAt != nil {
		return false
	}
	r.State, r.StartedAt = StatePlaying, &at
	return true
}

// MarkClosing marks an open room closing, as asked by the game backend,
// with its reason and result (not modified afterwards).
func (r *Room) MarkClosing(reason string, result []byte) bool {
	if r.Status != StatusOpen {
		return false
	}
	r.Status, r.CloseReason, r.CloseResult = StatusClosing, reason, result
	return true
}

// MarkEnding marks a room that is not closed ending (closing): its game
// node ended it. The first reason and result stay.
func (r *Room) MarkEnding(reason string, result []byte) bool {
	if r.Status == StatusClosed || (r.State == StateEnding && r.Status == StatusClosing) {
		return false
	}
	r.State, r.Status = StateEnding, StatusClosing
	if r.CloseReason == "" {
		r.CloseReason = reason
		if len(result) > 0 {
			r.CloseResult = append([]byte(nil), result...)
		}
	}
	return true
}

// MarkClosed closes the room at at. The first reason stays.
func (r *Room) MarkClosed(reason string, at time.Time) bool {
	if r.Status == StatusClosed {
		return false
	}
	r.Status, r.State = StatusClosed, StateEnding
	if r.CloseReason == "" {
		r.CloseReason = reason
	}
	t := at.UTC()
	r.ClosedAt = &t
	return true
}
