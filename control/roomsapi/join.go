package roomsapi

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/control/internal/httpapi"
	"github.com/switchboardgg/switchboard/protocol/roomudp"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/tokens"
)

// join is C1: POST /client/v1/game/rooms/{room_id}/join. The checks run
// in the order of rooms spec §4: token (done by the endpoint) → fields →
// room → ticket → seat → node; between seat and node the login session
// records the room (for C3), and the answer carries a connect ticket. A
// step that fails undoes what the steps before it wrote (seat, ticket,
// the session's entry).
//
// The route authenticates with httpapi.AuthClientRecent: when this
// process has a copy of the login session (the login ran here), the
// session is not read; the session's compare-and-set write, before the
// node admits anyone, proves that it still exists (logout revokes).
func (s *Server) join(ctx context.Context, c *httpapi.Call) (int, any, error) {
	j, err := s.joinFields(c)
	if err != nil {
		return 0, nil, err
	}
	if err := s.joinTicket(ctx, j); err != nil {
		return 0, nil, err
	}
	if err := s.joinSeat(ctx, j); err != nil {
		j.undoTicket(ctx, s)
		return 0, nil, err
	}
	if err := s.joinSession(ctx, j, c.SessionRecent); err != nil {
		j.undo(ctx, s)
		return 0, nil, err
	}
	node, err := s.joinNode(ctx, j)
	if err != nil {
		j.undoSession(ctx, s)
		j.undo(ctx, s)
		return 0, nil, err
	}
	return s.joinAnswer(j, node)
}

// joinCall is the state of one C1 across its steps.
type joinCall struct {
	sess   *store.Session
	req    api.JoinRequest
	now    time.Time
	roomID string
	room   *store.Room // read before the ticket step (nil without a ticket), then as written

	ticketHash  string // "" without a ticket
	ticketSeat  *int   // the ticket's seat
	newConsumer bool   // this call consumed the ticket

	seat    int
	created bool // this call took the seat

	recorded  bool               // this call wrote the room into the session
	prevEntry *store.SessionRoom // the session's entry of the room before, if any
}

// undoTicket gives back the ticket this call consumed.
func (j *joinCall) undoTicket(ctx context.Context, s *Server) {
	if j.newConsumer {
		s.unconsumeTicket(ctx, j.ticketHash, j.sess.SessionID)
	}
}

// undo releases the seat this call took and gives back its ticket.
func (j *joinCall) undo(ctx context.Context, s *Server) {
	if !j.created {
		return
	}
	if _, err := s.releaseSeat(ctx, j.roomID, j.seat, j.sess.SessionID); err != nil {
		s.log.Warn("join: release seat after node failure", "room", j.roomID, "seat", j.seat, "err", err)
	}
	j.undoTicket(ctx, s)
}

// joinFields checks the rate and the request's fields.
func (s *Server) joinFields(c *httpapi.Call) (*joinCall, error) {
	j := &joinCall{sess: c.Session, now: c.Now, roomID: c.R.PathValue("room_id"), seat: -1}
	if ok, wait := s.joinLimit.Take(j.sess.SessionID, c.Now); !ok {
		return nil, httpapi.RateLimited(wait)
	}
	if err := httpapi.DecodeBody(c.W, c.R, s.cfg.MaxBodyBytes, &j.req); err != nil {
		return nil, err
	}
	if !httpapi.ValidClientSessionID(j.req.ClientSessionID) {
		return nil, httpapi.Invalid("client_session_id must be %d to %d visible ASCII characters", api.MinClientSessionIDLen, api.MaxClientSessionIDLen)
	}
	if len(j.req.Ticket) > api.MaxTicketLen {
		return nil, httpapi.Invalid("ticket is longer than %d bytes", api.MaxTicketLen)
	}
	if j.req.Transport != "" && j.req.Transport != api.TransportWS && j.req.Transport != api.TransportUDP {
		return nil, httpapi.Invalid("transport must be ws or udp")
	}
	return j, nil
}

// joinTicket consumes the join ticket, if the request has one and the
// login session holds no seat in the room (C1 again returns its seat and
// needs none). A join without a ticket reads the room only in the seat
// step.
func (s *Server) joinTicket(ctx context.Context, j *joinCall) error {
	if j.req.Ticket == "" {
		return nil
	}
	room, err := s.loadRoom(ctx, j.roomID, j.now)
	if err != nil {
		return err
	}
	if room.Status != store.StatusOpen {
		return httpapi.Conflict("room is not open", api.ReasonRoomNotOpen)
	}
	j.room = room
	if room.SeatOfSession(j.sess.SessionID) != nil {
		return nil
	}
	j.ticketHash = tokens.Hash(j.req.Ticket)
	t, fresh, err := s.consumeTicket(ctx, j.ticketHash, room.RoomID, j.sess, j.now)
	if err != nil {
		return err
	}
	j.ticketSeat, j.newConsumer = t.Seat, fresh
	return nil
}

// joinSeat takes a seat for the login session in the record, or finds
// the one it holds.
func (s *Server) joinSeat(ctx context.Context, j *joinCall) error {
	var held *store.Room // the room as read, when the session holds its seat already
	room, err := s.db.UpdateRoom(ctx, j.roomID, func(r *store.Room) error {
		j.seat, j.created, held = -1, false, nil
		if !r.Joinable(j.now) {
			return store.ErrRoomNotOpen
		}
		seat, changed := r.HeldSeat(j.sess.SessionID, j.req.ClientSessionID)
		if seat >= 0 {
			j.seat = seat
			if !changed {
				held = r.Clone()
				return errNoChange
			}
			return nil
		}
		switch {
		case j.ticketHash != "" && !j.newConsumer:
			// The ticket was used by this session before, which
			// holds no seat any more (left, kicked, timed out).
			return httpapi.Denied("join ticket already used")
		case j.ticketHash == "" && r.Access != store.AccessOpen:
			return httpapi.Denied("a join ticket is required")
		}
		seat, err := r.TakeSeat(store.SeatClaim{
			Username:        j.sess.Username,
			SessionID:       j.sess.SessionID,
			ClientSessionID: j.req.ClientSessionID,
			Seat:            j.ticketSeat,
		}, j.now)
		j.seat, j.created = seat, err == nil
		return err
	})
	switch {
	case err == nil:
		j.room = room
		return nil
	case errors.Is(err, errNoChange):
		j.room = held
		return nil
	case errors.Is(err, store.ErrNotFound):
		return httpapi.NotFound("room not found")
	case errors.Is(err, store.ErrRoomNotOpen):
		// loadRoom closes an expired room and forgets an old closed one.
		if _, err := s.loadRoom(ctx, j.roomID, j.now); err != nil {
			return err
		}
		return httpapi.Conflict("room is not open", api.ReasonRoomNotOpen)
	case errors.Is(err, store.ErrJoinedElsewhere):
		return httpapi.Conflict("this user has joined the room on another device", api.ReasonJoinedOnOtherDevice)
	case errors.Is(err, store.ErrSeatTaken):
		return httpapi.Conflict("the seat is taken", api.ReasonSeatTaken)
	case errors.Is(err, store.ErrRoomFull):
		return httpapi.Conflict("room is full", api.ReasonRoomFull)
	}
	return err
}

// joinNode asks the room's node to admit the seat, and returns the node.
func (s *Server) joinNode(ctx context.Context, j *joinCall) (*store.Node, error) {
	node, err := s.db.GetNode(ctx, j.room.NodeID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, httpapi.NodeUnavailable()
		}
		return nil, err
	}
	if _, err := s.command(ctx, j.room.NodeID, store.VerbAdmit, &store.AdmitRequest{
		Settings: j.room.Settings(), Seat: j.seat, Username: j.sess.Username, SessionID: j.sess.SessionID,
	}); err != nil {
		return nil, s.nodeError(store.VerbAdmit, err)
	}
	return node, nil
}

// joinSession records the room in the login session, for C3. When the
// session is this process's copy (recent), the write is what proves that
// the session still exists, and its failure fails the join; a session
// that already recorded the room is read by UpdateSession. Otherwise the endpoint read the
// session, and only its end fails the join: C3 missing the room is not
// worth failing a join for.
func (s *Server) joinSession(ctx context.Context, j *joinCall, recent bool) error {
	id := j.room.RoomID
	ended := httpapi.Unauthenticated("login session ended")
	_, err := s.db.UpdateSession(ctx, j.sess.SessionID, func(ss *store.Session) error {
		j.recorded, j.prevEntry = false, nil
		e := ss.Room(id)
		if e != nil && !e.Left && e.Seat == j.seat && ss.Rooms[0].RoomID == id {
			return errNoChange
		}
		if e != nil {
			prev := *e
			j.prevEntry = &prev
		}
		ss.PutRoom(store.SessionRoom{RoomID: id, Seat: j.seat, Username: j.sess.Username, JoinedAt: j.now.UTC()})
		j.recorded = true
		return nil
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		j.recorded = false
		return ended
	case errors.Is(err, errNoChange):
		// Nothing to write, decided on the session as read afresh
		// (UpdateSession retries a refusal of its copy on a read): it
		// exists.
		return nil
	case recent:
		return err
	}
	s.log.Warn("join: record room in session", "room", id, "err", err)
	return nil
}

// undoSession takes back the entry joinSession wrote when the node did
// not admit the seat, restoring the one it replaced.
func (j *joinCall) undoSession(ctx context.Context, s *Server) {
	if !j.recorded {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	id := j.room.RoomID
	_, err := s.db.UpdateSession(ctx, j.sess.SessionID, func(ss *store.Session) error {
		e := ss.Room(id)
		if e == nil || e.Left || e.Seat != j.seat || !e.JoinedAt.Equal(j.now.UTC()) {
			return errNoChange // changed since: leave it
		}
		ss.Rooms = slices.DeleteFunc(ss.Rooms, func(e store.SessionRoom) bool { return e.RoomID == id })
		if j.prevEntry != nil {
			ss.PutRoom(*j.prevEntry)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errNoChange) && !errors.Is(err, store.ErrNotFound) {
		s.log.Warn("join: take the room back out of the session", "room", id, "err", err)
	}
}

// joinAnswer signs the connect ticket: 201 for a new seat, 200 for the
// seat the session held.
func (s *Server) joinAnswer(j *joinCall, node *store.Node) (int, any, error) {
	exp := j.now.Add(api.ConnectTicketTTL)
	jti := tokens.NewID()
	ticket, err := s.signer.SignConnectTicket(tokens.ConnectTicket{
		RoomID:          j.room.RoomID,
		Seat:            j.seat,
		Username:        j.sess.Username,
		SessionID:       j.sess.SessionID,
		ClientSessionID: j.req.ClientSessionID,
		ExpiresMS:       exp.UnixMilli(),
		ID:              jti,
	})
	if err != nil {
		return 0, nil, err
	}
	status := http.StatusOK
	if j.created {
		status = http.StatusCreated
	}
	room := j.room
	connect := api.Connect{
		NodeID:          node.NodeID,
		WSURL:           node.WSURL,
		ConnectTicket:   ticket,
		ProtocolVersion: roomwire.Version,
		ExpiresAt:       api.NewTime(exp),
		Transport:       api.TransportWS,
	}
	if err := s.udpConnect(&connect, node, jti, j.req.Transport); err != nil {
		return 0, nil, err
	}
	return status, &api.JoinResponse{
		Room: api.JoinRoom{
			RoomID:                 room.RoomID,
			Status:                 room.Status,
			SyncMode:               room.SyncMode,
			TickRate:               room.TickRate,
			MaxPlayers:             room.MaxPlayers,
			ReconnectWindowSeconds: room.ReconnectWindowSeconds,
		},
		Member:  api.Member{Seat: j.seat, Username: j.sess.Username, Status: store.SeatJoined},
		Connect: connect,
	}, nil
}

// udpConnect fills the UDP fields of c when the node serves UDP: the
// session key is derived from the deployment's UDP secret and the connect
// ticket's id (docs/protocol/rooms-udp.md §3), so the node needs no lookup.
func (s *Server) udpConnect(c *api.Connect, node *store.Node, jti, prefer string) error {
	if node.UDPAddr == "" {
		return nil
	}
	kid, err := roomudp.ParseKeyID(jti)
	if err != nil {
		return fmt.Errorf("join: connect ticket id as key id: %w", err)
	}
	key := roomudp.SessionKey(&s.udpSecret, kid)
	c.UDP, c.KeyID = node.UDPAddr, jti
	c.SessionKey = base64.StdEncoding.EncodeToString(key[:])
	if prefer == api.TransportUDP {
		c.Transport = api.TransportUDP
	}
	return nil
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
		return http.StatusOK, &api.LeaveResponse{Member: &api.Member{Seat: seat, Username: sess.Username, Status: "left"}}, nil
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
		return http.StatusOK, &api.LeaveResponse{}, nil
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
		return http.StatusOK, &api.CurrentResponse{
			Room:   &api.CurrentRoom{RoomID: r.RoomID, Status: r.Status},
			Member: &api.Member{Seat: st.Seat, Username: st.Username, Status: st.Status},
		}, nil
	}
	return http.StatusOK, &api.CurrentResponse{}, nil
}
