package store

import (
	"encoding/json"
	"slices"
	"time"
)

// Room.Status values.
const (
	StatusOpen    = "open"    // accepting joins, before or during play
	StatusClosing = "closing" // close requested, node not yet done
	StatusClosed  = "closed"  // over; purged after 24 h by control
)

// Room.State values.
const (
	StateWaiting = "waiting"
	StatePlaying = "playing"
	StateEnding  = "ending"
)

// Room.SyncMode values.
const (
	SyncFrame = "frame"
	SyncRelay = "relay"
)

// Room.StartMode values.
const (
	StartAllReady = "all_ready"
	StartAuto     = "auto"
	StartManual   = "manual"
)

// Room.Access values.
const (
	AccessTicket = "ticket"
	AccessOpen   = "open"
)

// Seat.Status values.
const (
	SeatJoined  = "joined"  // taken at C1, not connected yet
	SeatOnline  = "online"  // connected to the node
	SeatOffline = "offline" // disconnected, inside the reconnect window
)

// MaxSessionRooms is the number of rooms a Session remembers; older
// entries are dropped on write.
const MaxSessionRooms = 32

// Room is a room record, key room_id in the rooms bucket. Seats holds the
// held seats only, sorted by seat number.
type Room struct {
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
	Region                 string          `json:"region,omitempty"`
	Metadata               json.RawMessage `json:"metadata,omitempty"`
	CreatedAt              time.Time       `json:"created_at"`
	NodeID                 string          `json:"node_id"`
	CloseReason            string          `json:"close_reason,omitempty"`
	CloseResult            json.RawMessage `json:"close_result,omitempty"`
	ClosedAt               *time.Time      `json:"closed_at,omitempty"`
	StartedAt              *time.Time      `json:"started_at,omitempty"`
	Seats                  []Seat          `json:"seats"`
}

// RoomSettings are what a game node needs to run a room: the settings
// the game backend chose at creation, none of the record's state.
type RoomSettings struct {
	RoomID                 string    `json:"room_id"`
	SyncMode               string    `json:"sync_mode"`
	TickRate               int       `json:"tick_rate"`
	MaxPlayers             int       `json:"max_players"`
	StartMode              string    `json:"start_mode"`
	ReconnectWindowSeconds int       `json:"reconnect_window_seconds"`
	MaxDurationSeconds     int       `json:"max_duration_seconds"`
	SnapshotIntervalFrames int       `json:"snapshot_interval_frames"`
	CreatedAt              time.Time `json:"created_at"`
}

// Settings returns the room's settings.
func (r *Room) Settings() RoomSettings {
	return RoomSettings{
		RoomID:                 r.RoomID,
		SyncMode:               r.SyncMode,
		TickRate:               r.TickRate,
		MaxPlayers:             r.MaxPlayers,
		StartMode:              r.StartMode,
		ReconnectWindowSeconds: r.ReconnectWindowSeconds,
		MaxDurationSeconds:     r.MaxDurationSeconds,
		SnapshotIntervalFrames: r.SnapshotIntervalFrames,
		CreatedAt:              r.CreatedAt,
	}
}

// Seat is a held seat of a room.
type Seat struct {
	Seat            int        `json:"seat"`
	Username        string     `json:"username"`
	SessionID       string     `json:"session_id"`                  // login session holding the seat
	ClientSessionID string     `json:"client_session_id,omitempty"` // from C1
	Status          string     `json:"status"`                      // SeatJoined, SeatOnline or SeatOffline
	JoinedAt        time.Time  `json:"joined_at"`
	ConnectedAt     *time.Time `json:"connected_at,omitempty"`
}

// Seat returns the held seat n, or nil.
func (r *Room) Seat(n int) *Seat {
	for i := range r.Seats {
		if r.Seats[i].Seat == n {
			return &r.Seats[i]
		}
	}
	return nil
}

// SeatOfSession returns the seat held by login session sessionID, or nil.
func (r *Room) SeatOfSession(sessionID string) *Seat {
	for i := range r.Seats {
		if r.Seats[i].SessionID == sessionID {
			return &r.Seats[i]
		}
	}
	return nil
}

// SeatOfUser returns the seat held by username, or nil.
func (r *Room) SeatOfUser(username string) *Seat {
	for i := range r.Seats {
		if r.Seats[i].Username == username {
			return &r.Seats[i]
		}
	}
	return nil
}

// FreeSeat returns the lowest seat number in [0, MaxPlayers) not held, or
// -1 when the room is full.
func (r *Room) FreeSeat() int {
	for n := range r.MaxPlayers {
		if r.Seat(n) == nil {
			return n
		}
	}
	return -1
}

// PutSeat stores s, replacing the seat with the same number, and keeps
// Seats sorted.
func (r *Room) PutSeat(s Seat) {
	if cur := r.Seat(s.Seat); cur != nil {
		*cur = s
		return
	}
	r.Seats = append(r.Seats, s)
	sortSeats(r.Seats)
}

// RemoveSeat releases seat n and reports whether it was held.
func (r *Room) RemoveSeat(n int) bool {
	i := slices.IndexFunc(r.Seats, func(s Seat) bool { return s.Seat == n })
	if i < 0 {
		return false
	}
	r.Seats = slices.Delete(r.Seats, i, i+1)
	return true
}

// Clone returns a deep copy of r.
func (r *Room) Clone() *Room {
	c := *r
	c.Metadata = slices.Clone(r.Metadata)
	c.CloseResult = slices.Clone(r.CloseResult)
	c.ClosedAt = cloneTime(r.ClosedAt)
	c.StartedAt = cloneTime(r.StartedAt)
	c.Seats = slices.Clone(r.Seats)
	for i := range c.Seats {
		c.Seats[i].ConnectedAt = cloneTime(c.Seats[i].ConnectedAt)
	}
	return &c
}

func sortSeats(s []Seat) {
	slices.SortFunc(s, func(a, b Seat) int { return a.Seat - b.Seat })
}

func cloneTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}

// Session is a login session (C0), key session_id in the sessions bucket.
type Session struct {
	SessionID   string    `json:"session_id"`
	Username    string    `json:"username"`
	RefreshHash string    `json:"refresh_hash"` // hex SHA-256 of the refresh token
	CreatedAt   time.Time `json:"created_at"`
	ExpiresAt   time.Time `json:"expires_at"`
	// RefreshUntil is the session's absolute end: refresh extends
	// ExpiresAt up to it, never past it. CreateSession sets it to
	// CreatedAt + Config.SessionMaxAge when zero.
	RefreshUntil time.Time     `json:"refresh_until,omitzero"`
	Rooms        []SessionRoom `json:"rooms"` // most recent first, at most MaxSessionRooms
}

// Refresh extends the session by lifetime from now, up to RefreshUntil,
// and reports false (changing nothing) when the session has ended: past
// ExpiresAt or RefreshUntil.
func (s *Session) Refresh(now time.Time, lifetime time.Duration) bool {
	until := s.RefreshUntil
	if until.IsZero() { // a session from before RefreshUntil existed
		until = s.CreatedAt.Add(DefaultSessionMaxAge)
	}
	if !now.Before(s.ExpiresAt) || !now.Before(until) {
		return false
	}
	exp := now.Add(lifetime)
	if exp.After(until) {
		exp = until
	}
	s.ExpiresAt = exp.UTC()
	return true
}

// SessionRoom is a room a login session joined.
type SessionRoom struct {
	RoomID     string    `json:"room_id"`
	Seat       int       `json:"seat"`
	Username   string    `json:"username"`
	JoinedAt   time.Time `json:"joined_at"`
	Left       bool      `json:"left"`
	LeftReason string    `json:"left_reason,omitempty"`
}

// Room returns the entry of roomID, or nil.
func (s *Session) Room(roomID string) *SessionRoom {
	for i := range s.Rooms {
		if s.Rooms[i].RoomID == roomID {
			return &s.Rooms[i]
		}
	}
	return nil
}

// PutRoom stores r as the most recent entry, replacing the entry of the
// same room, and drops the oldest beyond MaxSessionRooms.
func (s *Session) PutRoom(r SessionRoom) {
	s.Rooms = slices.DeleteFunc(s.Rooms, func(e SessionRoom) bool { return e.RoomID == r.RoomID })
	s.Rooms = slices.Insert(s.Rooms, 0, r)
	if len(s.Rooms) > MaxSessionRooms {
		s.Rooms = s.Rooms[:MaxSessionRooms]
	}
}

// JoinTicket is a join ticket issued by the game backend, key hex SHA-256
// of the ticket text in the tickets bucket.
type JoinTicket struct {
	RoomID     string     `json:"room_id"`
	Username   string     `json:"username"`
	Seat       *int       `json:"seat,omitempty"` // nil: any seat
	ExpiresAt  time.Time  `json:"expires_at"`
	ConsumedBy string     `json:"consumed_by"` // login session id, "" until used
	ConsumedAt *time.Time `json:"consumed_at,omitempty"`
}

// Node is a node's registry entry, key "<role>.<node_id>" in the nodes
// bucket, written by the node's heartbeat. Every role registers: game
// nodes, relay nodes and hubs.
type Node struct {
	Role   string `json:"role"` // RoleGame, RoleRelay or RoleHub; empty means RoleGame
	NodeID string `json:"node_id"`
	WSURL  string `json:"ws_url,omitempty"` // a game node's WebSocket URL
	// Addresses are the role's other listeners by name ("udp", "quic"…).
	Addresses map[string]string `json:"addresses,omitempty"`
	UDPAddr   string            `json:"udp_addr,omitempty"`
	Region    string            `json:"region,omitempty"`
	// Load is the role's own measure of how busy the node is, 0 idle to
	// 1 full; a game node reports Rooms and Connections as well.
	Load        float64   `json:"load,omitempty"`
	Rooms       int       `json:"rooms"`
	Connections int       `json:"connections"`
	Draining    bool      `json:"draining"`
	StartedAt   time.Time `json:"started_at"`
	UpdatedAt   time.Time `json:"updated_at"` // set by PutNode
	Version     string    `json:"version,omitempty"`
	// BootEpoch is a relay node's boot epoch (a new one at every start):
	// allocations sealed for another epoch died with that boot.
	BootEpoch uint64 `json:"boot_epoch,omitempty"`
}
