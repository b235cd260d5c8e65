package teststack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/switchboardgg/switchboard/backbone"
	"github.com/switchboardgg/switchboard/client/backend"
	"github.com/switchboardgg/switchboard/client/rooms"
	"github.com/switchboardgg/switchboard/control"
	"github.com/switchboardgg/switchboard/node"
	roomengine "github.com/switchboardgg/switchboard/rooms"
	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/tokens"
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
	// ws://<node listener address>/game/v1/ws.
	WSURL string
	// NodeWait bounds how long [Stack.CreateRoom] retries while the node
	// has not registered. Zero means DefaultNodeWait.
	NodeWait time.Duration
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
	// HTTP is a client with its own transport; Close closes its idle
	// connections.
	HTTP *http.Client
	// Backend is a game-backend client of control that uses HTTP.
	Backend *backend.Client

	nodeWait  time.Duration
	closers   []func() // run last first by Close
	closeOnce sync.Once
}

// Start starts a deployment whose embedded NATS keeps its data in dir.
// On error, everything started so far is stopped again.
func Start(ctx context.Context, dir string, cfg Config) (s *Stack, err error) {
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
	log := cfg.Logger
	ln := cfg.NodeListener
	s = &Stack{ServerKey: cfg.ServerKey, nodeWait: cfg.NodeWait}
	defer func() {
		if err != nil {
			if ln != nil {
				ln.Close()
			}
			s.Close()
			s = nil
		}
	}()

	emb, err := backbone.StartEmbedded(backbone.EmbeddedConfig{DataDir: dir, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("teststack: start nats: %w", err)
	}
	s.closers = append(s.closers, emb.Shutdown)
	connect := func() (*backbone.Conn, error) {
		c, err := backbone.Connect(ctx, backbone.Config{URL: emb.ClientURL(), CredentialsFile: emb.CredentialsFile(), Logger: log})
		if err != nil {
			return nil, fmt.Errorf("teststack: connect nats: %w", err)
		}
		s.closers = append(s.closers, c.Close)
		return c, nil
	}
	bbCtl, err := connect()
	if err != nil {
		return nil, err
	}
	bbNode, err := connect()
	if err != nil {
		return nil, err
	}
	db, err := store.Open(ctx, bbCtl, store.Config{Logger: log})
	if err != nil {
		return nil, fmt.Errorf("teststack: open control store: %w", err)
	}
	nodeDB, err := store.Open(ctx, bbNode, store.Config{Logger: log})
	if err != nil {
		return nil, fmt.Errorf("teststack: open node store: %w", err)
	}
	key, err := db.SigningKey(ctx)
	if err != nil {
		return nil, fmt.Errorf("teststack: signing key: %w", err)
	}
	signer, err := tokens.NewSigner(key)
	if err != nil {
		return nil, fmt.Errorf("teststack: signer: %w", err)
	}

	if ln == nil {
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return nil, fmt.Errorf("teststack: listen: %w", err)
		}
	}
	s.NodeAddr = ln.Addr().String()
	wsURL := cfg.WSURL
	if wsURL == "" {
		wsURL = "ws://" + s.NodeAddr + node.Path
	}
	n, err := node.New(node.Config{
		ID: cfg.NodeID, WSURL: wsURL,
		Signer: signer, DB: nodeDB, Backbone: bbNode, Logger: log,
		Rooms: roomengine.Config{Retention: cfg.Retention},
	})
	if err != nil {
		return nil, fmt.Errorf("teststack: node: %w", err)
	}
	served := make(chan struct{})
	nodeLn := ln
	ln = nil // Serve owns it now
	go func() {
		defer close(served)
		_ = n.Serve(nodeLn)
	}()
	s.closers = append(s.closers, func() {
		n.Close()
		<-served
	})

	ctl, err := control.New(control.Config{
		DB: db, Backbone: bbCtl, ServerKey: cfg.ServerKey, Signer: signer, Logger: log,
		LoginRate: -1, JoinRate: -1,
	})
	if err != nil {
		return nil, fmt.Errorf("teststack: control: %w", err)
	}
	hs := httptest.NewServer(ctl.Handler())
	s.closers = append(s.closers, hs.Close)
	tr := &http.Transport{}
	s.closers = append(s.closers, tr.CloseIdleConnections)
	s.HTTP = &http.Client{Transport: tr, Timeout: DefaultHTTPTimeout}
	if s.Backend, err = backend.New(hs.URL, cfg.ServerKey, s.HTTP); err != nil {
		return nil, fmt.Errorf("teststack: backend client: %w", err)
	}
	s.API = hs.URL
	return s, nil
}

// Close stops everything Start started, last first, and joins its
// goroutines. It is idempotent.
func (s *Stack) Close() {
	s.closeOnce.Do(func() {
		for i := len(s.closers) - 1; i >= 0; i-- {
			s.closers[i]()
		}
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
