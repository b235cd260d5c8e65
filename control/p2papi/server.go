package p2papi

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/backbone"
	"github.com/switchboardgg/switchboard/control/internal/httpapi"
	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/tokens"
)

// ErrConfig is returned (wrapped) by [New] when a required field of Config
// is missing.
var ErrConfig = errors.New("p2papi: invalid config")

// Config configures [New]. DB, Backbone and Tickets are required; every
// other field has a working zero value.
type Config struct {
	// DB holds networks, join codes and the hub registry. Required.
	DB *store.DB
	// Backbone carries the commands to hubs. Required.
	Backbone *backbone.Conn
	// Tickets seals hub tickets with the deployment's key. Required.
	Tickets *tokens.HubKeyring

	// MaxPeers is the peer cap of a network made by a join or by the
	// server API without max_peers. Zero means api.DefaultMaxPeers; at
	// most api.MaxMaxPeers.
	MaxPeers int
	// Limits bound request bodies, the wait for a hub's answer (past it
	// the API answers 503 hub_unavailable) and joins per login session,
	// which also bounds join-code guessing. Zero fields mean the
	// httpapi.Default… of each, as for the rooms API.
	httpapi.Limits
	// Logger receives rare events; tickets and join codes are never
	// logged. Nil means slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.MaxPeers <= 0 {
		c.MaxPeers = api.DefaultMaxPeers
	}
	c.MaxPeers = min(c.MaxPeers, api.MaxMaxPeers)
	c.Limits = c.Limits.WithDefaults()
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Server serves the P2P API. Its methods are safe for concurrent use.
type Server struct {
	// immutable after New
	cfg       Config
	log       *slog.Logger
	db        *store.DB
	bb        *backbone.Conn
	tickets   *tokens.HubKeyring
	joinLimit *httpapi.Limiter
}

// New checks cfg and returns a Server. It starts nothing.
func New(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	switch {
	case cfg.DB == nil:
		return nil, fmt.Errorf("p2papi: %w: DB is nil", ErrConfig)
	case cfg.Backbone == nil:
		return nil, fmt.Errorf("p2papi: %w: Backbone is nil", ErrConfig)
	case cfg.Tickets == nil:
		return nil, fmt.Errorf("p2papi: %w: Tickets is nil", ErrConfig)
	}
	return &Server{
		cfg:       cfg,
		log:       cfg.Logger,
		db:        cfg.DB,
		bb:        cfg.Backbone,
		tickets:   cfg.Tickets,
		joinLimit: cfg.JoinLimiter(),
	}, nil
}

// Routes returns the endpoints of the P2P API, for control's mux.
func (s *Server) Routes() []httpapi.Route {
	const (
		nets   = "/p2p/v1/networks"
		net    = nets + "/{network}"
		server = httpapi.AuthServer
	)
	return []httpapi.Route{
		{Method: "POST", Path: "/p2p/v1/join", Auth: httpapi.AuthClient, H: s.join},
		{Method: "POST", Path: nets, Auth: server, H: s.createNetwork},
		{Method: "GET", Path: nets, Auth: server, H: s.listNetworks},
		{Method: "GET", Path: net, Auth: server, H: s.getNetwork},
		{Method: "PATCH", Path: net, Auth: server, H: s.updateNetwork},
		{Method: "DELETE", Path: net, Auth: server, H: s.deleteNetwork},
		{Method: "GET", Path: net + "/peers", Auth: server, H: s.listPeers},
		{Method: "POST", Path: net + "/peers/{peer_id}/kick", Auth: server, H: s.kick},
		{Method: "POST", Path: net + "/bans", Auth: server, H: s.ban},
		{Method: "DELETE", Path: net + "/bans/{username}", Auth: server, H: s.unban},
	}
}
