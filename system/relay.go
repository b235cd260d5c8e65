package system

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboardgg/switchboard/control/relayapi"
	"github.com/switchboardgg/switchboard/relay"
	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/tokens"
)

// RelaySecretFile keeps the relay secret (hex) generated when
// RelayConfig.Secret is empty.
const RelaySecretFile = "relay-secret"

// Defaults of [RelayConfig].
const (
	// DefaultRelayHeartbeat is how often a relay node writes its registry
	// entry (load, draining); the entry lives store.DefaultNodeTTL.
	DefaultRelayHeartbeat = 5 * time.Second
	// DefaultRelayReleaseQueue bounds the releases a relay node has
	// reported but not yet written to the store; more are dropped (their
	// records expire with the store's RelayTTL, and a join code's host is
	// checked at join).
	DefaultRelayReleaseQueue = 4096
)

// RelayConfig configures the relay role (issue 8): the data plane's
// listeners, which run when UDPAddr or WSAddr is set (`switchboard serve
// relay`, `switchboard dev --relay --relay-ws`), its registry entry, and
// the relay REST API that the control role mounts.
type RelayConfig struct {
	// UDPAddr is the UDP listen address, HOST:PORT (port 0: a free one).
	// Empty means no UDP listener.
	UDPAddr string
	// WSAddr is the WebSocket listen address, HOST:PORT, served with TLS
	// (wss) when the system serves TLS. Empty means no WebSocket listener.
	WSAddr string
	// DTLSAddr is the DTLS listen address, HOST:PORT over UDP (port 0: a
	// free one): relay messages over DTLS 1.2 with the allocation key as
	// pre-shared key (relay.Server.ServeDTLS). Empty means no DTLS.
	DTLSAddr string
	// Secret is the relay secret, at least tokens.RelayMinSecret bytes,
	// shared by whatever seals the allocations' connection data. Empty
	// means the secret kept in DataDir/relay-secret, generated there on
	// first start. Never logged.
	Secret []byte
	// PublicUDP, PublicUDP6 and PublicWS are the addresses clients are
	// given (HOST:PORT, [HOST]:PORT, ws:// or wss:// URL). Empty means the
	// bound address of that family (refused when bound to all interfaces)
	// and the WebSocket URL of the ready file.
	PublicUDP, PublicUDP6, PublicWS string
	// PublicDTLS is the DTLS address clients are given, HOST:PORT. Empty
	// means the bound address (refused when bound to all interfaces).
	PublicDTLS string
	// Heartbeat is the registry write interval. Zero means
	// DefaultRelayHeartbeat.
	Heartbeat time.Duration
	// API configures the relay REST API of the control role; its DB and
	// Keys are set by Start (the keyring of Secret).
	API relayapi.Config
	// Relay tunes the data plane: limits and timeouts, OnRelease. Start
	// sets its Keys, NodeID (the node id), Logger and Registerer; a zero
	// BootEpoch is a new one at every start (the Unix time in nanoseconds),
	// an empty Region the game node's.
	Relay relay.Config
}

// relayKeyring returns the keyring of the relay secret: RelayConfig.Secret,
// or the one kept in the data dir.
func (s *System) relayKeyring() (*tokens.RelayKeyring, error) {
	if s.relayKeys != nil {
		return s.relayKeys, nil
	}
	secret := s.cfg.Relay.Secret
	if len(secret) == 0 {
		var err error
		if secret, err = relaySecret(s.cfg.DataDir); err != nil {
			return nil, err
		}
	}
	keys, err := tokens.NewRelayKeyring(tokens.RelayKey{ID: 1, Secret: secret})
	if err != nil {
		return nil, fmt.Errorf("system: relay: %w", err)
	}
	s.relayKeys = keys
	return keys, nil
}

// bindRelay binds the relay's UDP, WebSocket and DTLS listeners that are
// configured, for bindListeners: before any role starts.
func (s *System) bindRelay() error {
	c := &s.cfg.Relay
	udp := func(name, addr string) error {
		if addr == "" {
			return nil
		}
		return s.bindUDP(name, addr)
	}
	if err := udp("relay_udp", c.UDPAddr); err != nil {
		return err
	}
	if c.WSAddr != "" {
		if err := s.bindTCP("relay_ws", c.WSAddr, nil, true); err != nil {
			return err
		}
	}
	return udp("relay_dtls", c.DTLSAddr)
}

// startRelay starts the relay data plane on its UDP, WebSocket and DTLS
// listeners (bound by bindRelay), when any is configured, and registers
// the node.
func (s *System) startRelay(ctx context.Context) error {
	c := &s.cfg
	if !c.Relay.serves() {
		return nil
	}
	keys, err := s.relayKeyring()
	if err != nil {
		return err
	}
	if b := s.bound["relay_udp"]; b.pc != nil {
		s.ready.RelayUDP = b.addr
	}
	if b := s.bound["relay_ws"]; b.ln != nil {
		s.ready.RelayWS = s.scheme("ws://", "wss://") + b.addr + "/"
	}
	if b := s.bound["relay_dtls"]; b.pc != nil {
		s.ready.RelayDTLS = b.addr
	}
	id := c.Node.ID
	if id == "" {
		if id, err = nodeID(c.DataDir); err != nil {
			return err
		}
	}
	bb, db, err := s.connect(ctx, "relay")
	if err != nil {
		return err
	}
	log := s.log.With("component", "relay", "node_id", id)
	rc := c.Relay.Relay
	rc.Keys, rc.NodeID = keys, id
	if rc.BootEpoch == 0 {
		rc.BootEpoch = uint64(time.Now().UnixNano())
	}
	if rc.Region == "" {
		rc.Region = c.Node.Node.Region
	}
	rel := newReleaser(db, log, rc.OnRelease)
	rc.OnRelease = rel.report
	rc.Logger = log
	rc.Registerer = s.reg
	r, err := relay.New(rc)
	if err != nil {
		return fmt.Errorf("system: %w", err)
	}
	// Bound by bindListeners, closed by Close when the role fails to start.
	pc, ln, dtlsPC := s.bound["relay_udp"].pc, s.bound["relay_ws"].ln, s.bound["relay_dtls"].pc
	entry, err := s.relayEntry(id, rc)
	if err != nil {
		return err
	}
	reg := &relayRegistry{db: db, log: log, entry: entry, srv: r, max: rc.MaxAllocations,
		every: c.Relay.Heartbeat, stop: make(chan struct{})}
	if reg.max == 0 {
		reg.max = relay.DefaultMaxAllocations
	}
	if reg.every <= 0 {
		reg.every = DefaultRelayHeartbeat
	}
	// Closed in this order: the registry entry goes first, so that no
	// allocation is made for a node that is going away.
	s.servers = append(s.servers,
		&server{name: "relay registry", shutdown: reg.drain, close: reg.close},
		&server{name: "relay", shutdown: r.Shutdown, close: r.Close},
		&server{name: "relay releases", shutdown: func(context.Context) error { return rel.close() }, close: rel.close})
	if pc != nil {
		s.serve("relay udp", func() error { return r.ServePacket(pc) })
	}
	if ln != nil {
		s.serve("relay ws", func() error { return r.Serve(ln) })
	}
	if dtlsPC != nil {
		s.serve("relay dtls", func() error { return r.ServeDTLS(dtlsPC) })
	}
	s.wg.Go(rel.run)
	if err := reg.put(ctx); err != nil {
		return err
	}
	s.wg.Go(reg.run)
	stopCmds, err := store.ServeRelayCommands(bb, id, store.RelayHandler{
		Stats: func(hexID string) store.RelayStats { return relayStats(r, hexID) },
		Drain: func(ctx context.Context) error {
			err := reg.drain(ctx)
			if err != nil {
				log.Warn("relay drain failed", "err", err)
			} else {
				log.Info("relay draining: no new allocations")
			}
			return err
		},
	})
	if err != nil {
		return fmt.Errorf("system: %w", err)
	}
	s.servers = append(s.servers, &server{name: "relay commands",
		shutdown: func(context.Context) error { return stopCmds() }, close: stopCmds})
	return nil
}

// relayStats answers control's question about one allocation of r.
func relayStats(r *relay.Server, hexID string) store.RelayStats {
	b, err := hex.DecodeString(hexID)
	if err != nil || len(b) != 16 {
		return store.RelayStats{}
	}
	a, ok := r.Allocation([16]byte(b))
	if !ok {
		return store.RelayStats{}
	}
	return store.RelayStats{Live: true, Host: a.Host, Carrier: a.Carrier, Peers: a.Peers, BoundAt: a.Created.UTC(),
		PacketsIn: a.PacketsIn, BytesIn: a.BytesIn, PacketsOut: a.PacketsOut, BytesOut: a.BytesOut}
}

// relayEntry is the node's registry entry: the public addresses clients
// are given.
func (s *System) relayEntry(id string, rc relay.Config) (*store.Node, error) {
	c := &s.cfg.Relay
	n := &store.Node{Role: store.RoleRelay, NodeID: id, Region: rc.Region, BootEpoch: rc.BootEpoch,
		StartedAt: time.Now().UTC(), Version: s.cfg.Version, Addresses: map[string]string{}}
	if s.ready.RelayUDP != "" {
		bound := netip.MustParseAddrPort(s.ready.RelayUDP)
		name := relayapi.AddrUDP
		if bound.Addr().Unmap().Is6() {
			name = relayapi.AddrUDP6
		}
		if bound.Addr().IsUnspecified() && c.PublicUDP == "" && c.PublicUDP6 == "" {
			return nil, fmt.Errorf("system: %w: the relay listens on all interfaces (%s): give its public UDP address", ErrConfig, s.ready.RelayUDP)
		}
		if !bound.Addr().IsUnspecified() {
			n.Addresses[name] = netip.AddrPortFrom(bound.Addr().Unmap(), bound.Port()).String()
		}
	}
	for name, v := range map[string]string{relayapi.AddrUDP: c.PublicUDP, relayapi.AddrUDP6: c.PublicUDP6} {
		if v == "" {
			continue
		}
		ap, err := netip.ParseAddrPort(v)
		if err != nil || ap.Addr().Unmap().Is4() != (name == relayapi.AddrUDP) {
			return nil, fmt.Errorf("system: %w: relay public %s address %q", ErrConfig, name, v)
		}
		n.Addresses[name] = v
	}
	switch bound, _ := netip.ParseAddrPort(s.ready.RelayDTLS); {
	case c.PublicDTLS != "":
		if _, err := netip.ParseAddrPort(c.PublicDTLS); err != nil {
			return nil, fmt.Errorf("system: %w: relay public DTLS address %q", ErrConfig, c.PublicDTLS)
		}
		n.Addresses[relayapi.AddrDTLS] = c.PublicDTLS
	case s.ready.RelayDTLS == "":
	case bound.Addr().IsUnspecified():
		return nil, fmt.Errorf("system: %w: the relay's DTLS listens on all interfaces (%s): give its public address", ErrConfig, s.ready.RelayDTLS)
	default:
		n.Addresses[relayapi.AddrDTLS] = netip.AddrPortFrom(bound.Addr().Unmap(), bound.Port()).String()
	}
	if ws := c.PublicWS; ws != "" {
		n.Addresses[relayapi.AddrWS] = ws
	} else if s.ready.RelayWS != "" {
		n.Addresses[relayapi.AddrWS] = s.ready.RelayWS
	}
	return n, nil
}

// relayRegistry keeps a relay node's registry entry: written at start and
// every heartbeat with the node's load, marked draining by Drain, deleted
// by Close.
type relayRegistry struct {
	// immutable
	db    *store.DB
	log   *slog.Logger
	srv   *relay.Server
	max   int
	every time.Duration
	stop  chan struct{}

	mu       sync.Mutex
	entry    *store.Node // guarded by mu
	closed   bool        // guarded by mu
	stopOnce sync.Once
}

func (g *relayRegistry) put(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.entry.Load = float64(g.srv.Allocations()) / float64(g.max)
	if err := g.db.PutNode(ctx, g.entry); err != nil {
		return fmt.Errorf("system: relay registry: %w", err)
	}
	return nil
}

func (g *relayRegistry) run() {
	t := time.NewTicker(g.every)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), g.every)
			if err := g.put(ctx); err != nil {
				g.log.Warn("relay heartbeat failed", "err", err)
			}
			cancel()
		}
	}
}

// drain marks the node draining: control makes no new allocation on it.
func (g *relayRegistry) drain(ctx context.Context) error {
	g.mu.Lock()
	g.entry.Draining = true
	g.mu.Unlock()
	return g.put(ctx)
}

// close stops the heartbeat and deletes the entry: the node's join codes
// die with it.
func (g *relayRegistry) close() error {
	g.stopOnce.Do(func() { close(g.stop) })
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := g.db.DeleteRoleNode(ctx, store.RoleRelay, g.entry.NodeID); err != nil {
		return fmt.Errorf("system: relay registry: %w", err)
	}
	return nil
}

// releaser writes the releases a relay node reports to the store (the
// host's join code dies with it), from one goroutine, so that the data
// plane never waits on the store.
type releaser struct {
	db    *store.DB
	log   *slog.Logger
	also  func(relay.Release) // the configured OnRelease; nil: none
	queue chan [16]byte
	stop  chan struct{}
	once  sync.Once

	dropped atomic.Int64
}

func newReleaser(db *store.DB, log *slog.Logger, also func(relay.Release)) *releaser {
	return &releaser{db: db, log: log, also: also, queue: make(chan [16]byte, DefaultRelayReleaseQueue), stop: make(chan struct{})}
}

// report is relay.Config.OnRelease: it never blocks.
func (r *releaser) report(rel relay.Release) {
	select {
	case r.queue <- rel.AllocationID:
	default:
		r.dropped.Add(1)
	}
	if r.also != nil {
		r.also(rel)
	}
}

func (r *releaser) run() {
	for {
		select {
		case <-r.stop:
			return
		case id := <-r.queue:
			if n := r.dropped.Swap(0); n > 0 {
				r.log.Warn("relay releases not written to the store: queue full", "dropped", n)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := r.db.ReleaseRelayAllocation(ctx, hex.EncodeToString(id[:])); err != nil {
				r.log.Warn("relay release not written to the store", "err", err)
			}
			cancel()
		}
	}
}

func (r *releaser) close() error {
	r.once.Do(func() { close(r.stop) })
	return nil
}

// relaySecret returns the relay secret kept in dir, or generates one and
// keeps it there.
func relaySecret(dir string) ([]byte, error) {
	path := filepath.Join(dir, RelaySecretFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		secret, err := hex.DecodeString(strings.TrimSpace(string(b)))
		if err != nil || len(secret) < tokens.RelayMinSecret {
			return nil, fmt.Errorf("%w: relay secret in %s: want at least %d bytes in hex", ErrConfig, path, tokens.RelayMinSecret)
		}
		return secret, nil
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("system: read relay secret: %w", err)
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("system: generate relay secret: %w", err)
	}
	if err := writeFileAtomic(path, []byte(hex.EncodeToString(secret)+"\n")); err != nil {
		return nil, fmt.Errorf("system: keep relay secret: %w", err)
	}
	return secret, nil
}

// serves reports whether the relay data plane has a listener to run.
func (c *RelayConfig) serves() bool {
	return c.UDPAddr != "" || c.WSAddr != "" || c.DTLSAddr != ""
}
