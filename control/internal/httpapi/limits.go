package httpapi

// Fixed limits of the API; see docs/api.md.
const (
	MaxUsernameLen        = 64
	MaxRoomIDLen          = 64
	MinClientSessionIDLen = 8
	MaxClientSessionIDLen = 64
	MinTickRate           = 1
	MaxTickRate           = 60
	MaxPlayers            = 16
	// DefaultReconnectWindow and MaxReconnectWindow bound a room's
	// reconnect_window_seconds (spec §4).
	DefaultReconnectWindowSeconds = 60
	MaxReconnectWindowSeconds     = 600
	// DefaultMaxDurationSeconds is a room's max_duration_seconds when the
	// backend gives none (spec §4).
	DefaultMaxDurationSeconds = 3600
	MaxMetadataBytes          = 4 << 10
	MaxCloseResultBytes       = 16 << 10
	MaxCloseReasonLen         = 64
	MaxKickReasonLen          = 64
	MaxRegionLen              = 64
	// DefaultCloseReason is the reason of POST …/close without one.
	DefaultCloseReason = "closed_by_server"
	// ProtocolVersion is connect.protocol_version of C1.
	ProtocolVersion = 1
)
