package node

import (
	"context"
	"errors"
	"time"

	"github.com/switchboardgg/switchboard/rooms"
	"github.com/switchboardgg/switchboard/store"
)

// commands executes the commands control sends over NATS for a Server.
// It is a type of its own because Server.Close is the lifecycle's.
type commands struct{ s *Server }

var _ store.CommandHandler = commands{}

// Reasons of command errors, as control spells them in details.reason.
const (
	reasonRoomNotOpen    = "room_not_open"
	reasonSeatTaken      = "seat_taken"
	reasonNodeDraining   = "node_draining"
	reasonNodeFull       = "node_full"
	reasonNotManual      = "not_manual"
	reasonAlreadyStarted = "already_started"
)

func cmdErr(code, reason, msg string) *store.CommandError {
	return &store.CommandError{Code: code, Reason: reason, Message: msg}
}

var errNoRoom = cmdErr(store.CodeNotFound, "", "the node does not run this room")

// roomConfig converts a room record to the engine's configuration.
func roomConfig(r *store.Room) (rooms.RoomConfig, error) {
	sm, ok1 := rooms.ParseSyncMode(r.SyncMode)
	st, ok2 := rooms.ParseStartMode(r.StartMode)
	if !ok1 || !ok2 {
		return rooms.RoomConfig{}, rooms.ErrBadConfig
	}
	return rooms.RoomConfig{
		ID:               r.RoomID,
		SyncMode:         sm,
		TickRate:         r.TickRate,
		MaxPlayers:       r.MaxPlayers,
		StartMode:        st,
		ReconnectWindow:  time.Duration(r.ReconnectWindowSeconds) * time.Second,
		MaxDuration:      time.Duration(r.MaxDurationSeconds) * time.Second,
		SnapshotInterval: r.SnapshotIntervalFrames,
		CreatedAt:        r.CreatedAt,
	}, nil
}

// Admit runs the room of the record unless it runs already, and gives the
// seat to the login session; the player has Rooms.ConnectTimeout to
// connect.
func (h commands) Admit(_ context.Context, req *store.AdmitRequest) (*store.CommandReply, error) {
	s := h.s
	if req.Room == nil || req.Room.RoomID == "" {
		return nil, cmdErr(store.CodeInvalidArgument, "", "admit without a room")
	}
	if s.draining.Load() {
		return nil, cmdErr(store.CodeUnavailable, reasonNodeDraining, "the game node is draining")
	}
	if req.Room.Status != store.StatusOpen {
		return nil, cmdErr(store.CodeConflict, reasonRoomNotOpen, "room is not open")
	}
	rc, err := roomConfig(req.Room)
	if err != nil {
		return nil, cmdErr(store.CodeInvalidArgument, "", "invalid room record")
	}
	r, err := s.engine.Open(rc)
	if err == nil {
		err = r.Admit(req.Seat, req.Username, req.SessionID)
	}
	switch {
	case err == nil:
		// The record must show the seat held: a release of the same
		// session may be on its way to it (the node released the seat,
		// and C1 came again before the record learnt it).
		s.records.admitted(req.Room.RoomID, req.Seat, req.Username, req.SessionID)
		return nil, nil
	case errors.Is(err, rooms.ErrDraining):
		return nil, cmdErr(store.CodeUnavailable, reasonNodeDraining, "the game node is draining")
	case errors.Is(err, rooms.ErrTooManyRooms):
		return nil, cmdErr(store.CodeUnavailable, reasonNodeFull, "the game node runs too many rooms")
	case errors.Is(err, rooms.ErrBadConfig), errors.Is(err, rooms.ErrBadSeat):
		return nil, cmdErr(store.CodeInvalidArgument, "", "invalid room record or seat")
	case errors.Is(err, rooms.ErrSeatTaken):
		return nil, cmdErr(store.CodeConflict, reasonSeatTaken, "seat is taken")
	case errors.Is(err, rooms.ErrRoomEnded):
		return nil, cmdErr(store.CodeConflict, reasonRoomNotOpen, "room is not open")
	}
	return nil, err
}

// Start starts a manual room and answers with its record, already marked
// playing.
func (h commands) Start(ctx context.Context, req *store.StartRequest) (*store.CommandReply, error) {
	s := h.s
	if req.Room == nil {
		return nil, cmdErr(store.CodeInvalidArgument, "", "start without a room")
	}
	r := s.engine.Room(req.Room.RoomID)
	if r == nil {
		return nil, errNoRoom
	}
	switch err := r.Start(); {
	case errors.Is(err, rooms.ErrNotManual):
		return nil, cmdErr(store.CodeConflict, reasonNotManual, "only a manual room can be started")
	case errors.Is(err, rooms.ErrStarted):
		return nil, cmdErr(store.CodeConflict, reasonAlreadyStarted, "room already started")
	case errors.Is(err, rooms.ErrRoomEnded):
		return nil, cmdErr(store.CodeConflict, reasonRoomNotOpen, "room is not open")
	case err != nil:
		return nil, err
	}
	if s.cfg.DB == nil {
		return nil, nil
	}
	// The record is marked playing here, not only by the record worker,
	// so that control can answer with the started room.
	now := s.cfg.Now().UTC()
	rec, err := s.cfg.DB.UpdateRoom(ctx, req.Room.RoomID, func(rec *store.Room) error {
		if !markPlaying(rec, now) {
			return errNoChange
		}
		return nil
	})
	if errors.Is(err, errNoChange) { // the record worker was first
		rec, err = s.cfg.DB.GetRoom(ctx, req.Room.RoomID)
	}
	if err != nil {
		return nil, nil // started; control reads the record
	}
	return &store.CommandReply{Room: rec}, nil
}

// Close closes a room: ROOM_STATE 3 and ERROR 9 now, the connections
// Rooms.CloseLinger later, then the record is marked closed. Closing a
// closing room again is not an error.
func (h commands) Close(_ context.Context, req *store.CloseRequest) (*store.CommandReply, error) {
	s := h.s
	r := s.engine.Room(req.RoomID)
	if r == nil {
		return nil, errNoRoom
	}
	reason := req.Reason
	if reason == "" {
		reason = "closed_by_server"
	}
	if err := r.Close(reason, req.Result); err != nil && !errors.Is(err, rooms.ErrRoomEnded) {
		return nil, err
	}
	return nil, nil
}

// Kick sends ERROR 8 to the seat's connection, closes it and releases the
// seat (MEMBER left "kicked").
func (h commands) Kick(_ context.Context, req *store.KickRequest) (*store.CommandReply, error) {
	s := h.s
	r := s.engine.Room(req.RoomID)
	if r == nil {
		return nil, errNoRoom
	}
	switch err := r.Kick(req.Seat, req.Reason); {
	case errors.Is(err, rooms.ErrSeatUnavailable), errors.Is(err, rooms.ErrBadSeat):
		return nil, cmdErr(store.CodeNotFound, "", "seat is empty")
	case errors.Is(err, rooms.ErrRoomEnded):
		return nil, cmdErr(store.CodeConflict, reasonRoomNotOpen, "room is not open")
	case err != nil:
		return nil, err
	}
	return nil, nil
}

// Leave releases the seat of the login session (C2): its connection is
// dropped and the others get MEMBER left "left".
func (h commands) Leave(_ context.Context, req *store.LeaveRequest) (*store.CommandReply, error) {
	s := h.s
	r := s.engine.Room(req.RoomID)
	if r == nil {
		return nil, errNoRoom
	}
	switch err := r.Release(req.Seat, req.SessionID); {
	case errors.Is(err, rooms.ErrSeatUnavailable), errors.Is(err, rooms.ErrBadSeat):
		return nil, cmdErr(store.CodeNotFound, "", "seat is not held by this session")
	case errors.Is(err, rooms.ErrRoomEnded):
		return nil, cmdErr(store.CodeConflict, reasonRoomNotOpen, "room is not open")
	case err != nil:
		return nil, err
	}
	return nil, nil
}

// Drain sends ERROR 10 node_draining to every connection, closes every
// room and stops admitting; the registry entry says draining from the next
// heartbeat on.
func (h commands) Drain(ctx context.Context, _ *store.DrainRequest) (*store.CommandReply, error) {
	s := h.s
	s.drain()
	if s.cfg.DB != nil {
		s.putNode(ctx)
	}
	return nil, nil
}
