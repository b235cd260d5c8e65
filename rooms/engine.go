package rooms

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// Engine holds the rooms of one game node, the tick scheduler that drives
// them and the pools of their outgoing messages.
type Engine struct {
	// immutable after New
	cfg   Config
	log   *slog.Logger
	pools *msgPools
	sched *scheduler

	conv       atomic.Uint32
	draining   atomic.Bool
	running    atomic.Bool
	stateCount [StateClosed + 1]atomic.Int64

	frameReqsRefused atomic.Uint64

	mu    sync.Mutex
	rooms map[string]*Room
}

// New returns an engine for cfg. It starts no goroutine: rooms tick once
// [Engine.Run] runs, or when their Tick is called. It fails for a negative
// limit, a Retention over MaxRetention, a FrameReqWindow over
// MaxFrameReqWindow and a CUSTOM limit out of its range.
func New(cfg Config) (*Engine, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&cfg.Retention, DefaultRetention)
	def(&cfg.ConnectTimeout, DefaultConnectTimeout)
	def(&cfg.CloseLinger, DefaultCloseLinger)
	def(&cfg.Housekeeping, DefaultHousekeeping)
	def(&cfg.FrameReqWindow, DefaultFrameReqWindow)
	if cfg.MaxRooms == 0 {
		cfg.MaxRooms = DefaultMaxRooms
	}
	if cfg.RateLimitSeconds == 0 {
		cfg.RateLimitSeconds = DefaultRateLimitSeconds
	}
	for _, l := range []struct {
		v   *int
		def int
	}{
		{&cfg.CustomRate, DefaultCustomRate},
		{&cfg.CustomBurst, DefaultCustomBurst},
		{&cfg.CustomByteRate, DefaultCustomByteRate},
		{&cfg.CustomByteBurst, DefaultCustomByteBurst},
	} {
		if *l.v == 0 {
			*l.v = l.def
		}
		if *l.v < 0 || *l.v > MaxCustomLimit {
			return nil, fmt.Errorf("rooms: CUSTOM limit %d out of range 1-%d", *l.v, MaxCustomLimit)
		}
	}
	if cfg.CustomByteBurst < roomwire.MaxCustomLen {
		return nil, fmt.Errorf("rooms: CustomByteBurst %d below the largest CUSTOM (%d bytes)", cfg.CustomByteBurst, roomwire.MaxCustomLen)
	}
	if cfg.Workers == 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if cfg.Retention < 0 || cfg.ConnectTimeout < 0 || cfg.CloseLinger < 0 || cfg.Housekeeping < 0 ||
		cfg.MaxRooms < 0 || cfg.FrameReqWindow < 0 || cfg.RateLimitSeconds < 0 || cfg.Workers < 0 {
		return nil, fmt.Errorf("rooms: negative limit in config")
	}
	if cfg.Retention > MaxRetention {
		return nil, fmt.Errorf("rooms: retention %v over the maximum %v", cfg.Retention, MaxRetention)
	}
	if cfg.FrameReqWindow > MaxFrameReqWindow {
		return nil, fmt.Errorf("rooms: frame request window %v over the maximum %v", cfg.FrameReqWindow, MaxFrameReqWindow)
	}
	e := &Engine{cfg: cfg, log: cfg.Logger, pools: newMsgPools(cfg.Header), rooms: make(map[string]*Room)}
	e.sched = newScheduler(e, cfg.Workers)
	var b [4]byte
	_, _ = rand.Read(b[:])
	e.conv.Store(binary.BigEndian.Uint32(b[:]))
	return e, nil
}

func (e *Engine) now() time.Time { return e.cfg.Now() }

// Run ticks the rooms until ctx is done, on Config.Workers goroutines, and
// returns nil after they have all stopped. It returns ErrRunning when the
// engine already runs.
func (e *Engine) Run(ctx context.Context) error {
	if !e.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer e.running.Store(false)
	e.sched.run(ctx)
	return nil
}

// Open returns the room with rc.ID, creating it from rc when the engine
// does not run it. It returns ErrDraining while the engine drains,
// ErrTooManyRooms at Config.MaxRooms and an error wrapping ErrBadConfig for
// an invalid rc (a field out of its range, such as a SnapshotInterval over
// MaxSnapshotInterval of frames).
func (e *Engine) Open(rc RoomConfig) (*Room, error) {
	if err := e.fill(&rc); err != nil {
		return nil, err
	}
	e.mu.Lock()
	if r := e.rooms[rc.ID]; r != nil {
		e.mu.Unlock()
		return r, nil
	}
	if e.draining.Load() {
		e.mu.Unlock()
		return nil, ErrDraining
	}
	if len(e.rooms) >= e.cfg.MaxRooms {
		e.mu.Unlock()
		return nil, ErrTooManyRooms
	}
	r := e.newRoom(rc)
	e.rooms[rc.ID] = r
	e.stateCount[StateWaiting].Add(1)
	e.sched.add(r)
	e.mu.Unlock()
	r.log.Debug("room opened", "sync_mode", roomwire.SyncModeName(uint8(rc.SyncMode)), "tick_rate", rc.TickRate, "max_players", rc.MaxPlayers)
	return r, nil
}

func (e *Engine) fill(rc *RoomConfig) error {
	bad := func(what string) error { return fmt.Errorf("%w: %s", ErrBadConfig, what) }
	switch {
	case len(rc.ID) == 0 || len(rc.ID) > 64:
		return bad("room id must be 1-64 bytes")
	case rc.SyncMode != SyncFrame && rc.SyncMode != SyncRelay:
		return bad("unknown sync mode")
	case rc.SyncMode == SyncFrame && (rc.TickRate < 1 || rc.TickRate > MaxTickRate):
		return bad("tick rate out of range")
	case rc.MaxPlayers < 1 || rc.MaxPlayers > MaxSeats:
		return bad("max players out of range")
	case rc.StartMode < StartAllReady || rc.StartMode > StartManual:
		return bad("unknown start mode")
	case rc.ReconnectWindow < 0 || rc.MaxDuration < 0 || rc.SnapshotInterval < 0:
		return bad("negative duration or interval")
	case rc.SyncMode == SyncFrame && rc.SnapshotInterval > rc.TickRate*int(MaxSnapshotInterval/time.Second):
		return bad("snapshot interval over 60 s of frames")
	}
	if rc.SyncMode == SyncRelay {
		rc.TickRate = 0
		rc.SnapshotInterval = 0
	}
	if rc.ReconnectWindow == 0 {
		rc.ReconnectWindow = DefaultReconnectWindow
	}
	if rc.MaxDuration == 0 {
		rc.MaxDuration = DefaultMaxDuration
	}
	if rc.CreatedAt.IsZero() {
		rc.CreatedAt = e.now()
	}
	return nil
}

func (e *Engine) newRoom(rc RoomConfig) *Room {
	r := &Room{
		e:        e,
		cfg:      rc,
		period:   e.cfg.Housekeeping,
		log:      e.log.With("room", rc.ID),
		window:   time.Second,
		expireAt: rc.CreatedAt.Add(rc.MaxDuration),
		state:    StateWaiting,
		seats:    make([]seat, rc.MaxPlayers),
	}
	r.deadline = r.expireAt
	if rc.SyncMode == SyncFrame {
		r.period = time.Second / time.Duration(rc.TickRate)
		r.limit = 2 * rc.TickRate
		// Frames are kept for the retention, plus two snapshot intervals:
		// a client that fell out of retention gets the newest snapshot
		// and every frame after it, and the newest snapshot can be up to
		// one interval (plus the provider's lag) behind the newest frame.
		// The extra is bounded by twice the retention (fill caps the
		// interval at 60 s of frames, as control does).
		slots := int(math.Ceil(float64(rc.TickRate) * e.cfg.Retention.Seconds()))
		slots += min(2*rc.SnapshotInterval, 2*slots)
		r.frames = newFrameLog(max(slots, roomwire.MaxFramesPerFrame))
		r.reqCap = int64(r.frames.slots)
		r.frameUnit = 5 + rc.MaxPlayers*(2+roomwire.MaxInputLen)
		for i := range r.seats {
			r.seats[i].input = make([]byte, 0, roomwire.MaxInputLen)
			r.seats[i].times = make([]int64, r.limit)
		}
	}
	return r
}

// Room returns the room with id, or nil when the engine does not run it.
func (e *Engine) Room(id string) *Room {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rooms[id]
}

// remove forgets a closed room. The caller holds r.mu.
func (e *Engine) remove(r *Room) {
	e.mu.Lock()
	if e.rooms[r.cfg.ID] == r {
		delete(e.rooms, r.cfg.ID)
	}
	e.mu.Unlock()
}

// Stats counts the rooms by state, and what the engine refused.
type Stats struct {
	Waiting, Playing, Ending int
	// FrameReqsRefused counts the FRAME_REQs ignored since New because
	// they were over their seat's budget (Config.FrameReqWindow).
	FrameReqsRefused uint64
}

// Stats returns the number of rooms in each state and the counters.
func (e *Engine) Stats() Stats {
	return Stats{
		Waiting:          int(e.stateCount[StateWaiting].Load()),
		Playing:          int(e.stateCount[StatePlaying].Load()),
		Ending:           int(e.stateCount[StateEnding].Load()),
		FrameReqsRefused: e.frameReqsRefused.Load(),
	}
}

// Len returns the number of rooms the engine runs.
func (e *Engine) Len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.rooms)
}

// Draining reports whether Drain was called.
func (e *Engine) Draining() bool { return e.draining.Load() }

// Drain stops admitting (Open and Admit return ErrDraining), sends ERROR
// 10 node_draining to every connection, closes them and removes every room.
func (e *Engine) Drain() {
	e.draining.Store(true)
	e.mu.Lock()
	rs := make([]*Room, 0, len(e.rooms))
	for _, r := range e.rooms {
		rs = append(rs, r)
	}
	e.mu.Unlock()
	for _, r := range rs {
		r.drain()
	}
}

// Encode returns msg as a sealed [Msg] with one reference, for messages a
// transport sends on its own (PONG, handshake ERROR). It fails when a field
// is over its cap.
func (e *Engine) Encode(msg roomwire.Message) (*Msg, error) {
	return e.pools.encode(msg, 64)
}

// ErrorMsg returns an ERROR message with the code's name as message, with
// one reference. reason and result are cut to their caps; invalid UTF-8 in
// reason is replaced by U+FFFD.
func (e *Engine) ErrorMsg(code uint8, reason string, result []byte) *Msg {
	return e.errorMsg(code, truncate(reason, roomwire.MaxReasonLen), result)
}

func (e *Engine) errorMsg(code uint8, reason string, result []byte) *Msg {
	if len(result) > roomwire.MaxResultLen {
		result = result[:roomwire.MaxResultLen]
	}
	m, err := e.pools.encode(&roomwire.Error{Code: code, Message: roomwire.CodeName(code), Reason: reason, Result: result}, 32+len(reason)+len(result))
	if err != nil {
		panic("rooms: encoding ERROR: " + err.Error())
	}
	return m
}
