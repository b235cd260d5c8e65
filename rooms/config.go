package rooms

import (
	"log/slog"
	"time"
)

// Defaults of [Config].
const (
	// DefaultRetention is how long a room keeps its frames (the spec asks
	// for at least 60 s): tick_rate × 60 frames.
	DefaultRetention = 60 * time.Second
	// DefaultConnectTimeout releases an admitted seat whose player has not
	// connected (reason "timeout").
	DefaultConnectTimeout = 60 * time.Second
	// DefaultCloseLinger is the time between ERROR 9 room_closed and the
	// node closing the connections.
	DefaultCloseLinger = time.Second
	// DefaultHousekeeping is how often rooms without frames (relay rooms)
	// check their timers.
	DefaultHousekeeping = 100 * time.Millisecond
	// DefaultMaxRooms bounds the rooms of one engine.
	DefaultMaxRooms = 10000
	// DefaultFrameReqWindow is the FRAME_REQ budget's period: through
	// FRAME_REQ a seat receives at most the frames its room keeps per
	// window (3,600 frames or more per 5 s at 60 Hz); requests over
	// what is left are ignored.
	DefaultFrameReqWindow = 5 * time.Second
	// DefaultRateLimitSeconds is how many consecutive seconds over the
	// INPUT limit release a seat with ERROR 7.
	DefaultRateLimitSeconds = 10
	// DefaultCustomRate and DefaultCustomBurst bound the CUSTOM messages
	// a seat sends: 60 a second, 120 at once.
	DefaultCustomRate  = 60
	DefaultCustomBurst = 120
	// DefaultCustomByteRate and DefaultCustomByteBurst bound their data
	// bytes: 64 KiB a second, 128 KiB at once.
	DefaultCustomByteRate  = 64 << 10
	DefaultCustomByteBurst = 128 << 10
	// MaxCustomLimit bounds the four CUSTOM limits of [Config].
	MaxCustomLimit = 1 << 30
)

// Config configures an [Engine]. The zero value works, except that rooms
// hand out resume tokens only when SealResume is set.
type Config struct {
	// Now returns the current time. Nil means time.Now. Every rule of the
	// rooms (ticks, timeouts, rate limits) reads time through it.
	Now func() time.Time
	// Logger receives rare events (room opened, closed). Nil means
	// slog.Default().
	Logger *slog.Logger
	// SealResume returns the resume token of a WELCOME: an opaque blob
	// standing for k, which the transport seals (signs or encrypts) and,
	// when a client presents it in RESUME, verifies and turns back into
	// the ResumeKey it passes to [Room.Resume]. The engine knows no token
	// format. It runs with the room locked, so it must not block. Nil, or
	// a result that is empty or longer than roomwire.MaxResumeTokenLen,
	// means WELCOME carries an empty resume token.
	SealResume func(k ResumeKey) []byte
	// Header writes a transport frame header for a payload of n bytes at
	// the end of headroom (len(headroom) == [Headroom]) and returns its
	// length. It runs once per message, so every peer gets the same
	// [Msg.Wire] bytes. Nil means no header.
	Header func(headroom []byte, n int) int
	// Observer receives the state changes that must reach the shared
	// records. Nil means they are dropped.
	Observer Observer

	// Retention is how long frames are kept for FRAME_REQ and resume.
	// Zero means DefaultRetention; at most MaxRetention.
	Retention time.Duration
	// ConnectTimeout releases a seat admitted but never connected. Zero
	// means DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// CloseLinger is the delay between ERROR 9 and closing the
	// connections. Zero means DefaultCloseLinger.
	CloseLinger time.Duration
	// Housekeeping is the timer granularity of rooms without frames. Zero
	// means DefaultHousekeeping.
	Housekeeping time.Duration
	// MaxRooms bounds the rooms open at once. Zero means DefaultMaxRooms.
	MaxRooms int
	// FrameReqWindow budgets the frames a seat receives through FRAME_REQ:
	// the budget is the number of frames the room keeps (its retention
	// plus the snapshot margin) and refills at that many per
	// FrameReqWindow. A request costs the frames it sends, plus the
	// frames of the room's largest size that its SNAPSHOT would fill, at
	// least 1 and at most the whole budget; one over what is left is
	// ignored and counted in Stats.FrameReqsRefused. A request for frames
	// already sent is answered again: the client may have lost them.
	// Zero means DefaultFrameReqWindow; at most MaxFrameReqWindow.
	FrameReqWindow time.Duration
	// RateLimitSeconds is how many consecutive seconds over the INPUT
	// limit release a seat. Zero means DefaultRateLimitSeconds.
	RateLimitSeconds int
	// CustomRate and CustomBurst are the token bucket of the CUSTOM
	// messages each seat sends (messages per second, and at once);
	// CustomByteRate and CustomByteBurst that of their data bytes. A
	// CUSTOM that either bucket cannot pay for is dropped silently, so
	// that one player's flood cannot make the others slow consumers.
	// Zero means DefaultCustomRate, DefaultCustomBurst,
	// DefaultCustomByteRate and DefaultCustomByteBurst; each is at most
	// MaxCustomLimit, and CustomByteBurst at least roomwire.MaxCustomLen.
	CustomRate, CustomBurst         int
	CustomByteRate, CustomByteBurst int
	// Workers is the number of tick scheduler goroutines [Engine.Run]
	// starts. Zero means runtime.GOMAXPROCS(0).
	Workers int
	// ObserveTick, when set, receives for every room tick the scheduler
	// runs how late it started (after its due time) and how long it took.
	// It must not block or allocate.
	ObserveTick func(lateness, duration time.Duration)
}

// ResumeKey is what a resume token stands for: a seat of a room, the login
// session holding it, and the seat's connection generation when the token
// was issued. The engine bumps the generation on every WELCOME, so a key
// resumes once.
type ResumeKey struct {
	RoomID    string
	Seat      int
	SessionID string
	Gen       uint64
}

// SyncMode is a room's sync mode: lockstep frames or message relay.
type SyncMode uint8

// Sync modes; the values are those of WELCOME.sync_mode.
const (
	SyncFrame SyncMode = 1
	SyncRelay SyncMode = 2
)

// StartMode says when a room starts.
type StartMode uint8

// Start modes.
const (
	// StartAllReady starts when every connected seat has sent READY.
	StartAllReady StartMode = iota + 1
	// StartAuto starts when the first player connects.
	StartAuto
	// StartManual starts on [Room.Start] (the game backend's start call).
	StartManual
)

// ParseStartMode returns the StartMode named s ("all_ready", "auto",
// "manual") and whether s is one.
func ParseStartMode(s string) (StartMode, bool) {
	switch s {
	case "all_ready":
		return StartAllReady, true
	case "auto":
		return StartAuto, true
	case "manual":
		return StartManual, true
	}
	return 0, false
}

// ParseSyncMode returns the SyncMode named s ("frame", "relay") and whether
// s is one.
func ParseSyncMode(s string) (SyncMode, bool) {
	switch s {
	case "frame":
		return SyncFrame, true
	case "relay":
		return SyncRelay, true
	}
	return 0, false
}

// Room limits.
const (
	// MaxSeats is the largest room: CUSTOM.to is a 16-bit seat mask.
	MaxSeats = 16
	// MaxTickRate is the fastest frame rate.
	MaxTickRate = 60
	// DefaultReconnectWindow is used when RoomConfig.ReconnectWindow is 0.
	DefaultReconnectWindow = 60 * time.Second
	// DefaultMaxDuration is used when RoomConfig.MaxDuration is 0.
	DefaultMaxDuration = time.Hour
	// MaxSnapshotInterval bounds RoomConfig.SnapshotInterval: at most this
	// long of the room's frames (60 s: 3600 frames at 60 Hz), as the
	// control plane caps snapshot_interval_frames. The frames kept for
	// snapshots grow with the interval.
	MaxSnapshotInterval = 60 * time.Second
	// MaxRetention bounds Config.Retention, which sizes every frame
	// room's frame index (tick_rate × retention entries).
	MaxRetention = 10 * time.Minute
	// MaxFrameReqWindow bounds Config.FrameReqWindow.
	MaxFrameReqWindow = time.Hour
)

// RoomConfig describes one room, as the control plane created it.
type RoomConfig struct {
	// ID is the room_id; 1–64 bytes.
	ID string
	// SyncMode is SyncFrame or SyncRelay.
	SyncMode SyncMode
	// TickRate is frames per second, 1–MaxTickRate; ignored by relay rooms.
	TickRate int
	// MaxPlayers is the number of seats, 1–MaxSeats.
	MaxPlayers int
	// StartMode says when the room starts.
	StartMode StartMode
	// ReconnectWindow is how long an offline seat is kept. Zero means
	// DefaultReconnectWindow.
	ReconnectWindow time.Duration
	// MaxDuration closes the room (reason "expired") this long after
	// CreatedAt. Zero means DefaultMaxDuration.
	MaxDuration time.Duration
	// SnapshotInterval is snapshot_interval_frames; 0 turns snapshots off.
	// At most MaxSnapshotInterval of the room's frames (tick_rate × 60);
	// ignored, and set to 0, in relay rooms.
	SnapshotInterval int
	// CreatedAt is when the room was created. Zero means now.
	CreatedAt time.Time
}
