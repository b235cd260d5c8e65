package control

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/tokens"
)

// closedRoomRetention is how long a closed room stays readable; control
// deletes older closed rooms when it reads them.
const closedRoomRetention = 24 * time.Hour

// roomJSON is the room object of rooms spec §4 "Resolved details", plus
// region, metadata and close_reason when set.
type roomJSON struct {
	RoomID                 string          `json:"room_id"`
	Status                 string          `json:"status"`
	State                  string          `json:"state"`
	SyncMode               string          `json:"sync_mode"`
	TickRate               int             `json:"tick_rate"`
	MaxPlayers             int             `json:"max_players"`
	StartMode              string          `json:"start_mode"`
	Access                 string          `json:"access"`
	ReconnectWindowSeconds int             `json:"reconnect_window_seconds"`
	MaxDurationSeconds     int             `json:"max_duration_seconds"`
	SnapshotIntervalFrames int             `json:"snapshot_interval_frames"`
	CreatedAt              string          `json:"created_at"`
	NodeID                 string          `json:"node_id"`
	Region                 string          `json:"region,omitempty"`
	Metadata               json.RawMessage `json:"metadata,omitempty"`
	CloseReason            string          `json:"close_reason,omitempty"`
}

func toRoomJSON(r *store.Room) *roomJSON {
	return &roomJSON{
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
		CreatedAt:              timeJSON(r.CreatedAt),
		NodeID:                 r.NodeID,
		Region:                 r.Region,
		Metadata:               r.Metadata,
		CloseReason:            r.CloseReason,
	}
}

type memberJSON struct {
	Seat     int    `json:"seat"`
	Username string `json:"username"`
	Status   string `json:"status"`
}

type createRoomRequest struct {
	RoomID                 string          `json:"room_id"`
	SyncMode               string          `json:"sync_mode"`
	TickRate               *int            `json:"tick_rate"`
	MaxPlayers             *int            `json:"max_players"`
	StartMode              string          `json:"start_mode"`
	Access                 string          `json:"access"`
	ReconnectWindowSeconds *int            `json:"reconnect_window_seconds"`
	MaxDurationSeconds     *int            `json:"max_duration_seconds"`
	SnapshotIntervalFrames *int            `json:"snapshot_interval_frames"`
	Region                 string          `json:"region"`
	Metadata               json.RawMessage `json:"metadata"`
}

// roomFromRequest validates req (spec §4) and returns the room record
// it describes, without node and creation time.
func (s *Server) roomFromRequest(req *createRoomRequest) (*store.Room, error) {
	r := &store.Room{
		RoomID:                 req.RoomID,
		Status:                 store.StatusOpen,
		State:                  store.StateWaiting,
		SyncMode:               req.SyncMode,
		StartMode:              req.StartMode,
		Access:                 req.Access,
		ReconnectWindowSeconds: DefaultReconnectWindowSeconds,
		MaxDurationSeconds:     DefaultMaxDurationSeconds,
		Region:                 req.Region,
		Seats:                  []store.Seat{},
	}
	if r.RoomID == "" {
		r.RoomID = tokens.NewName(12) // 16 characters of [A-Za-z0-9_-], not starting with '-' (a CLI flag)
	} else if !validRoomID(r.RoomID) {
		return nil, errInvalid("room_id must be 1 to %d characters of A-Z a-z 0-9 _ -", MaxRoomIDLen)
	}
	switch r.SyncMode {
	case store.SyncFrame:
		if req.TickRate == nil || *req.TickRate < MinTickRate || *req.TickRate > MaxTickRate {
			return nil, errInvalid("tick_rate must be between %d and %d in a frame room", MinTickRate, MaxTickRate)
		}
		r.TickRate = *req.TickRate
	case store.SyncRelay:
		if req.TickRate != nil && *req.TickRate != 0 {
			return nil, errInvalid("tick_rate must be 0 or absent in a relay room")
		}
	default:
		return nil, errInvalid("sync_mode must be frame or relay")
	}
	if req.MaxPlayers == nil || *req.MaxPlayers < 1 || *req.MaxPlayers > MaxPlayers {
		return nil, errInvalid("max_players must be between 1 and %d", MaxPlayers)
	}
	r.MaxPlayers = *req.MaxPlayers
	switch r.StartMode {
	case store.StartAllReady, store.StartAuto, store.StartManual:
	default:
		return nil, errInvalid("start_mode must be all_ready, auto or manual")
	}
	switch r.Access {
	case "":
		r.Access = store.AccessTicket
	case store.AccessTicket, store.AccessOpen:
	default:
		return nil, errInvalid("access must be ticket or open")
	}
	if v := req.ReconnectWindowSeconds; v != nil {
		if *v < 0 || *v > MaxReconnectWindowSeconds {
			return nil, errInvalid("reconnect_window_seconds must be between 0 and %d", MaxReconnectWindowSeconds)
		}
		r.ReconnectWindowSeconds = *v
	}
	if v := req.MaxDurationSeconds; v != nil {
		maxS := int(s.cfg.MaxRoomDuration / time.Second)
		if *v < 1 || *v > maxS {
			return nil, errInvalid("max_duration_seconds must be between 1 and %d", maxS)
		}
		r.MaxDurationSeconds = *v
	}
	if v := req.SnapshotIntervalFrames; v != nil {
		limit := s.cfg.MaxSnapshotIntervalFrames
		if r.SyncMode == store.SyncFrame && r.TickRate > 0 {
			limit = min(limit, r.TickRate*MaxSnapshotIntervalSeconds)
		}
		if *v < 0 || *v > limit {
			return nil, errInvalid("snapshot_interval_frames must be between 0 and %d", limit)
		}
		r.SnapshotIntervalFrames = *v
	}
	if r.Region != "" && !validRegion(r.Region) {
		return nil, errInvalid("region must be 1 to %d characters of A-Z a-z 0-9 _ . -", MaxRegionLen)
	}
	if !isNull(req.Metadata) {
		m, err := compactJSON(req.Metadata)
		if err != nil || m[0] != '{' {
			return nil, errInvalid("metadata must be a JSON object")
		}
		if len(m) > MaxMetadataBytes {
			return nil, errInvalid("metadata is larger than %d bytes", MaxMetadataBytes)
		}
		r.Metadata = m
	}
	return r, nil
}

// createRoom: POST /server/v1/game/rooms.
func (s *Server) createRoom(ctx context.Context, c *call) (int, any, error) {
	var req createRoomRequest
	if err := decodeBody(c.w, c.r, s.cfg.MaxBodyBytes, &req); err != nil {
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
	r.CreatedAt = c.now.UTC()
	if err := s.db.CreateRoom(ctx, r); err != nil {
		if errors.Is(err, store.ErrExists) {
			return 0, nil, errConflict("room_id is taken", "")
		}
		return 0, nil, err
	}
	return http.StatusCreated, map[string]any{"room": toRoomJSON(r)}, nil
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
		return nil, errUnavailable("no game node is available", reasonGameNodeUnavailable)
	}
	return best, nil
}

// loadRoom reads a room: 404 when it does not exist, is not a valid id,
// or is a closed room past closedRoomRetention (deleted then). A room past
// its max_duration_seconds is marked closed with reason expired first.
func (s *Server) loadRoom(ctx context.Context, id string, now time.Time) (*store.Room, error) {
	notFound := errNotFound("room not found")
	if !validRoomID(id) {
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
	if !expired(r, now) {
		return r, nil
	}
	nr, err := s.db.UpdateRoom(ctx, r.RoomID, func(r *store.Room) error {
		if r.Status != store.StatusClosed && expired(r, now) {
			markClosed(r, "expired", now)
		}
		return nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return nr, err
}

func expired(r *store.Room, now time.Time) bool {
	return r.MaxDurationSeconds > 0 && !now.Before(r.CreatedAt.Add(time.Duration(r.MaxDurationSeconds)*time.Second))
}

// markClosed closes r in the record, as control does when the node cannot.
func markClosed(r *store.Room, reason string, now time.Time) {
	r.Status = store.StatusClosed
	if r.State != store.StateEnding {
		r.State = store.StateEnding
	}
	if r.CloseReason == "" {
		r.CloseReason = reason
	}
	t := now.UTC()
	r.ClosedAt = &t
}

// getRoom: GET /server/v1/game/rooms/{room_id}.
func (s *Server) getRoom(ctx context.Context, c *call) (int, any, error) {
	r, err := s.loadRoom(ctx, c.r.PathValue("room_id"), c.now)
	if err != nil {
		return 0, nil, err
	}
	members := make([]memberJSON, 0, len(r.Seats))
	for _, st := range r.Seats {
		members = append(members, memberJSON{Seat: st.Seat, Username: st.Username, Status: st.Status})
	}
	var node *nodeJSON
	if n, err := s.db.GetNode(ctx, r.NodeID); err == nil {
		nj := toNodeJSON(n)
		node = &nj
	} else if !errors.Is(err, store.ErrNotFound) {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"room": toRoomJSON(r), "members": members, "node": node}, nil
}

// listRooms: GET /server/v1/game/rooms?status=&page_token=&limit=.
func (s *Server) listRooms(ctx context.Context, c *call) (int, any, error) {
	q := c.r.URL.Query()
	opts := store.ListOptions{Status: q.Get("status"), PageToken: q.Get("page_token"), Limit: DefaultPageSize}
	switch opts.Status {
	case "", store.StatusOpen, store.StatusClosing, store.StatusClosed:
	default:
		return 0, nil, errInvalid("status must be open, closing or closed")
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPageSize {
			return 0, nil, errInvalid("limit must be between 1 and %d", MaxPageSize)
		}
		opts.Limit = n
	}
	if len(opts.PageToken) > 4*store.MaxIDLength {
		return 0, nil, errInvalid("invalid page_token")
	}
	rooms, next, err := s.db.ListRooms(ctx, opts)
	if errors.Is(err, store.ErrInvalidPageToken) {
		return 0, nil, errInvalid("invalid page_token")
	}
	if err != nil {
		return 0, nil, err
	}
	out := make([]*roomJSON, 0, len(rooms))
	for _, r := range rooms {
		r, err := s.refreshRoom(ctx, r, c.now)
		if err != nil {
			return 0, nil, err
		}
		if r == nil || (opts.Status != "" && r.Status != opts.Status) {
			continue
		}
		out = append(out, toRoomJSON(r))
	}
	return http.StatusOK, map[string]any{"rooms": out, "next_page_token": next}, nil
}

type ticketRequest struct {
	Username   string `json:"username"`
	Seat       *int   `json:"seat"`
	TTLSeconds *int64 `json:"ttl_seconds"`
}

// createTicket: POST /server/v1/game/rooms/{room_id}/tickets. Tickets do
// not reserve seats.
func (s *Server) createTicket(ctx context.Context, c *call) (int, any, error) {
	var req ticketRequest
	if err := decodeBody(c.w, c.r, s.cfg.MaxBodyBytes, &req); err != nil {
		return 0, nil, err
	}
	if !validUsername(req.Username) {
		return 0, nil, errInvalid("username must be 1 to %d characters of A-Z a-z 0-9 _ . -", MaxUsernameLen)
	}
	ttl, err := ttlSeconds("ttl_seconds", req.TTLSeconds, s.cfg.JoinTicketTTL, s.cfg.MaxJoinTicketTTL)
	if err != nil {
		return 0, nil, err
	}
	if req.Seat != nil && (*req.Seat < 0 || *req.Seat >= MaxPlayers) {
		return 0, nil, errInvalid("seat must be between 0 and %d", MaxPlayers-1)
	}
	r, err := s.loadRoom(ctx, c.r.PathValue("room_id"), c.now)
	if err != nil {
		return 0, nil, err
	}
	if req.Seat != nil && *req.Seat >= r.MaxPlayers {
		return 0, nil, errInvalid("seat must be below max_players (%d)", r.MaxPlayers)
	}
	if r.Status != store.StatusOpen {
		return 0, nil, errConflict("room is not open", reasonRoomNotOpen)
	}
	ticket := tokens.NewJoinTicket()
	exp := c.now.Add(ttl).UTC()
	if err := s.db.PutJoinTicket(ctx, tokens.Hash(ticket), &store.JoinTicket{
		RoomID:    r.RoomID,
		Username:  req.Username,
		Seat:      req.Seat,
		ExpiresAt: exp,
	}); err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, map[string]any{"ticket": ticket, "expires_at": timeJSON(exp)}, nil
}

type authTokenRequest struct {
	Username   string `json:"username"`
	TTLSeconds *int64 `json:"ttl_seconds"`
}

// createAuthToken: POST /server/v1/auth-tokens.
func (s *Server) createAuthToken(_ context.Context, c *call) (int, any, error) {
	var req authTokenRequest
	if err := decodeBody(c.w, c.r, s.cfg.MaxBodyBytes, &req); err != nil {
		return 0, nil, err
	}
	if !validUsername(req.Username) {
		return 0, nil, errInvalid("username must be 1 to %d characters of A-Z a-z 0-9 _ . -", MaxUsernameLen)
	}
	ttl, err := ttlSeconds("ttl_seconds", req.TTLSeconds, s.cfg.AuthTokenTTL, s.cfg.MaxAuthTokenTTL)
	if err != nil {
		return 0, nil, err
	}
	exp := c.now.Add(ttl).Truncate(time.Second)
	tok, err := s.authSigner.SignAuthToken(tokens.AuthToken{Username: req.Username, Expires: exp.Unix()})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, map[string]any{"auth_token": tok, "expires_at": timeJSON(exp)}, nil
}
