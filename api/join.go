package api

import "log/slog"

// JoinRequest is the body of C1, POST /client/v1/game/rooms/{room_id}/join.
type JoinRequest struct {
	ClientSessionID string `json:"client_session_id"`
	Ticket          string `json:"ticket,omitempty"`
	Transport       string `json:"transport,omitempty"` // TransportWS, TransportUDP or "" (ws): the preference
}

// JoinRoom is the room object of C1's answer.
type JoinRoom struct {
	RoomID                 string `json:"room_id"`
	Status                 string `json:"status"`
	SyncMode               string `json:"sync_mode"` // frame or relay
	TickRate               int    `json:"tick_rate"`
	MaxPlayers             int    `json:"max_players"`
	ReconnectWindowSeconds int    `json:"reconnect_window_seconds"`
}

// Connect says where and how to connect: the connect object of C1.
type Connect struct {
	NodeID          string `json:"node_id"`
	WSURL           string `json:"ws_url"`
	ConnectTicket   string `json:"connect_ticket"` // secret, single use, ConnectTicketTTL
	ProtocolVersion int    `json:"protocol_version"`
	ExpiresAt       Time   `json:"expires_at"`
	// The UDP channel (docs/protocol/rooms-udp.md), set when the room's
	// node serves it. SessionKey is secret: never log it.
	UDP        string `json:"udp,omitempty"`         // the node's UDP address, host:port
	SessionKey string `json:"session_key,omitempty"` // 32 bytes, standard base64
	KeyID      string `json:"key_id,omitempty"`      // the connect ticket's id, unpadded base64url of 16 bytes
	// Transport is the channel to try first: TransportUDP when the
	// request prefers it and the node serves it, else TransportWS.
	Transport string `json:"transport"`
}

// String keeps the connect ticket and the session key out of logs and
// error messages that print a Connect.
func (c Connect) String() string {
	return "{node " + c.NodeID + " ws " + c.WSURL + " udp " + c.UDP + " transport " + c.Transport + "}"
}

// LogValue keeps them out of structured logs too: slog's JSON handler
// would otherwise print every field.
func (c Connect) LogValue() slog.Value { return slog.StringValue(c.String()) }

// JoinResponse is the answer of C1: 201 for a new seat, 200 for the seat
// this login session already held.
type JoinResponse struct {
	Room    JoinRoom `json:"room"`
	Member  Member   `json:"member"`
	Connect Connect  `json:"connect"`
}

// LeaveResponse is the answer of C2. Member is nil when the login session
// never joined the room.
type LeaveResponse struct {
	Member *Member `json:"member"`
}

// CurrentRoom is the room object of C3's answer.
type CurrentRoom struct {
	RoomID string `json:"room_id"`
	Status string `json:"status"`
}

// CurrentResponse is the answer of C3, GET /client/v1/game/current. Both
// are nil when the login session holds no seat in a room that is not
// closed.
type CurrentResponse struct {
	Room   *CurrentRoom `json:"room"`
	Member *Member      `json:"member"`
}
