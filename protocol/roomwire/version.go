package roomwire

// Subprotocol is the WebSocket subprotocol of im.game.v1: a client offers
// it, a game node requires it.
const Subprotocol = "im.game.v1"

// Version is the version of im.game.v1 this package speaks: the
// connect.protocol_version of C1's answer.
const Version = 1

// Room limits of the protocol (rooms spec §4), checked by the control
// plane when a room is created and by the room engine.
const (
	// MaxPlayers is the largest room: CUSTOM.to is a 16-bit seat mask.
	MaxPlayers = 16
	// MinTickRate and MaxTickRate bound a frame room's frames per second.
	MinTickRate = 1
	MaxTickRate = 60
)
