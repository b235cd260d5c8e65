package control

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/switchboardgg/switchboard/store"
)

// rollbackTimeout bounds the clean-up writes made after a failed step,
// which run even when the client has gone away.
const rollbackTimeout = 5 * time.Second

// errNoChange aborts an UpdateRoom whose function found nothing to write.
var errNoChange = errors.New("control: no change")

// command sends a command to a node, waiting Config.CommandTimeout.
func (s *Server) command(ctx context.Context, nodeID, verb string, req any) (*store.CommandReply, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CommandTimeout)
	defer cancel()
	return store.SendCommand(ctx, s.bb, nodeID, verb, req)
}

// nodeError maps the error of a command to its HTTP answer: the node's own
// error as it sent it, or 503 game_node_unavailable when the node did not
// answer (or could not be reached at all).
func (s *Server) nodeError(verb string, err error) *apiError {
	var ce *store.CommandError
	if errors.As(err, &ce) {
		st, ok := statusOfCode[ce.Code]
		if !ok {
			st, ce.Code = http.StatusInternalServerError, codeInternal
		}
		msg := ce.Message
		if msg == "" || st == http.StatusInternalServerError {
			msg = "the game node failed"
		}
		return &apiError{status: st, code: ce.Code, message: msg, reason: ce.Reason}
	}
	if !errors.Is(err, store.ErrNodeUnavailable) {
		s.log.Warn("node command failed", "verb", verb, "err", err)
	}
	return errNodeUnavailable()
}

// nodeGone reports whether a command's error means the node does not
// have the room (it is down, or answered not_found), so that control
// must update the record itself.
func nodeGone(err error) bool {
	var ce *store.CommandError
	if errors.As(err, &ce) {
		return ce.Code == codeNotFound
	}
	return err != nil
}

var statusOfCode = map[string]int{
	codeInvalidArgument:  http.StatusBadRequest,
	codeUnauthenticated:  http.StatusUnauthorized,
	codePermissionDenied: http.StatusForbidden,
	codeNotFound:         http.StatusNotFound,
	codeConflict:         http.StatusConflict,
	codeRateLimited:      http.StatusTooManyRequests,
	codeInternal:         http.StatusInternalServerError,
	codeUnavailable:      http.StatusServiceUnavailable,
}

// releaseSeat frees seat n of room id if login session sessionID still
// holds it, and returns the room (nil if it is gone). It runs detached
// from the request's cancellation.
func (s *Server) releaseSeat(ctx context.Context, id string, n int, sessionID string) (*store.Room, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	r, err := s.db.UpdateRoom(ctx, id, func(r *store.Room) error {
		if st := r.Seat(n); st == nil || st.SessionID != sessionID {
			return errNoChange
		}
		r.RemoveSeat(n)
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

// emptyBody decodes a body that may be empty or {} and nothing else.
func (s *Server) emptyBody(c *call) error {
	var v struct{}
	return decodeBody(c.w, c.r, s.cfg.MaxBodyBytes, &v)
}

// startRoom: POST /server/v1/game/rooms/{room_id}/start, manual rooms
// only.
func (s *Server) startRoom(ctx context.Context, c *call) (int, any, error) {
	if err := s.emptyBody(c); err != nil {
		return 0, nil, err
	}
	r, err := s.loadRoom(ctx, c.r.PathValue("room_id"), c.now)
	if err != nil {
		return 0, nil, err
	}
	switch {
	case r.Status != store.StatusOpen:
		return 0, nil, errConflict("room is not open", reasonRoomNotOpen)
	case r.StartMode != store.StartManual:
		return 0, nil, errConflict("only a manual room can be started", reasonNotManual)
	case r.State != store.StateWaiting || r.StartedAt != nil:
		return 0, nil, errConflict("room already started", reasonAlreadyStarted)
	}
	reply, err := s.command(ctx, r.NodeID, store.VerbStart, &store.StartRequest{Room: r})
	if err != nil {
		return 0, nil, s.nodeError(store.VerbStart, err)
	}
	if reply.Room != nil {
		r = reply.Room
	} else if r, err = s.loadRoom(ctx, r.RoomID, c.now); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"room": toRoomJSON(r)}, nil
}

type closeRequest struct {
	Reason string          `json:"reason"`
	Result json.RawMessage `json:"result"`
}

// closeRoom: POST /server/v1/game/rooms/{room_id}/close. It marks the
// room closing and asks its node to close it; when the node is down or
// does not run the room, control marks it closed itself. Closing a
// closing or closed room again is 200 and keeps the first reason.
func (s *Server) closeRoom(ctx context.Context, c *call) (int, any, error) {
	var req closeRequest
	if err := decodeBody(c.w, c.r, s.cfg.MaxBodyBytes, &req); err != nil {
		return 0, nil, err
	}
	if req.Reason == "" {
		req.Reason = DefaultCloseReason
	} else if !validReason(req.Reason, MaxCloseReasonLen) {
		return 0, nil, errInvalid("reason must be 1 to %d printable ASCII characters", MaxCloseReasonLen)
	}
	var result json.RawMessage
	if !isNull(req.Result) {
		var err error
		if result, err = compactJSON(req.Result); err != nil {
			return 0, nil, errInvalid("result must be JSON")
		}
		if len(result) > MaxCloseResultBytes {
			return 0, nil, errInvalid("result is larger than %d bytes", MaxCloseResultBytes)
		}
	}
	r, err := s.loadRoom(ctx, c.r.PathValue("room_id"), c.now)
	if err != nil {
		return 0, nil, err
	}
	if r.Status == store.StatusOpen {
		r, err = s.db.UpdateRoom(ctx, r.RoomID, func(r *store.Room) error {
			if r.Status != store.StatusOpen {
				return errNoChange
			}
			r.Status = store.StatusClosing
			r.CloseReason = req.Reason
			r.CloseResult = result
			return nil
		})
		if errors.Is(err, errNoChange) {
			r, err = s.loadRoom(ctx, c.r.PathValue("room_id"), c.now)
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
			if r, err = s.loadRoom(ctx, r.RoomID, c.now); err != nil {
				return 0, nil, err
			}
		case nodeGone(err):
			if r, err = s.markClosed(ctx, r.RoomID, r.CloseReason, c.now); err != nil {
				return 0, nil, err
			}
		default:
			return 0, nil, s.nodeError(store.VerbClose, err)
		}
	}
	return http.StatusOK, map[string]any{"room": toRoomJSON(r)}, nil
}

// markClosed marks room id closed in the record (its node cannot).
func (s *Server) markClosed(ctx context.Context, id, reason string, now time.Time) (*store.Room, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	r, err := s.db.UpdateRoom(ctx, id, func(r *store.Room) error {
		if r.Status == store.StatusClosed {
			return errNoChange
		}
		markClosed(r, reason, now)
		return nil
	})
	if errors.Is(err, errNoChange) {
		return s.db.GetRoom(ctx, id)
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, errNotFound("room not found")
	}
	return r, err
}

type kickRequest struct {
	Reason string `json:"reason"`
}

// kick: POST /server/v1/game/rooms/{room_id}/members/{seat}/kick. The
// node sends ERROR 8 and releases the seat; when it is down or does not
// run the room, control releases the seat itself.
func (s *Server) kick(ctx context.Context, c *call) (int, any, error) {
	var req kickRequest
	if err := decodeBody(c.w, c.r, s.cfg.MaxBodyBytes, &req); err != nil {
		return 0, nil, err
	}
	if req.Reason != "" && !validReason(req.Reason, MaxKickReasonLen) {
		return 0, nil, errInvalid("reason must be 1 to %d printable ASCII characters", MaxKickReasonLen)
	}
	n, err := strconv.Atoi(c.r.PathValue("seat"))
	if err != nil || n < 0 || n >= MaxPlayers {
		return 0, nil, errInvalid("seat must be an integer between 0 and %d", MaxPlayers-1)
	}
	r, err := s.loadRoom(ctx, c.r.PathValue("room_id"), c.now)
	if err != nil {
		return 0, nil, err
	}
	st := r.Seat(n)
	if st == nil {
		return 0, nil, errNotFound("seat is empty")
	}
	if r.Status == store.StatusClosed {
		return 0, nil, errConflict("room is not open", reasonRoomNotOpen)
	}
	_, err = s.command(ctx, r.NodeID, store.VerbKick, &store.KickRequest{RoomID: r.RoomID, Seat: n, Reason: req.Reason})
	if err != nil && !nodeGone(err) {
		return 0, nil, s.nodeError(store.VerbKick, err)
	}
	// The node releases the seat; make sure of it in the record either way.
	r, err = s.releaseSeat(ctx, r.RoomID, n, st.SessionID)
	if err != nil {
		return 0, nil, err
	}
	if r == nil {
		return 0, nil, errNotFound("room not found")
	}
	return http.StatusOK, map[string]any{"room": toRoomJSON(r)}, nil
}
