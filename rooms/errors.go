package rooms

import (
	"errors"

	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// Errors of the handshake calls [Room.Join] and [Room.Resume]. [Code] maps
// them to the ERROR code the node sends.
var (
	// ErrRoomEnded means the room is ending or closed (ERROR 3
	// room_not_found). [Engine.Open] and [Room.Admit] return it too.
	ErrRoomEnded = errors.New("rooms: room ended")
	// ErrSeatUnavailable means the seat is not held (ERROR 4 room_full).
	// [Room.Kick] and [Room.Release] return it for a seat nobody holds.
	ErrSeatUnavailable = errors.New("rooms: seat not available")
	// ErrSeatTaken means another login session holds the seat (ERROR 5
	// seat_taken). [Room.Admit] returns it too.
	ErrSeatTaken = errors.New("rooms: seat taken")
	// ErrResumeRejected means a resume token that is not the seat's
	// current one (ERROR 11 resume_rejected).
	ErrResumeRejected = errors.New("rooms: resume rejected")
	// ErrDraining means the engine is draining (ERROR 10 node_draining).
	// [Engine.Open] and [Room.Admit] return it too.
	ErrDraining = errors.New("rooms: draining")
)

// Errors of the commands.
var (
	// ErrStarted is returned by [Room.Start] for a room already started.
	ErrStarted = errors.New("rooms: room already started")
	// ErrNotManual is returned by [Room.Start] for a room whose start mode
	// is not manual.
	ErrNotManual = errors.New("rooms: start mode is not manual")
	// ErrBadSeat is returned for a seat number outside the room.
	ErrBadSeat = errors.New("rooms: no such seat")
	// ErrTooManyRooms is returned by [Engine.Open] at Config.MaxRooms.
	ErrTooManyRooms = errors.New("rooms: too many rooms")
	// ErrBadConfig is returned (wrapped) by [Engine.Open] for an invalid
	// RoomConfig.
	ErrBadConfig = errors.New("rooms: invalid room config")
	// ErrRunning is returned by [Engine.Run] when it is already running.
	ErrRunning = errors.New("rooms: engine already running")
)

// Code returns the im.game.v1 ERROR code of a handshake error, or
// CodeProtocolUnsupported for an error that is none of them.
func Code(err error) uint8 {
	switch {
	case errors.Is(err, ErrRoomEnded):
		return roomwire.CodeRoomNotFound
	case errors.Is(err, ErrSeatUnavailable):
		return roomwire.CodeRoomFull
	case errors.Is(err, ErrSeatTaken):
		return roomwire.CodeSeatTaken
	case errors.Is(err, ErrResumeRejected):
		return roomwire.CodeResumeRejected
	case errors.Is(err, ErrDraining):
		return roomwire.CodeNodeDraining
	}
	return roomwire.CodeProtocolUnsupported
}
