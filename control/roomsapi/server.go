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
	// Limits bound request bodies, the wait for a node's answer and C1
	// calls per login session (the join limiter). Zero fields mean the
	// httpapi.Default… of each, as for the P2P API.
	httpapi.Limits
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
	if c.MaxSnapshotIntervalFrames <= 0 {
		c.MaxSnapshotIntervalFrames = DefaultMaxSnapshotIntervalFrames
	}
	c.Limits = c.Limits.WithDefaults()
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
		joinLimit: cfg.JoinLimiter(),
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
