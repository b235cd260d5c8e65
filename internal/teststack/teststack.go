package teststack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/switchboardgg/switchboard/client/backend"
	"github.com/switchboardgg/switchboard/client/rooms"
	"github.com/switchboardgg/switchboard/control"
	"github.com/switchboardgg/switchboard/node"
	roomengine "github.com/switchboardgg/switchboard/rooms"
	"github.com/switchboardgg/switchboard/system"
)

// Defaults for the zero fields of [Config].
const (
	// DefaultServerKey is the server API key control accepts.
	DefaultServerKey = "teststack-server-key-0123456789"
	// DefaultNodeID is the game node's id.
	DefaultNodeID = "teststack-node"
	// DefaultNodeWait is how long [Stack.CreateRoom] waits for the node's
	// first registry heartbeat.
	DefaultNodeWait = 10 * time.Second
	// DefaultHTTPTimeout is the timeout of [Stack.HTTP].
	DefaultHTTPTimeout = 10 * time.Second
)

// createRetry is the pause between CreateRoom attempts while the node has
// not registered yet.
const createRetry = 20 * time.Millisecond

// Config configures [Start]. Its zero value works.
type Config struct {
	// ServerKey is control's server API key. Empty means DefaultServerKey.
	ServerKey string
	// NodeID is the game node's id. Empty means DefaultNodeID.
	NodeID string
	// Retention is the node's frame retention. Zero means the rooms
	// engine's default.
	Retention time.Duration
	// NodeListener is the node's listener; Start takes it over and closes
	// it (on error too). Nil means a new one on 127.0.0.1:0. Pass one when
	// something, such as a proxy, must know the node's address before the
	// node starts.
	NodeListener net.Listener
	// WSURL is the WebSocket URL the node advertises. Empty means
	// ws://<node listener address> and node.Path.
	WSURL string
	// NodeUDP is the listen address of the node's UDP channel, e.g.
	// "127.0.0.1:0". Empty means the node serves no UDP.
	NodeUDP string
	// NodeWait bounds how long [Stack.CreateRoom] retries while the node
	// has not registered. Zero means DefaultNodeWait.
	NodeWait time.Duration
	// Relay runs a relay node too (UDP, WebSocket and DTLS on 127.0.0.1, region
	// RelayRegion) and lets the relay REST API be called without
	// credentials, as a local test needs.
	Relay bool
	// RelayRegion is the relay node's region. Empty means "local".
	RelayRegion string
	// Hub adds the P2P hub role on 127.0.0.1:0 (Ready().Hub).
	Hub bool
	// Logger receives every component's logs. Nil means they are
	// discarded.
	Logger *slog.Logger
}

// Stack is a running deployment. Its fields are immutable after [Start].
type Stack struct {
	// API is control's base URL.
	API string
	// ServerKey is control's server API key.
	ServerKey string
	// NodeAddr is the node listener's address.
	NodeAddr string
	// NodeUDP is the node's bound UDP address; empty without Config.NodeUDP.
	NodeUDP string
	// HTTP is a client with its own transport; Close closes its idle
	// connections.
	HTTP *http.Client
	// Backend is a game-backend client of control that uses HTTP.
	Backend *backend.Client
	// RelayUDP and RelayWS are the relay node's UDP address and WebSocket
	// URL, with Config.Relay.
	RelayUDP, RelayWS string
	// RelayDTLS is the relay node's DTLS address (UDP), with Config.Relay.
	RelayDTLS string
	// System is the running process, for what the fields above do not
	// say (Ready, Drain).
	System *system.System

	nodeWait  time.Duration
	tr        *http.Transport
	closeOnce sync.Once
}

// Start starts a deployment through [system.Start] — every role, an
// embedded NATS server keeping its data in dir (the data dir), every
// listener on 127.0.0.1 with a free port — with control's login and join
// limits off. On error, everything started so far is stopped again and
// cfg.NodeListener closed.
func Start(ctx context.Context, dir string, cfg Config) (*Stack, error) {
	if cfg.ServerKey == "" {
		cfg.ServerKey = DefaultServerKey
	}
	if cfg.NodeID == "" {
		cfg.NodeID = DefaultNodeID
	}
	if cfg.NodeWait == 0 {
		cfg.NodeWait = DefaultNodeWait
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	roles, hub := system.AllRoles, system.HubConfig{}
	if cfg.Hub {
		roles |= system.RoleHub
		hub.Addr = "127.0.0.1:0"
	}
	sc := system.Config{
		Roles:   roles,
		Hub:     hub,
		DataDir: dir,
		API: system.APIConfig{
			Addr: "127.0.0.1:0", ServerKey: cfg.ServerKey,
			Control: control.Config{LoginRate: -1, JoinRate: -1},
		},
		Node: system.NodeConfig{
			Addr: "127.0.0.1:0", Listener: cfg.NodeListener, ID: cfg.NodeID, PublicURL: cfg.WSURL, UDPAddr: cfg.NodeUDP,
			Node: node.Config{Rooms: roomengine.Config{Retention: cfg.Retention}},
		},
		NATS:   system.NATSConfig{Addr: "127.0.0.1:0"},
		Logger: cfg.Logger,
	}
	if cfg.Relay {
		sc.Relay = system.RelayConfig{UDPAddr: "127.0.0.1:0", WSAddr: "127.0.0.1:0", DTLSAddr: "127.0.0.1:0"}
		sc.Relay.API.AllowAnonymous = true
		sc.Relay.Relay.Region = cfg.RelayRegion
		if sc.Relay.Relay.Region == "" {
			sc.Relay.Relay.Region = "local"
		}
	}
	sys, err := system.Start(ctx, sc)
	if err != nil {
		return nil, fmt.Errorf("teststack: %w", err)
	}
	ready := sys.Ready()
	tr := &http.Transport{}
	s := &Stack{
		API: ready.API, ServerKey: cfg.ServerKey, System: sys, RelayUDP: ready.RelayUDP, RelayWS: ready.RelayWS,
		RelayDTLS: ready.RelayDTLS,
		NodeUDP:   ready.NodeUDP,
		HTTP:      &http.Client{Transport: tr, Timeout: DefaultHTTPTimeout},
		nodeWait:  cfg.NodeWait, tr: tr,
	}
	if u, err := url.Parse(ready.NodeWS); err == nil {
		s.NodeAddr = u.Host
	}
	if s.Backend, err = backend.New(s.API, cfg.ServerKey, s.HTTP); err != nil {
		s.Close()
		return nil, fmt.Errorf("teststack: backend client: %w", err)
	}
	return s, nil
}

// Close stops everything Start started and joins its goroutines. It is
// idempotent.
func (s *Stack) Close() {
	s.closeOnce.Do(func() {
		_ = s.System.Close()
		s.tr.CloseIdleConnections()
	})
}

// CreateRoom creates a room through [Stack.Backend], retrying while the
// node's first registry heartbeat is pending (rooms.ErrGameNodeUnavailable)
// for up to [Config.NodeWait]. Any other error is returned at once.
func (s *Stack) CreateRoom(ctx context.Context, req backend.CreateRoomRequest) (*backend.Room, error) {
	deadline := time.Now().Add(s.nodeWait)
	for {
		room, err := s.Backend.CreateRoom(ctx, req)
		if err == nil || !errors.Is(err, rooms.ErrGameNodeUnavailable) {
			return room, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w: %w", ErrNodeUnavailable, err)
		}
		t := time.NewTimer(createRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}
