package roomsapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/control/internal/httpapi"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/tokens"
)

// closedRoomRetention is how long a closed room stays readable; control
// deletes older closed rooms when it reads them.
const closedRoomRetention = store.ClosedRoomRetention

// toRoomJSON converts a room record to the room object of the API.
func toRoomJSON(r *store.Room) *api.Room {
	return &api.Room{
		RoomID:                 r.RoomID,
		Status:                 r.Status,
		State:                  r.State,
		SyncMode:               r.SyncMode,
		TickRate:               r.TickRate,
		MaxPlayers:             r.MaxPlayers,
		StartMode:              r.StartMode,
		Access:                 r.Access,
		ReconnectWindowSeconds: r.ReconnectWindowSeconds,
		MaxDurationSeconds:     r.MaxDurationSeconds,
		SnapshotIntervalFrames: r.SnapshotIntervalFrames,
		CreatedAt:              api.NewTime(r.CreatedAt),
		NodeID:                 r.NodeID,
		Region:                 r.Region,
		Metadata:               r.Metadata,
		CloseReason:            r.CloseReason,
	}
}

// roomFromRequest validates req (spec §4) and returns the room record
// it describes, without node and creation time.
func (s *Server) roomFromRequest(req *api.CreateRoomRequest) (*store.Room, error) {
	r := &store.Room{
		RoomID:                 req.RoomID,
		Status:                 store.StatusOpen,
		State:                  store.StateWaiting,
		SyncMode:               req.SyncMode,
		StartMode:              req.StartMode,
		Access:                 req.Access,
		ReconnectWindowSeconds: api.DefaultReconnectWindowSeconds,
		MaxDurationSeconds:     api.DefaultMaxDurationSeconds,
		Region:                 req.Region,
		Seats:                  []store.Seat{},
	}
	if r.RoomID == "" {
		r.RoomID = tokens.NewName(12) // 16 characters of [A-Za-z0-9_-], never starting with -
	} else if !httpapi.ValidRoomID(r.RoomID) {
		return nil, httpapi.Invalid("room_id must be 1 to %d characters of A-Z a-z 0-9 _ -", api.MaxRoomIDLen)
	}
	switch r.SyncMode {
	case store.SyncFrame:
		if req.TickRate == nil || *req.TickRate < roomwire.MinTickRate || *req.TickRate > roomwire.MaxTickRate {
			return nil, httpapi.Invalid("tick_rate must be between %d and %d in a frame room", roomwire.MinTickRate, roomwire.MaxTickRate)
		}
		r.TickRate = *req.TickRate
	case store.SyncRelay:
		if req.TickRate != nil && *req.TickRate != 0 {
			return nil, httpapi.Invalid("tick_rate must be 0 or absent in a relay room")
		}
	default:
		return nil, httpapi.Invalid("sync_mode must be frame or relay")
	}
	if req.MaxPlayers == nil || *req.MaxPlayers < 1 || *req.MaxPlayers > roomwire.MaxPlayers {
		return nil, httpapi.Invalid("max_players must be between 1 and %d", roomwire.MaxPlayers)
	}
	r.MaxPlayers = *req.MaxPlayers
	switch r.StartMode {
	case store.StartAllReady, store.StartAuto, store.StartManual:
	default:
		return nil, httpapi.Invalid("start_mode must be all_ready, auto or manual")
	}
	switch r.Access {
	case "":
		r.Access = store.AccessTicket
	case store.AccessTicket, store.AccessOpen:
	default:
		return nil, httpapi.Invalid("access must be ticket or open")
	}
	if v := req.ReconnectWindowSeconds; v != nil {
		if *v < 0 || *v > api.MaxReconnectWindowSeconds {
			return nil, httpapi.Invalid("reconnect_window_seconds must be between 0 and %d", api.MaxReconnectWindowSeconds)
		}
		r.ReconnectWindowSeconds = *v
	}
	if v := req.MaxDurationSeconds; v != nil {
		maxS := int(s.cfg.MaxRoomDuration / time.Second)
		if *v < 1 || *v > maxS {
			return nil, httpapi.Invalid("max_duration_seconds must be between 1 and %d", maxS)
		}
		r.MaxDurationSeconds = *v
	}
	if v := req.SnapshotIntervalFrames; v != nil {
		limit := s.cfg.MaxSnapshotIntervalFrames
		if r.SyncMode == store.SyncFrame && r.TickRate > 0 {
			limit = min(limit, r.TickRate*api.MaxSnapshotIntervalSeconds)
		}
		if *v < 0 || *v > limit {
			return nil, httpapi.Invalid("snapshot_interval_frames must be between 0 and %d", limit)
		}
		r.SnapshotIntervalFrames = *v
	}
	if r.Region != "" && !httpapi.ValidRegion(r.Region) {
		return nil, httpapi.Invalid("region must be 1 to %d characters of A-Z a-z 0-9 _ . -", api.MaxRegionLen)
	}
	if !httpapi.IsNull(req.Metadata) {
		m, err := httpapi.CompactJSON(req.Metadata)
		if err != nil || m[0] != '{' {
			return nil, httpapi.Invalid("metadata must be a JSON object")
		}
		if len(m) > api.MaxMetadataBytes {
			return nil, httpapi.Invalid("metadata is larger than %d bytes", api.MaxMetadataBytes)
		}
		r.Metadata = m
	}
	return r, nil
}

// createRoom: POST /server/v1/game/rooms.
func (s *Server) createRoom(ctx context.Context, c *httpapi.Call) (int, any, error) {
	var req api.CreateRoomRequest
	if err := httpapi.DecodeBody(c.W, c.R, s.cfg.MaxBodyBytes, &req); err != nil {
		return 0, nil, err
	}
	r, err := s.roomFromRequest(&req)
	if err != nil {
		return 0, nil, err
	}
	node, err := s.pickNode(ctx, r.Region)
	if err != nil {
		return 0, nil, err
	}
	r.NodeID = node.NodeID
	r.CreatedAt = c.Now.UTC()
	if err := s.db.CreateRoom(ctx, r); err != nil {
		if errors.Is(err, store.ErrExists) {
			return 0, nil, httpapi.Conflict("room_id is taken", "")
		}
		return 0, nil, err
	}
	return http.StatusCreated, &api.RoomResponse{Room: toRoomJSON(r)}, nil
}

// pickNode chooses the node of a new room among the live nodes that are
// not draining and, when region is set, are in that region: the one with
// the fewest connections, then the fewest rooms, then the lowest node_id.
func (s *Server) pickNode(ctx context.Context, region string) (*store.Node, error) {
	nodes, err := s.db.ListNodes(ctx)
	if err != nil {
		return nil, err
	}
	var best *store.Node
	for _, n := range nodes {
		if n.Draining || (region != "" && n.Region != region) {
			continue
		}
		if best == nil || n.Connections < best.Connections ||
			(n.Connections == best.Connections && n.Rooms < best.Rooms) {
			best = n
		}
	}
	if best == nil {
		return nil, httpapi.Unavailable("no game node is available", api.ReasonGameNodeUnavailable)
	}
	return best, nil
}

// loadRoom reads a room: 404 when it does not exist, is not a valid id,
// or is a closed room past closedRoomRetention (deleted then). A room past
// its max_duration_seconds is marked closed with reason expired first.
func (s *Server) loadRoom(ctx context.Context, id string, now time.Time) (*store.Room, error) {
	notFound := httpapi.NotFound("room not found")
	if !httpapi.ValidRoomID(id) {
		return nil, notFound
	}
	r, err := s.db.GetRoom(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	r, err = s.refreshRoom(ctx, r, now)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, notFound
	}
	return r, nil
}

// refreshRoom applies the lazy rules to a room just read: expiry past
// max_duration_seconds, deletion 24 h after closing. It returns nil for a
// deleted room.
func (s *Server) refreshRoom(ctx context.Context, r *store.Room, now time.Time) (*store.Room, error) {
	if r.Status == store.StatusClosed {
		if r.ClosedAt != nil && now.Sub(*r.ClosedAt) > closedRoomRetention {
			if err := s.db.DeleteRoom(ctx, r.RoomID); err != nil {
				return nil, err
			}
			return nil, nil
		}
		return r, nil
	}
	if !r.Expired(now) {
		return r, nil
	}
	nr, err := s.db.UpdateRoom(ctx, r.RoomID, func(r *store.Room) error {
		if r.Expired(now) {
			r.MarkClosed(api.CloseReasonExpired, now)
		}
		return nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return nr, err
}

// getRoom: GET /server/v1/game/rooms/{room_id}.
func (s *Server) getRoom(ctx context.Context, c *httpapi.Call) (int, any, error) {
	r, err := s.loadRoom(ctx, c.R.PathValue("room_id"), c.Now)
	if err != nil {
		return 0, nil, err
	}
	members := make([]api.Member, 0, len(r.Seats))
	for _, st := range r.Seats {
		members = append(members, api.Member{Seat: st.Seat, Username: st.Username, Status: st.Status})
	}
	var node *api.Node
	if n, err := s.db.GetNode(ctx, r.NodeID); err == nil {
		node = httpapi.ToNodeJSON(n)
	} else if !errors.Is(err, store.ErrNotFound) {
		return 0, nil, err
	}
	room := toRoomJSON(r)
	room.CloseResult = r.CloseResult // here only: a list page stays small
	return http.StatusOK, &api.GetRoomResponse{Members: members, Node: node, Room: room}, nil
}

// listRooms: GET /server/v1/game/rooms?status=&page_token=&limit=.
func (s *Server) listRooms(ctx context.Context, c *httpapi.Call) (int, any, error) {
	q := c.R.URL.Query()
	opts := store.ListOptions{Status: q.Get("status"), PageToken: q.Get("page_token"), Limit: api.DefaultPageSize}
	switch opts.Status {
	case "", store.StatusOpen, store.StatusClosing, store.StatusClosed:
	default:
		return 0, nil, httpapi.Invalid("status must be open, closing or closed")
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > api.MaxPageSize {
			return 0, nil, httpapi.Invalid("limit must be between 1 and %d", api.MaxPageSize)
		}
		opts.Limit = n
	}
	if len(opts.PageToken) > 4*store.MaxIDLength {
		return 0, nil, httpapi.Invalid("invalid page_token")
	}
	rooms, next, err := s.db.ListRooms(ctx, opts)
	if errors.Is(err, store.ErrInvalidPageToken) {
		return 0, nil, httpapi.Invalid("invalid page_token")
	}
	if err != nil {
		return 0, nil, err
	}
	out := make([]api.Room, 0, len(rooms))
	for _, r := range rooms {
		r, err := s.refreshRoom(ctx, r, c.Now)
		if err != nil {
			return 0, nil, err
		}
		if r == nil || (opts.Status != "" && r.Status != opts.Status) {
			continue
		}
		out = append(out, *toRoomJSON(r))
	}
	return http.StatusOK, &api.ListRoomsResponse{NextPageToken: next, Rooms: out}, nil
}

// createTicket: POST /server/v1/game/rooms/{room_id}/tickets. Tickets do
// not reserve seats.
func (s *Server) createTicket(ctx context.Context, c *httpapi.Call) (int, any, error) {
	var req api.TicketRequest
	if err := httpapi.DecodeBody(c.W, c.R, s.cfg.MaxBodyBytes, &req); err != nil {
		return 0, nil, err
	}
	if !httpapi.ValidUsername(req.Username) {
		return 0, nil, httpapi.Invalid("username must be 1 to %d characters of A-Z a-z 0-9 _ . -", api.MaxUsernameLen)
	}
	ttl, err := httpapi.TTLSeconds("ttl_seconds", req.TTLSeconds, s.cfg.JoinTicketTTL, s.cfg.MaxJoinTicketTTL)
	if err != nil {
		return 0, nil, err
	}
	if req.Seat != nil && (*req.Seat < 0 || *req.Seat >= roomwire.MaxPlayers) {
		return 0, nil, httpapi.Invalid("seat must be between 0 and %d", roomwire.MaxPlayers-1)
	}
	r, err := s.loadRoom(ctx, c.R.PathValue("room_id"), c.Now)
	if err != nil {
		return 0, nil, err
	}
	if req.Seat != nil && *req.Seat >= r.MaxPlayers {
		return 0, nil, httpapi.Invalid("seat must be below max_players (%d)", r.MaxPlayers)
	}
	if r.Status != store.StatusOpen {
		return 0, nil, httpapi.Conflict("room is not open", api.ReasonRoomNotOpen)
	}
	ticket := tokens.NewJoinTicket()
	exp := c.Now.Add(ttl).UTC()
	if err := s.db.PutJoinTicket(ctx, tokens.Hash(ticket), &store.JoinTicket{
		RoomID:    r.RoomID,
		Username:  req.Username,
		Seat:      req.Seat,
		ExpiresAt: exp,
	}); err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, &api.TicketResponse{ExpiresAt: api.NewTime(exp), Ticket: ticket}, nil
}
