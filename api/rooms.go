package api

import "encoding/json"

// Values of Room.Status.
const (
	StatusOpen    = "open"    // accepting joins, before or during play
	StatusClosing = "closing" // close requested, node not done
	StatusClosed  = "closed"
)

// Values of Room.State.
const (
	StateWaiting = "waiting"
	StatePlaying = "playing"
	StateEnding  = "ending"
)

// Room is the room object of the server API (rooms spec §4 "Resolved
// details"), plus region, metadata, close_reason and close_result when
// set.
type Room struct {
	RoomID                 string          `json:"room_id"`
	Status                 string          `json:"status"` // StatusOpen, StatusClosing, StatusClosed
	State                  string          `json:"state"`  // StateWaiting, StatePlaying, StateEnding
	SyncMode               string          `json:"sync_mode"`
	TickRate               int             `json:"tick_rate"` // 0 in relay rooms
	MaxPlayers             int             `json:"max_players"`
	StartMode              string          `json:"start_mode"`
	Access                 string          `json:"access"`
	ReconnectWindowSeconds int             `json:"reconnect_window_seconds"`
	MaxDurationSeconds     int             `json:"max_duration_seconds"`
	SnapshotIntervalFrames int             `json:"snapshot_interval_frames"`
	CreatedAt              Time            `json:"created_at"`
	NodeID                 string          `json:"node_id"`
	Region                 string          `json:"region,omitempty"`
	Metadata               json.RawMessage `json:"metadata,omitempty"`
	CloseReason            string          `json:"close_reason,omitempty"`
	// CloseResult is the result JSON given to close, if any. Only GET
	// /server/v1/game/rooms/{room_id} returns it, so that a page of the
	// room list stays small.
	CloseResult json.RawMessage `json:"close_result,omitempty"`
}

// Member is a held seat (GET room, C1–C3). Status is joined, online,
// offline, or left (C2's answer).
type Member struct {
	Seat     int    `json:"seat"`
	Username string `json:"username"`
	Status   string `json:"status"`
}

// CreateRoomRequest is the body of POST /server/v1/game/rooms. A nil or
// empty field takes the server's default (docs/api.md); a pointer field
// set to 0 sends 0, so that a reconnect window of 0 can be asked for.
type CreateRoomRequest struct {
	RoomID                 string          `json:"room_id,omitempty"`
	SyncMode               string          `json:"sync_mode,omitempty"`
	TickRate               *int            `json:"tick_rate,omitempty"`
	MaxPlayers             *int            `json:"max_players,omitempty"`
	StartMode              string          `json:"start_mode,omitempty"`
	Access                 string          `json:"access,omitempty"`
	ReconnectWindowSeconds *int            `json:"reconnect_window_seconds,omitempty"`
	MaxDurationSeconds     *int            `json:"max_duration_seconds,omitempty"`
	SnapshotIntervalFrames *int            `json:"snapshot_interval_frames,omitempty"`
	Region                 string          `json:"region,omitempty"`
	Metadata               json.RawMessage `json:"metadata,omitempty"`
}

// RoomResponse is the answer of create, start, close and kick.
type RoomResponse struct {
	Room *Room `json:"room"`
}

// GetRoomResponse is the answer of GET /server/v1/game/rooms/{room_id}.
// Node is nil when the room's node is not live.
type GetRoomResponse struct {
	Members []Member `json:"members"`
	Node    *Node    `json:"node"`
	Room    *Room    `json:"room"`
}

// ListRoomsResponse is the answer of GET /server/v1/game/rooms.
// NextPageToken is "" on the last page.
type ListRoomsResponse struct {
	NextPageToken string `json:"next_page_token"`
	Rooms         []Room `json:"rooms"`
}

// TicketRequest is the body of POST /server/v1/game/rooms/{room_id}/tickets.
type TicketRequest struct {
	Username   string `json:"username"`
	Seat       *int   `json:"seat,omitempty"`
	TTLSeconds *int64 `json:"ttl_seconds,omitempty"` // nil: the server's default
}

// TicketResponse is the answer of a ticket request.
type TicketResponse struct {
	ExpiresAt Time   `json:"expires_at"`
	Ticket    string `json:"ticket"` // "gtk_…", secret, single use
}

// CloseRequest is the body of POST /server/v1/game/rooms/{room_id}/close.
type CloseRequest struct {
	Reason string          `json:"reason,omitempty"` // "": DefaultCloseReason
	Result json.RawMessage `json:"result,omitempty"` // any JSON for the players
}

// KickRequest is the body of POST …/members/{seat}/kick.
type KickRequest struct {
	Reason string `json:"reason,omitempty"`
}
