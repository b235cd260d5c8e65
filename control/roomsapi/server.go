package roomsapi

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/switchboardgg/switchboard/backbone"
	"github.com/switchboardgg/switchboard/control/internal/httpapi"
	"github.com/switchboardgg/switchboard/protocol/roomudp"
	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/tokens"
)

// Defaults of [Config], and the fixed limits of the rooms API
// (docs/api.md).
const (
	// DefaultJoinTicketTTL is the lifetime of a join ticket when the
	// backend gives no ttl_seconds.
	DefaultJoinTicketTTL = 300 * time.Second
	// DefaultMaxJoinTicketTTL caps ttl_seconds of a join ticket; the
	// tickets bucket keeps records 24 h.
	DefaultMaxJoinTicketTTL = 24 * time.Hour
	// DefaultMaxRoomDuration caps a room's max_duration_seconds.
	DefaultMaxRoomDuration = 24 * time.Hour
	// DefaultMaxSnapshotIntervalFrames caps snapshot_interval_frames: 60 s
	// at 60 ticks per second. A frame room's interval is also capped at
	// api.MaxSnapshotIntervalSeconds of its own ticks.
	DefaultMaxSnapshotIntervalFrames = 3600
	// DefaultMaxBodyBytes bounds every request body.
	DefaultMaxBodyBytes = 64 << 10
	// DefaultCommandTimeout is how long the API waits for a node to
	// answer a command before it counts the node as unavailable.
	DefaultCommandTimeout = store.DefaultCommandTimeout
	// DefaultJoinRate and DefaultJoinBurst limit C1 calls per login
	// session.
	DefaultJoinRate  = 2.0
	DefaultJoinBurst = 10
	// DefaultMaxRateLimitKeys bounds the sessions the join limiter
	// remembers at once.
	DefaultMaxRateLimitKeys = 10000
)

// ErrConfig is returned (wrapped) by [New] when a required field of Config
// is missing.
var ErrConfig = errors.New("roomsapi: invalid config")

// Config configures [New]. DB, Backbone and Signer are required; every
// other field has a working zero value.
type Config struct {
	// DB holds rooms, seats, login sessions, join tickets and the node
	// registry. Required.
	DB *store.DB
	// Backbone carries the commands to game nodes. Required.
	Backbone *backbone.Conn
	// Signer signs connect tickets with the deployment's shared signing
	// key. Required.
	Signer *tokens.Signer

	// JoinTicketTTL is the lifetime of a join ticket without
	// ttl_seconds. Zero means DefaultJoinTicketTTL.
	JoinTicketTTL time.Duration
	// MaxJoinTicketTTL caps ttl_seconds of join tickets. Zero means
	// DefaultMaxJoinTicketTTL.
	MaxJoinTicketTTL time.Duration
	// MaxRoomDuration caps max_duration_seconds of a room. Zero means
	// DefaultMaxRoomDuration.
	MaxRoomDuration time.Duration
	// MaxSnapshotIntervalFrames caps snapshot_interval_frames. Zero means
	// DefaultMaxSnapshotIntervalFrames.
	MaxSnapshotIntervalFrames int
	// MaxBodyBytes bounds request bodies, in bytes; larger ones get 400.
	// Zero means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// CommandTimeout bounds the wait for a node's answer. Zero means
	// DefaultCommandTimeout.
	CommandTimeout time.Duration
	// JoinRate is the refill rate, per second and login session, of the
	// C1 limiter. Zero means DefaultJoinRate; negative turns it off.
	JoinRate float64
	// JoinBurst is the C1 limiter's bucket size. Zero means
	// DefaultJoinBurst.
	JoinBurst int
	// MaxRateLimitKeys bounds the sessions the C1 limiter remembers; when
	// full, it forgets the keys idle longest. Zero means
	// DefaultMaxRateLimitKeys.
	MaxRateLimitKeys int
	// Logger receives rare events; tokens are never logged. Nil means
	// slog.Default().
	Logger *slog.Logger
}

// withDefaults returns a copy of c with the zero fields filled in.
func (c Config) withDefaults() Config {
	setDur := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	setDur(&c.JoinTicketTTL, DefaultJoinTicketTTL)
	setDur(&c.MaxJoinTicketTTL, DefaultMaxJoinTicketTTL)
	setDur(&c.MaxRoomDuration, DefaultMaxRoomDuration)
	setDur(&c.CommandTimeout, DefaultCommandTimeout)
	if c.MaxSnapshotIntervalFrames <= 0 {
		c.MaxSnapshotIntervalFrames = DefaultMaxSnapshotIntervalFrames
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.JoinRate == 0 {
		c.JoinRate = DefaultJoinRate
	}
	if c.JoinBurst <= 0 {
		c.JoinBurst = DefaultJoinBurst
	}
	if c.MaxRateLimitKeys <= 0 {
		c.MaxRateLimitKeys = DefaultMaxRateLimitKeys
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Server serves the rooms API. Its methods are safe for concurrent use.
type Server struct {
	// immutable after New
	cfg       Config
	log       *slog.Logger
	db        *store.DB
	bb        *backbone.Conn
	signer    *tokens.Signer // signing key: connect tickets
	udpSecret [32]byte       // from the signing key: UDP session keys (roomudp)
	joinLimit *httpapi.Limiter
}

// New checks cfg and returns a Server. It starts nothing.
func New(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	switch {
	case cfg.DB == nil:
		return nil, fmt.Errorf("%w: DB is nil", ErrConfig)
	case cfg.Backbone == nil:
		return nil, fmt.Errorf("%w: Backbone is nil", ErrConfig)
	case cfg.Signer == nil:
		return nil, fmt.Errorf("%w: Signer is nil", ErrConfig)
	}
	return &Server{
		cfg:       cfg,
		log:       cfg.Logger,
		db:        cfg.DB,
		bb:        cfg.Backbone,
		signer:    cfg.Signer,
		udpSecret: cfg.Signer.Derive(roomudp.SecretLabel),
		joinLimit: httpapi.NewLimiter(cfg.JoinRate, cfg.JoinBurst, cfg.MaxRateLimitKeys),
	}, nil
}

// Routes returns the endpoints of the rooms API, for control's mux.
func (s *Server) Routes() []httpapi.Route {
	const rooms = "/server/v1/game/rooms"
	return []httpapi.Route{
		{Method: "POST", Path: "/client/v1/game/rooms/{room_id}/join", Auth: httpapi.AuthClientRecent, H: s.join},
		{Method: "POST", Path: "/client/v1/game/rooms/{room_id}/leave", Auth: httpapi.AuthClient, H: s.leave},
		{Method: "GET", Path: "/client/v1/game/current", Auth: httpapi.AuthClient, H: s.current},
		{Method: "POST", Path: rooms, Auth: httpapi.AuthServer, H: s.createRoom},
		{Method: "GET", Path: rooms, Auth: httpapi.AuthServer, H: s.listRooms},
		{Method: "GET", Path: rooms + "/{room_id}", Auth: httpapi.AuthServer, H: s.getRoom},
		{Method: "POST", Path: rooms + "/{room_id}/tickets", Auth: httpapi.AuthServer, H: s.createTicket},
		{Method: "POST", Path: rooms + "/{room_id}/start", Auth: httpapi.AuthServer, H: s.startRoom},
		{Method: "POST", Path: rooms + "/{room_id}/close", Auth: httpapi.AuthServer, H: s.closeRoom},
		{Method: "POST", Path: rooms + "/{room_id}/members/{seat}/kick", Auth: httpapi.AuthServer, H: s.kick},
	}
}

// emptyBody decodes a body that may be empty or {} and nothing else.
func (s *Server) emptyBody(c *httpapi.Call) error {
	var v struct{}
	return httpapi.DecodeBody(c.W, c.R, s.cfg.MaxBodyBytes, &v)
}
