package roomsapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/switchboardgg/switchboard/control/internal/httpapi"
	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/tokens"
)

// TransportWS is the only transport C1 accepts for now.
const TransportWS = "ws"

// maxTicketLen bounds the ticket field of C1; real tickets are 47 bytes.
const maxTicketLen = 256

type joinRequest struct {
	ClientSessionID string `json:"client_session_id"`
	Ticket          string `json:"ticket"`
	Transport       string `json:"transport"`
}

type joinRoomJSON struct {
	RoomID                 string `json:"room_id"`
	Status                 string `json:"status"`
	SyncMode               string `json:"sync_mode"`
	TickRate               int    `json:"tick_rate"`
	MaxPlayers             int    `json:"max_players"`
	ReconnectWindowSeconds int    `json:"reconnect_window_seconds"`
}

type connectJSON struct {
	NodeID          string `json:"node_id"`
	WSURL           string `json:"ws_url"`
	ConnectTicket   string `json:"connect_ticket"`
	ProtocolVersion int    `json:"protocol_version"`
	ExpiresAt       string `json:"expires_at"`
}

type joinResponse struct {
	Room    joinRoomJSON `json:"room"`
	Member  memberJSON   `json:"member"`
	Connect connectJSON  `json:"connect"`
}

// join is C1: POST /client/v1/game/rooms/{room_id}/join. The checks run
// in the order of rooms spec §4: token (done by the endpoint) → fields →
// room → ticket → seat → node.
func (s *Server) join(ctx context.Context, c *httpapi.Call) (int, any, error) {
	sess := c.Session
	if !s.joinLimit.Allow(sess.SessionID, c.Now) {
		return 0, nil, httpapi.ErrRateLimited
	}
	// Fields.
	var req joinRequest
	if err := httpapi.DecodeBody(c.W, c.R, s.cfg.MaxBodyBytes, &req); err != nil {
		return 0, nil, err
	}
	if !httpapi.ValidClientSessionID(req.ClientSessionID) {
		return 0, nil, httpapi.Invalid("client_session_id must be %d to %d visible ASCII characters", httpapi.MinClientSessionIDLen, httpapi.MaxClientSessionIDLen)
	}
	if len(req.Ticket) > maxTicketLen {
		return 0, nil, httpapi.Invalid("ticket is longer than %d bytes", maxTicketLen)
	}
	if req.Transport != "" && req.Transport != TransportWS {
		return 0, nil, httpapi.Invalid("transport must be ws")
	}
	// Room.
	room, err := s.loadRoom(ctx, c.R.PathValue("room_id"), c.Now)
	if err != nil {
		return 0, nil, err
	}
	if room.Status != store.StatusOpen {
		return 0, nil, httpapi.Conflict("room is not open", httpapi.ReasonRoomNotOpen)
	}
	// Ticket. A login session that holds a seat here needs none: C1 again
	// returns its seat.
	var (
		ticketHash  string
		ticketSeat  *int
		newConsumer bool // this call consumed the ticket
	)
	if room.SeatOfSession(sess.SessionID) == nil {
		if req.Ticket != "" {
			ticketHash = tokens.Hash(req.Ticket)
			t, fresh, err := s.consumeTicket(ctx, ticketHash, room.RoomID, sess, c.Now)
			if err != nil {
				return 0, nil, err
			}
			ticketSeat, newConsumer = t.Seat, fresh
		} else if room.Access != store.AccessOpen {
			return 0, nil, httpapi.Denied("a join ticket is required")
		}
	}
	undoTicket := func() {
		if newConsumer {
			s.unconsumeTicket(ctx, ticketHash, sess.SessionID)
		}
	}
	// Seat.
	seat, created := -1, false
	room, err = s.db.UpdateRoom(ctx, room.RoomID, func(r *store.Room) error {
		seat, created = -1, false
		if r.Status != store.StatusOpen || expired(r, c.Now) {
			return httpapi.Conflict("room is not open", httpapi.ReasonRoomNotOpen)
		}
		if st := r.SeatOfSession(sess.SessionID); st != nil {
			seat = st.Seat
			if st.ClientSessionID == req.ClientSessionID {
				return errNoChange
			}
			st.ClientSessionID = req.ClientSessionID
			return nil
		}
		if ticketHash != "" && !newConsumer {
			// The ticket was used by this session before, which
			// holds no seat any more (left, kicked, timed out).
			return httpapi.Denied("join ticket already used")
		}
		if ticketHash == "" && r.Access != store.AccessOpen {
			return httpapi.Denied("a join ticket is required")
		}
		if r.SeatOfUser(sess.Username) != nil {
			return httpapi.Conflict("this user has joined the room on another device", httpapi.ReasonJoinedOnOtherDevice)
		}
		n := r.FreeSeat()
		if ticketSeat != nil {
			n = *ticketSeat
			if n >= r.MaxPlayers || r.Seat(n) != nil {
				return httpapi.Conflict("the seat is taken", httpapi.ReasonSeatTaken)
			}
		} else if n < 0 {
			return httpapi.Conflict("room is full", httpapi.ReasonRoomFull)
		}
		seat, created = n, true
		r.PutSeat(store.Seat{
			Seat:            n,
			Username:        sess.Username,
			SessionID:       sess.SessionID,
			ClientSessionID: req.ClientSessionID,
			Status:          store.SeatJoined,
			JoinedAt:        c.Now.UTC(),
		})
		return nil
	})
	if errors.Is(err, errNoChange) {
		room, err = s.db.GetRoom(ctx, c.R.PathValue("room_id"))
	}
	if err != nil {
		undoTicket()
		if errors.Is(err, store.ErrNotFound) {
			return 0, nil, httpapi.NotFound("room not found")
		}
		return 0, nil, err
	}
	// Node.
	undo := func() {
		if created {
			if _, err := s.releaseSeat(ctx, room.RoomID, seat, sess.SessionID); err != nil {
				s.log.Warn("join: release seat after node failure", "room", room.RoomID, "seat", seat, "err", err)
			}
			undoTicket()
		}
	}
	node, err := s.db.GetNode(ctx, room.NodeID)
	if err != nil {
		undo()
		if errors.Is(err, store.ErrNotFound) {
			return 0, nil, httpapi.NodeUnavailable()
		}
		return 0, nil, err
	}
	if _, err := s.command(ctx, room.NodeID, store.VerbAdmit, &store.AdmitRequest{
		Room: room, Seat: seat, Username: sess.Username, SessionID: sess.SessionID,
	}); err != nil {
		undo()
		return 0, nil, s.nodeError(store.VerbAdmit, err)
	}

	if _, err := s.db.UpdateSession(ctx, sess.SessionID, func(ss *store.Session) error {
		if e := ss.Room(room.RoomID); e != nil && !e.Left && e.Seat == seat && ss.Rooms[0].RoomID == room.RoomID {
			return errNoChange
		}
		ss.PutRoom(store.SessionRoom{RoomID: room.RoomID, Seat: seat, Username: sess.Username, JoinedAt: c.Now.UTC()})
		return nil
	}); err != nil && !errors.Is(err, errNoChange) {
		// The seat is held and the node admitted it; C3 will miss this
		// room, which is not worth failing the join for.
		s.log.Warn("join: record room in session", "room", room.RoomID, "err", err)
	}

	exp := c.Now.Add(ConnectTicketTTL)
	ticket, err := s.signer.SignConnectTicket(tokens.ConnectTicket{
		RoomID:          room.RoomID,
		Seat:            seat,
		Username:        sess.Username,
		SessionID:       sess.SessionID,
		ClientSessionID: req.ClientSessionID,
		ExpiresMS:       exp.UnixMilli(),
		ID:              tokens.NewID(),
	})
	if err != nil {
		return 0, nil, err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return status, &joinResponse{
		Room: joinRoomJSON{
			RoomID:                 room.RoomID,
			Status:                 room.Status,
			SyncMode:               room.SyncMode,
			TickRate:               room.TickRate,
			MaxPlayers:             room.MaxPlayers,
			ReconnectWindowSeconds: room.ReconnectWindowSeconds,
		},
		Member: memberJSON{Seat: seat, Username: sess.Username, Status: store.SeatJoined},
		Connect: connectJSON{
			NodeID:          node.NodeID,
			WSURL:           node.WSURL,
			ConnectTicket:   ticket,
			ProtocolVersion: httpapi.ProtocolVersion,
			ExpiresAt:       httpapi.TimeJSON(exp),
		},
	}, nil
}

// consumeTicket checks a join ticket for this room and login session and
// marks it consumed by the session. fresh reports whether this call
// consumed it (false: the session had consumed it before). Every failure
// is 403 permission_denied without a reason.
func (s *Server) consumeTicket(ctx context.Context, hash, roomID string, sess *store.Session, now time.Time) (t *store.JoinTicket, fresh bool, err error) {
	denied := httpapi.Denied("invalid, expired or used join ticket")
	t, err = s.db.UpdateJoinTicket(ctx, hash, func(t *store.JoinTicket) error {
		fresh = false
		switch {
		case !now.Before(t.ExpiresAt), t.RoomID != roomID, t.Username != sess.Username:
			return denied
		case t.ConsumedBy == sess.SessionID:
			return errNoChange
		case t.ConsumedBy != "":
			return denied
		}
		fresh = true
		t.ConsumedBy = sess.SessionID
		at := now.UTC()
		t.ConsumedAt = &at
		return nil
	})
	switch {
	case errors.Is(err, errNoChange):
		t, err = s.db.GetJoinTicket(ctx, hash)
		if err == nil {
			return t, false, nil
		}
	case err == nil:
		return t, fresh, nil
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, denied
	}
	return nil, false, err
}

// unconsumeTicket gives a ticket back after the join it was consumed for
// failed, so that the player can retry with it.
func (s *Server) unconsumeTicket(ctx context.Context, hash, sessionID string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	_, err := s.db.UpdateJoinTicket(ctx, hash, func(t *store.JoinTicket) error {
		if t.ConsumedBy != sessionID {
			return errNoChange
		}
		t.ConsumedBy, t.ConsumedAt = "", nil
		return nil
	})
	if err != nil && !errors.Is(err, errNoChange) && !errors.Is(err, store.ErrNotFound) {
		s.log.Warn("join: give back ticket", "err", err)
	}
}

type leaveResponse struct {
	Member *memberJSON `json:"member"`
}

// leave is C2: POST /client/v1/game/rooms/{room_id}/leave, no body. It
// asks the node to release the seat, or releases it itself when the node
// is down or does not run the room.
func (s *Server) leave(ctx context.Context, c *httpapi.Call) (int, any, error) {
	sess := c.Session
	if err := s.emptyBody(c); err != nil {
		return 0, nil, err
	}
	id := c.R.PathValue("room_id")
	left := func(seat int) (int, any, error) {
		return http.StatusOK, &leaveResponse{Member: &memberJSON{Seat: seat, Username: sess.Username, Status: "left"}}, nil
	}
	var room *store.Room
	if httpapi.ValidRoomID(id) {
		r, err := s.db.GetRoom(ctx, id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return 0, nil, err
		}
		room = r
	}
	var st *store.Seat
	if room != nil {
		st = room.SeatOfSession(sess.SessionID)
	}
	if st == nil {
		if e := sess.Room(id); e != nil {
			s.markLeft(ctx, sess.SessionID, id)
			return left(e.Seat)
		}
		return http.StatusOK, &leaveResponse{}, nil
	}
	seat := st.Seat
	if room.Status != store.StatusClosed {
		_, err := s.command(ctx, room.NodeID, store.VerbLeave, &store.LeaveRequest{RoomID: id, Seat: seat, SessionID: sess.SessionID})
		if err != nil && !httpapi.NodeGone(err) {
			return 0, nil, s.nodeError(store.VerbLeave, err)
		}
	}
	// The node releases the seat; make sure of it in the record either way.
	if _, err := s.releaseSeat(ctx, id, seat, sess.SessionID); err != nil {
		return 0, nil, err
	}
	s.markLeft(ctx, sess.SessionID, id)
	return left(seat)
}

// markLeft records in the login session that it left room id.
func (s *Server) markLeft(ctx context.Context, sessionID, id string) {
	_, err := s.db.UpdateSession(ctx, sessionID, func(ss *store.Session) error {
		e := ss.Room(id)
		if e == nil || e.Left {
			return errNoChange
		}
		e.Left, e.LeftReason = true, "left"
		return nil
	})
	if err != nil && !errors.Is(err, errNoChange) && !errors.Is(err, store.ErrNotFound) {
		s.log.Warn("leave: record in session", "room", id, "err", err)
	}
}

type currentRoomJSON struct {
	RoomID string `json:"room_id"`
	Status string `json:"status"`
}

type currentResponse struct {
	Room   *currentRoomJSON `json:"room"`
	Member *memberJSON      `json:"member"`
}

// current is C3: GET /client/v1/game/current, the newest room in which
// this login session holds a seat and that is not closed.
func (s *Server) current(ctx context.Context, c *httpapi.Call) (int, any, error) {
	sess := c.Session
	for _, e := range sess.Rooms {
		if e.Left {
			continue
		}
		r, err := s.loadRoom(ctx, e.RoomID, c.Now)
		var ae *httpapi.Error
		if errors.As(err, &ae) {
			continue // gone
		}
		if err != nil {
			return 0, nil, err
		}
		st := r.SeatOfSession(sess.SessionID)
		if st == nil || r.Status == store.StatusClosed {
			continue
		}
		return http.StatusOK, &currentResponse{
			Room:   &currentRoomJSON{RoomID: r.RoomID, Status: r.Status},
			Member: &memberJSON{Seat: st.Seat, Username: st.Username, Status: st.Status},
		}, nil
	}
	return http.StatusOK, &currentResponse{}, nil
}
