package roomsapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/control/internal/httpapi"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
	"github.com/switchboardgg/switchboard/store"
)

// rollbackTimeout bounds the clean-up writes made after a failed step,
// which run even when the client has gone away.
const rollbackTimeout = 5 * time.Second

// errNoChange aborts an UpdateRoom whose function found nothing to write.
var errNoChange = errors.New("roomsapi: no change")

// command sends a command to a node, waiting Config.CommandTimeout.
func (s *Server) command(ctx context.Context, nodeID, verb string, req any) (*store.CommandReply, error) {
	return httpapi.SendCommand(ctx, s.bb, s.cfg.CommandTimeout, nodeID, verb, req)
}

// nodeError maps the error of a command to its HTTP answer.
func (s *Server) nodeError(verb string, err error) *httpapi.Error {
	return httpapi.NodeError(s.log, verb, err)
}

// releaseSeat frees seat n of room id if login session sessionID still
// holds it, and returns the room (nil if it is gone). It runs detached
// from the request's cancellation.
func (s *Server) releaseSeat(ctx context.Context, id string, n int, sessionID string) (*store.Room, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	r, err := s.db.UpdateRoom(ctx, id, func(r *store.Room) error {
		if !r.ReleaseSeat(n, sessionID) {
			return errNoChange
		}
		return nil
	})
	switch {
	case errors.Is(err, errNoChange):
		return s.db.GetRoom(ctx, id)
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	}
	return r, err
}

// startRoom: POST /server/v1/game/rooms/{room_id}/start, manual rooms
// only.
func (s *Server) startRoom(ctx context.Context, c *httpapi.Call) (int, any, error) {
	if err := s.emptyBody(c); err != nil {
		return 0, nil, err
	}
	r, err := s.loadRoom(ctx, c.R.PathValue("room_id"), c.Now)
	if err != nil {
		return 0, nil, err
	}
	switch {
	case r.Status != store.StatusOpen:
		return 0, nil, httpapi.Conflict("room is not open", api.ReasonRoomNotOpen)
	case r.StartMode != store.StartManual:
		return 0, nil, httpapi.Conflict("only a manual room can be started", api.ReasonNotManual)
	case r.State != store.StateWaiting || r.StartedAt != nil:
		return 0, nil, httpapi.Conflict("room already started", api.ReasonAlreadyStarted)
	}
	reply, err := s.command(ctx, r.NodeID, store.VerbStart, &store.StartRequest{RoomID: r.RoomID})
	if err != nil {
		return 0, nil, s.nodeError(store.VerbStart, err)
	}
	if reply.Room != nil {
		r = reply.Room
	} else if r, err = s.loadRoom(ctx, r.RoomID, c.Now); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, &api.RoomResponse{Room: toRoomJSON(r)}, nil
}

// closeRoom: POST /server/v1/game/rooms/{room_id}/close. It marks the
// room closing and asks its node to close it; when the node is down or
// does not run the room, control marks it closed itself. Closing a
// closing or closed room again is 200 and keeps the first reason.
func (s *Server) closeRoom(ctx context.Context, c *httpapi.Call) (int, any, error) {
	var req api.CloseRequest
	if err := httpapi.DecodeBody(c.W, c.R, s.cfg.MaxBodyBytes, &req); err != nil {
		return 0, nil, err
	}
	if req.Reason == "" {
		req.Reason = api.DefaultCloseReason
	} else if !httpapi.ValidReason(req.Reason, api.MaxCloseReasonLen) {
		return 0, nil, httpapi.Invalid("reason must be 1 to %d printable ASCII characters", api.MaxCloseReasonLen)
	}
	var result json.RawMessage
	if !httpapi.IsNull(req.Result) {
		var err error
		if result, err = httpapi.CompactJSON(req.Result); err != nil {
			return 0, nil, httpapi.Invalid("result must be JSON")
		}
		if len(result) > api.MaxCloseResultBytes {
			return 0, nil, httpapi.Invalid("result is larger than %d bytes", api.MaxCloseResultBytes)
		}
	}
	r, err := s.loadRoom(ctx, c.R.PathValue("room_id"), c.Now)
	if err != nil {
		return 0, nil, err
	}
	if r.Status == store.StatusOpen {
		r, err = s.db.UpdateRoom(ctx, r.RoomID, func(r *store.Room) error {
			if !r.MarkClosing(req.Reason, result) {
				return errNoChange
			}
			return nil
		})
		if errors.Is(err, errNoChange) {
			r, err = s.loadRoom(ctx, c.R.PathValue("room_id"), c.Now)
		}
		if err != nil {
			return 0, nil, err
		}
	}
	if r.Status == store.StatusClosing {
		reply, err := s.command(ctx, r.NodeID, store.VerbClose, &store.CloseRequest{RoomID: r.RoomID, Reason: r.CloseReason, Result: r.CloseResult})
		switch {
		case err == nil && reply.Room != nil:
			r = reply.Room
		case err == nil:
			if r, err = s.loadRoom(ctx, r.RoomID, c.Now); err != nil {
				return 0, nil, err
			}
		case httpapi.NodeGone(err):
			if r, err = s.markClosed(ctx, r.RoomID, r.CloseReason, c.Now); err != nil {
				return 0, nil, err
			}
		default:
			return 0, nil, s.nodeError(store.VerbClose, err)
		}
	}
	return http.StatusOK, &api.RoomResponse{Room: toRoomJSON(r)}, nil
}

// markClosed marks room id closed in the record (its node cannot).
func (s *Server) markClosed(ctx context.Context, id, reason string, now time.Time) (*store.Room, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	r, err := s.db.UpdateRoom(ctx, id, func(r *store.Room) error {
		if !r.MarkClosed(reason, now) {
			return errNoChange
		}
		return nil
	})
	if errors.Is(err, errNoChange) {
		return s.db.GetRoom(ctx, id)
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, httpapi.NotFound("room not found")
	}
	return r, err
}

// kick: POST /server/v1/game/rooms/{room_id}/members/{seat}/kick. The
// node sends ERROR 8 and releases the seat; when it is down or does not
// run the room, control releases the seat itself.
func (s *Server) kick(ctx context.Context, c *httpapi.Call) (int, any, error) {
	var req api.KickRequest
	if err := httpapi.DecodeBody(c.W, c.R, s.cfg.MaxBodyBytes, &req); err != nil {
		return 0, nil, err
	}
	if req.Reason != "" && !httpapi.ValidReason(req.Reason, api.MaxKickReasonLen) {
		return 0, nil, httpapi.Invalid("reason must be 1 to %d printable ASCII characters", api.MaxKickReasonLen)
	}
	n, err := strconv.Atoi(c.R.PathValue("seat"))
	if err != nil || n < 0 || n >= roomwire.MaxPlayers {
		return 0, nil, httpapi.Invalid("seat must be an integer between 0 and %d", roomwire.MaxPlayers-1)
	}
	r, err := s.loadRoom(ctx, c.R.PathValue("room_id"), c.Now)
	if err != nil {
		return 0, nil, err
	}
	st := r.Seat(n)
	if st == nil {
		return 0, nil, httpapi.NotFound("seat is empty")
	}
	if r.Status == store.StatusClosed {
		return 0, nil, httpapi.Conflict("room is not open", api.ReasonRoomNotOpen)
	}
	_, err = s.command(ctx, r.NodeID, store.VerbKick, &store.KickRequest{RoomID: r.RoomID, Seat: n, Reason: req.Reason})
	if err != nil && !httpapi.NodeGone(err) {
		return 0, nil, s.nodeError(store.VerbKick, err)
	}
	// The node releases the seat; make sure of it in the record either way.
	r, err = s.releaseSeat(ctx, r.RoomID, n, st.SessionID)
	if err != nil {
		return 0, nil, err
	}
	if r == nil {
		return 0, nil, httpapi.NotFound("room not found")
	}
	return http.StatusOK, &api.RoomResponse{Room: toRoomJSON(r)}, nil
}
