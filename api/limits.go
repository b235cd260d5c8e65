package api

import "time"

// Fixed limits of the HTTP APIs' fields (docs/api.md, "limits"). The
// limits a deployment configures (token lifetimes, body size, rates) are
// Config fields of package control instead; the room limits of the
// protocol (seats, tick rates) are in package protocol/roomwire.
const (
	// MaxUsernameLen bounds a username: 1–64 of A-Z a-z 0-9 _ . -.
	MaxUsernameLen = 64
	// MaxRoomIDLen bounds a room_id: 1–64 of A-Z a-z 0-9 _ -.
	MaxRoomIDLen = 64
	// MinClientSessionIDLen and MaxClientSessionIDLen bound C1's
	// client_session_id: 8–64 visible ASCII (0x21–0x7E).
	MinClientSessionIDLen = 8
	MaxClientSessionIDLen = 64
	// MaxRegionLen bounds a region: 1–64 of A-Z a-z 0-9 _ . -.
	MaxRegionLen = 64
	// MaxTicketLen bounds the ticket field of C1; real join tickets are 47
	// bytes.
	MaxTicketLen = 256
	// DefaultReconnectWindowSeconds and MaxReconnectWindowSeconds bound a
	// room's reconnect_window_seconds (spec §4); 0 is allowed.
	DefaultReconnectWindowSeconds = 60
	MaxReconnectWindowSeconds     = 600
	// DefaultMaxDurationSeconds is a room's max_duration_seconds when the
	// backend gives none (spec §4).
	DefaultMaxDurationSeconds = 3600
	// MaxSnapshotIntervalSeconds caps a frame room's
	// snapshot_interval_frames at tick_rate × 60: the frames a node
	// retains at least.
	MaxSnapshotIntervalSeconds = 60
	// MaxMetadataBytes bounds a room's metadata, compacted.
	MaxMetadataBytes = 4 << 10
	// MaxCloseResultBytes bounds the result of close, compacted.
	MaxCloseResultBytes = 16 << 10
	// MaxCloseReasonLen and MaxKickReasonLen bound the reasons of close
	// and kick: 1–64 printable ASCII (0x20–0x7E).
	MaxCloseReasonLen = 64
	MaxKickReasonLen  = 64
	// DefaultCloseReason is the reason of a close without one.
	DefaultCloseReason = "closed_by_server"
	// CloseReasonExpired is the reason of a room closed at its
	// max_duration_seconds.
	CloseReasonExpired = "expired"
	// DefaultPageSize is the page size of GET /server/v1/game/rooms
	// without ?limit=.
	DefaultPageSize = 50
	// MaxPageSize caps ?limit= of GET /server/v1/game/rooms.
	MaxPageSize = 200
	// ConnectTicketTTL is the lifetime of a connect ticket (seed: 60 s).
	ConnectTicketTTL = 60 * time.Second
	// TransportWS and TransportUDP are C1's transports: WebSocket, and
	// the UDP channel of docs/protocol/rooms-udp.md.
	TransportWS  = "ws"
	TransportUDP = "udp"
)
