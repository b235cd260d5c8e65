package rooms

// EventKind says what changed in an [Event].
type EventKind uint8

// Event kinds.
const (
	// SeatOnline: the seat's player connected (status online).
	SeatOnline EventKind = iota + 1
	// SeatOffline: the seat's connection dropped; the seat is kept for
	// the reconnect window (status offline).
	SeatOffline
	// SeatReleased: the seat is free again; Reason is "left", "kicked",
	// "timeout" or "rate_limited".
	SeatReleased
	// RoomPlaying: the room started.
	RoomPlaying
	// RoomEnding: the room is closing; Reason and Result are the close's.
	RoomEnding
	// RoomClosed: the room is gone from the engine; Reason is the close's.
	RoomClosed
)

// String returns the kind's name.
func (k EventKind) String() string {
	switch k {
	case SeatOnline:
		return "seat_online"
	case SeatOffline:
		return "seat_offline"
	case SeatReleased:
		return "seat_released"
	case RoomPlaying:
		return "room_playing"
	case RoomEnding:
		return "room_ending"
	case RoomClosed:
		return "room_closed"
	}
	return "unknown"
}

// Event is a state change of a room that the shared records must learn.
type Event struct {
	Kind   EventKind
	RoomID string
	Seat   int    // seat events only
	Reason string // SeatOffline: "network" or "timeout"; SeatReleased, RoomEnding, RoomClosed: why
	// SessionID is the login session that held the seat (seat events), so
	// that an update does not touch a seat taken again since.
	SessionID string
	Result    []byte // RoomEnding: the game backend's result; not to be modified
}

// Observer receives room events. RoomEvent is called with the room's lock
// held, in the order the changes happened: it must not block and must not
// call back into the room. A node queues the events to a worker that writes
// the records.
type Observer interface {
	RoomEvent(Event)
}
