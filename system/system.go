package system

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/switchboardgg/switchboard/backbone"
	"github.com/switchboardgg/switchboard/control"
	"github.com/switchboardgg/switchboard/internal/admin"
	"github.com/switchboardgg/switchboard/internal/certs"
	"github.com/switchboardgg/switchboard/node"
	"github.com/switchboardgg/switchboard/node/udp"
	"github.com/switchboardgg/switchboard/relay"
	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/tokens"
)

// System is one process's running roles. Its methods are safe for
// concurrent use.
type System struct {
	// immutable after Start
	cfg     Config
	log     *slog.Logger
	reg     *prometheus.Registry
	tls     *certs.Store // nil without TLS
	ready   Ready
	servers []*server // in drain order: node, api, admin

	// owned by Start, then by Close
	lock      *dirLock
	lns       []net.Listener   // every listener, closed again by Close
	pcs       []net.PacketConn // every UDP socket bound by bindListeners, closed again by Close
	emb       *backbone.Embedded
	conns     []*backbone.Conn
	probe     *backbone.Probe // made with the first connection; nil without
	signer    *tokens.Signer
	relayKeys *tokens.RelayKeyring     // made at first use (relay, control)
	hubKey    *tokens.HubKeyring       // hub tickets, from the signing key
	wrote     bool                     // the ready file exists
	bound     map[string]boundListener // by ready name: bound before any role starts

	wg      sync.WaitGroup // the serve goroutines
	done    chan struct{}  // closed when a role failed
	errOnce sync.Once
	err     error // why done closed; written before

	closeOnce sync.Once
	closeErr  error
}

// boundListener is a listener bound by bindListeners, to serve, and its
// bound address; a UDP one has pc instead of ln.
type boundListener struct {
	ln   net.Listener
	pc   net.PacketConn
	addr string
}

// server is one listener's serve loop of a role.
type server struct {
	name     string
	shutdown func(context.Context) error
	close    func() error
}

// Start starts every role of cfg and returns once all of them serve: each
// listener is bound, the game node is registered and takes commands, and
// the ready file is written. Start locks cfg.DataDir first; when another
// process owns it, Start returns a *LockedError at once. ctx bounds the
// start only (connecting to NATS, opening the store). On error,
// everything started is stopped again and every listener in cfg closed.
func Start(ctx context.Context, cfg Config) (_ *System, err error) {
	s := &System{done: make(chan struct{})}
	for _, ln := range []net.Listener{cfg.API.Listener, cfg.Node.Listener, cfg.Admin.Listener, cfg.Hub.Listener} {
		if ln != nil {
			s.lns = append(s.lns, ln)
		}
	}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.cfg, err = cfg.withDefaults(); err != nil {
		return nil, err
	}
	cfg = s.cfg
	s.log = cfg.Logger
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("system: create data dir: %w", err)
	}
	if s.lock, err = lockDir(cfg.DataDir); err != nil {
		return nil, err
	}
	warnLooseModes(s.log, cfg.DataDir)
	s.reg = prometheus.NewRegistry()
	s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := s.loadTLS(); err != nil {
		return nil, err
	}
	if err := s.bindListeners(); err != nil {
		return nil, err
	}
	if err := s.startBackbone(); err != nil {
		return nil, err
	}
	if cfg.Roles&RoleRelay != 0 {
		if err := s.startRelay(ctx); err != nil {
			return nil, err
		}
	}
	if cfg.Roles&RoleNode != 0 {
		if err := s.startNode(ctx); err != nil {
			return nil, err
		}
	}
	if cfg.Roles&RoleControl != 0 {
		if err := s.startControl(ctx); err != nil {
			return nil, err
		}
	}
	if cfg.Roles&RoleHub != 0 {
		if err := s.startHub(ctx); err != nil {
			return nil, err
		}
	}
	if cfg.Admin.Addr != "" || cfg.Admin.Listener != nil {
		if err := s.startAdmin(); err != nil {
			return nil, err
		}
	}
	if err := s.startProbe(ctx); err != nil {
		return nil, err
	}
	if cfg.ReadyFile != "" {
		if err := writeReady(cfg.ReadyFile, s.ready); err != nil {
			return nil, err
		}
		s.wrote = true
	}
	s.log.Info("switchboard ready", s.readyAttrs()...)
	return s, nil
}

// readyAttrs are the attributes of the "switchboard ready" line: the
// roles and the addresses of those that run, none empty.
func (s *System) readyAttrs() []any {
	attrs := []any{"roles", s.cfg.Roles.String()}
	for _, kv := range [][2]string{
		{"api", s.ready.API}, {"node_ws", s.ready.NodeWS}, {"node_udp", s.ready.NodeUDP}, {"node_id", s.ready.NodeID},
		{"hub", s.ready.Hub}, {"admin", s.ready.Admin}, {"relay_udp", s.ready.RelayUDP}, {"relay_ws", s.ready.RelayWS},
		{"relay_dtls", s.ready.RelayDTLS},
	} {
		if kv[1] != "" {
			attrs = append(attrs, kv[0], kv[1])
		}
	}
	return append(attrs, "tls", s.tls != nil)
}

// loadTLS loads or generates the certificate of the TLS listeners.
func (s *System) loadTLS() error {
	c := &s.cfg
	if !c.tlsEnabled() {
		return nil
	}
	certFile, keyFile := c.TLS.CertFile, c.TLS.KeyFile
	if certFile == "" {
		var hosts []string
		for _, a := range []string{c.API.Addr, c.Node.Addr} {
			if h, _, err := net.SplitHostPort(a); err == nil {
				hosts = append(hosts, h)
			}
		}
		if u, err := url.Parse(c.Node.PublicURL); err == nil && u.Hostname() != "" {
			hosts = append(hosts, u.Hostname())
		}
		cf, kf, generated, err := certs.SelfSigned(certs.SelfSignedConfig{Dir: c.DataDir, Hosts: hosts})
		if err != nil {
			return fmt.Errorf("system: %w", err)
		}
		if generated {
			s.log.Info("generated a self-signed TLS certificate", "file", cf)
		}
		certFile, keyFile = cf, kf
	}
	st, err := certs.Load(certFile, keyFile)
	if err != nil {
		return fmt.Errorf("system: %w", err)
	}
	s.tls = st
	s.ready.TLSFingerprint = st.Fingerprint()
	return nil
}

// listen binds a listener of the named ready field (or takes given) and
// wraps it in TLS when the system serves TLS. It returns the listener to
// serve and the bound address.
func (s *System) listen(name, addr string, given net.Listener, useTLS bool) (net.Listener, string, error) {
	ln := given
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", addr); err != nil {
			return nil, "", fmt.Errorf("system: %s listener: %w", name, err)
		}
		s.lns = append(s.lns, ln)
	}
	bound := ln.Addr().String()
	if useTLS && s.tls != nil {
		ln = tls.NewListener(ln, s.tls.TLSConfig())
		s.ready.TLS = append(s.ready.TLS, name)
	}
	return ln, bound, nil
}

// bindListeners binds the TCP listeners of the game node, the API, the
// hub and the admin listener, the UDP sockets of the game node and the
// hub, and the relay's UDP, WebSocket and DTLS listeners, before any role
// starts, so that an address in use fails
// Start before a game node registers (and then disappears again) and
// before the backbone starts.
func (s *System) bindListeners() error {
	c := &s.cfg
	s.bound = map[string]boundListener{}
	bind := s.bindTCP
	if c.Roles&RoleNode != 0 {
		if err := bind("node_ws", c.Node.Addr, c.Node.Listener, true); err != nil {
			return err
		}
		if c.Node.UDPAddr != "" {
			if err := s.bindUDP("node_udp", c.Node.UDPAddr); err != nil {
				return err
			}
		}
	}
	if c.Roles&RoleControl != 0 {
		if err := bind("api", c.API.Addr, c.API.Listener, true); err != nil {
			return err
		}
	}
	if c.Roles&RoleHub != 0 {
		if err := s.bindHub(); err != nil {
			return err
		}
	}
	if c.Admin.Addr != "" || c.Admin.Listener != nil {
		if err := bind("admin", c.Admin.Addr, c.Admin.Listener, true); err != nil {
			return err
		}
	}
	if c.Roles&RoleRelay != 0 {
		return s.bindRelay()
	}
	return nil
}

// bindTCP binds the named TCP listener (given, or at addr) for
// bindListeners and records it in s.bound.
func (s *System) bindTCP(name, addr string, given net.Listener, useTLS bool) error {
	ln, bound, err := s.listen(name, addr, given, useTLS)
	if err != nil {
		return err
	}
	s.bound[name] = boundListener{ln: ln, addr: bound}
	return nil
}

// scheme returns secure when the system serves TLS, else plain.
func (s *System) scheme(plain, secure string) string {
	if s.tls != nil {
		return secure
	}
	return plain
}

// startBackbone starts the embedded NATS server when there is no URL.
func (s *System) startBackbone() error {
	c := &s.cfg
	if c.NATS.URL != "" {
		s.ready.NATS = c.NATS.URL
		return nil
	}
	host, port, err := splitHostPort(c.NATS.Addr)
	if err != nil {
		return fmt.Errorf("%w: NATS address %q: %w", ErrConfig, c.NATS.Addr, err)
	}
	emb, err := backbone.StartEmbedded(backbone.EmbeddedConfig{
		DataDir: c.DataDir, Host: host, Port: port, Logger: s.log.With("component", "nats"),
	})
	if err != nil {
		return fmt.Errorf("system: %w", err)
	}
	s.emb = emb
	s.ready.NATS = emb.ClientURL()
	c.NATS.CredentialsFile = emb.CredentialsFile()
	return nil
}

// connect opens a backbone connection and a store for one role. The
// signing key is read with the first.
func (s *System) connect(ctx context.Context, role string) (*backbone.Conn, *store.DB, error) {
	log := s.log.With("component", role)
	bb, err := backbone.Connect(ctx, backbone.Config{
		URL: s.ready.NATS, Name: "switchboard-" + role, CredentialsFile: s.cfg.NATS.CredentialsFile,
		Logger: log,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("system: %s: %w", role, err)
	}
	s.conns = append(s.conns, bb)
	if s.probe == nil {
		// One write probe per process, through the first connection.
		if s.probe, err = backbone.NewProbe(backbone.ProbeConfig{Conn: bb, Embedded: s.emb, Logger: s.log}); err != nil {
			return nil, nil, fmt.Errorf("system: %w", err)
		}
	}
	db, err := store.Open(ctx, bb, store.Config{Logger: log})
	if err != nil {
		return nil, nil, fmt.Errorf("system: %s: %w", role, err)
	}
	if s.signer == nil {
		key, err := db.SigningKey(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("system: %s: %w", role, err)
		}
		if s.signer, err = tokens.NewSigner(key); err != nil {
			return nil, nil, fmt.Errorf("system: signing key: %w", err)
		}
		if s.hubKey, err = HubKeyring(key); err != nil {
			return nil, nil, err
		}
	}
	return bb, db, nil
}

// serve runs fn in a tracked goroutine; an error other than the closed
// server's fails the system.
func (s *System) serve(name string, fn func() error) {
	s.wg.Go(func() {
		err := fn()
		if err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, node.ErrServerClosed) && !errors.Is(err, relay.ErrServerClosed) && !errors.Is(err, udp.ErrClosed) {
			s.fail(fmt.Errorf("system: %s: %w", name, err))
		}
	})
}

func (s *System) fail(err error) {
	s.errOnce.Do(func() {
		s.err = err
		close(s.done)
	})
}

// startNode starts the game node role.
func (s *System) startNode(ctx context.Context) error {
	c := &s.cfg
	id := c.Node.ID
	if id == "" {
		var err error
		if id, err = nodeID(c.DataDir); err != nil {
			return err
		}
	}
	ln, bound := s.bound["node_ws"].ln, s.bound["node_ws"].addr
	s.ready.NodeWS = s.scheme("ws://", "wss://") + bound + node.Path
	s.ready.NodeID = id
	pc := s.boundUDP("node_udp") // bindListeners; nil without --node-udp
	if pc != nil {
		s.ready.NodeUDP = s.bound["node_udp"].addr
	}
	bb, db, err := s.connect(ctx, "node")
	if err != nil {
		closeUDP(pc)
		ln.Close()
		return err
	}
	nc := c.Node.Node
	nc.ID = id
	nc.WSURL = c.Node.PublicURL
	if nc.WSURL == "" {
		nc.WSURL = s.ready.NodeWS
	}
	if nc.Version == "" {
		nc.Version = c.Version
	}
	nc.Signer, nc.DB, nc.Backbone = s.signer, db, bb
	nc.Logger = s.log.With("component", "node", "node_id", id)
	nc.Registerer = s.reg
	if pc != nil {
		nc.UDPAddr = c.Node.UDPPublic
		if nc.UDPAddr == "" {
			nc.UDPAddr = s.ready.NodeUDP
		}
	}
	n, err := node.New(nc)
	if err != nil {
		closeUDP(pc)
		ln.Close()
		return fmt.Errorf("system: %w", err)
	}
	s.servers = slices.Insert(s.servers, 0, &server{name: "node", shutdown: n.Shutdown, close: n.Close})
	var u *udp.Server
	if pc != nil {
		uc := c.Node.UDP
		uc.Node, uc.Signer, uc.Registerer = n, s.signer, s.reg
		uc.Logger = s.log.With("component", "node_udp", "node_id", id)
		if u, err = udp.New(uc); err != nil {
			pc.Close()
			ln.Close()
			return fmt.Errorf("system: %w", err)
		}
		// After the node in the list: the node's drain sends ERROR 10 on
		// the sessions' KCP before the socket closes.
		s.servers = slices.Insert(s.servers, 1, &server{name: "node udp",
			shutdown: u.Shutdown, close: u.Close})
	}
	if err := n.Start(); err != nil {
		closeUDP(pc)
		return fmt.Errorf("system: node %s: %w", id, err)
	}
	s.serve("node", func() error { return n.Serve(ln) })
	if u != nil {
		s.serve("node udp", func() error { return u.Serve(pc) })
	}
	return nil
}

func closeUDP(pc *net.UDPConn) {
	if pc != nil {
		pc.Close()
	}
}

// startControl starts the control role: the HTTP APIs on control's
// hardened http.Server.
func (s *System) startControl(ctx context.Context) error {
	c := &s.cfg
	key := c.API.ServerKey
	if key == "" {
		var err error
		if key, err = serverKey(c.DataDir); err != nil {
			return err
		}
	}
	if c.API.PublishServerKey {
		s.ready.ServerKey = key
	}
	if c.Admin.Key == "" {
		c.Admin.Key = key
	}
	ln, bound := s.bound["api"].ln, s.bound["api"].addr
	s.ready.API = s.scheme("http://", "https://") + bound
	bb, db, err := s.connect(ctx, "control")
	if err != nil {
		return err
	}
	cc := c.API.Control
	cc.DB, cc.Backbone, cc.Signer, cc.ServerKey = db, bb, s.signer, key
	cc.HubTickets = s.hubKey
	cc.Logger = s.log.With("component", "control")
	cc.Registerer = s.reg
	cc.Health = s.Health
	relayKeys, err := s.relayKeyring()
	if err != nil {
		return err
	}
	rc := c.Relay.API
	rc.Keys = relayKeys
	cc.Relay = &rc
	if rc.AllowAnonymous {
		cc.Logger.Warn("relay allow-anonymous is on: anyone may allocate relay slots without credentials; never in production")
	}
	if cc.AllowAnonymous {
		cc.Logger.Warn("allow-anonymous is on: C0 logs anyone in without an auth token, as any username they choose; never in production")
	}
	ctl, err := control.New(cc)
	if err != nil {
		return fmt.Errorf("system: %w", err)
	}
	s.servers = append(s.servers, &server{name: "api", shutdown: ctl.Shutdown, close: ctl.Close})
	s.serve("api", func() error { return ctl.Serve(ln) })
	return nil
}

// startAdmin starts the admin listener: metrics, health, pprof; over TLS
// like every other TCP listener when the system serves TLS, so that the
// admin key never crosses the network in clear.
func (s *System) startAdmin() error {
	c := &s.cfg
	ln, bound := s.bound["admin"].ln, s.bound["admin"].addr
	s.ready.Admin = s.scheme("http://", "https://") + bound
	h, err := admin.New(admin.Config{Key: c.Admin.Key, Gatherer: s.reg, Health: s.Health})
	if err != nil {
		return fmt.Errorf("system: %w", err)
	}
	hs := adminServer(h)
	hs.ErrorLog = slog.NewLogLogger(s.log.With("component", "admin").Handler(), slog.LevelWarn)
	s.servers = append(s.servers, &server{name: "admin", shutdown: hs.Shutdown, close: hs.Close})
	s.serve("admin", func() error { return hs.Serve(ln) })
	return nil
}

// startProbe probes the store once — creating the probe's bucket before
// anything can close the system — and then runs the probe until Drain or
// Close. When the embedded NATS server keeps a write error until restart
// (a full disk), Start fails, or later the probe fails the system (Done,
// Err wraps backbone.ErrRestartRequired), so that the process exits
// non-zero and its supervisor restarts it.
func (s *System) startProbe(ctx context.Context) error {
	if s.probe == nil {
		return nil
	}
	if err := s.probe.Probe(ctx); errors.Is(err, backbone.ErrRestartRequired) {
		return fmt.Errorf("system: store: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stop := func() error { cancel(); return nil }
	s.servers = append(s.servers, &server{name: "store probe", shutdown: func(context.Context) error { return stop() }, close: stop})
	s.wg.Go(func() {
		if err := s.probe.Run(ctx); err != nil {
			s.log.Error("the embedded NATS server cannot write (disk full?) and only a restart recovers: exiting so that a supervisor restarts switchboard; free space first",
				"err", err)
			s.fail(fmt.Errorf("system: store: %w", err))
		}
	})
	return nil
}

// Health reports whether the store accepts writes: the outcome of the
// last write probe (every backbone.DefaultProbeInterval), an error
// wrapping backbone.ErrUnwritable when it failed. It is what control's
// /healthz and the admin listener's /healthz ask. It does no I/O.
func (s *System) Health(ctx context.Context) error {
	if s.probe == nil {
		return nil
	}
	return s.probe.Check(ctx)
}

// Ready returns the real addresses of the listeners, and the other fields
// of the ready file.
func (s *System) Ready() Ready {
	r := s.ready
	r.TLS = slices.Clone(r.TLS)
	return r
}

// Registry returns the registry of every role's metrics, served on the
// admin listener's /metrics.
func (s *System) Registry() *prometheus.Registry { return s.reg }

// Done is closed when a role stopped serving on its own (a listener
// failed); [System.Err] says why. The caller then drains or closes.
func (s *System) Done() <-chan struct{} { return s.done }

// Err returns why Done was closed, or nil while it is open.
func (s *System) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// ReloadTLS reads the certificate files again; new TLS handshakes on
// every listener then use the new certificate. It returns nil without
// TLS. On error the certificate in use stays.
func (s *System) ReloadTLS() error {
	if s.tls == nil {
		return nil
	}
	if err := s.tls.Reload(); err != nil {
		return fmt.Errorf("system: reload TLS: %w", err)
	}
	s.log.Info("TLS certificate reloaded", "sha256", s.tls.Fingerprint())
	return nil
}

// TLSFingerprint returns the fingerprint of the certificate served now,
// "" without TLS.
func (s *System) TLSFingerprint() string {
	if s.tls == nil {
		return ""
	}
	return s.tls.Fingerprint()
}

// Drain stops the roles gracefully — first the game node (ERROR 10 to its
// players, its records written, its registry entry marked draining), then
// the API and the admin listener, which finish their requests — and then
// closes everything as Close does. When ctx ends first, what is left is
// closed at once and ctx's error is returned among the others.
func (s *System) Drain(ctx context.Context) error {
	var errs []error
	for _, sv := range s.servers {
		if err := sv.shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("system: drain %s: %w", sv.name, err))
		}
	}
	errs = append(errs, s.Close())
	return errors.Join(errs...)
}

// Close stops everything at once: listeners and connections, the roles,
// the backbone connections and the embedded NATS server; it waits for
// their goroutines, removes the ready file and unlocks the data dir. It is
// idempotent.
func (s *System) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		for _, sv := range s.servers {
			if err := sv.close(); err != nil && !errors.Is(err, net.ErrClosed) {
				errs = append(errs, fmt.Errorf("system: close %s: %w", sv.name, err))
			}
		}
		for _, ln := range s.lns {
			_ = ln.Close() // most are closed by their server already
		}
		for _, pc := range s.pcs {
			_ = pc.Close() // as the listeners
		}
		s.wg.Wait()
		for i := len(s.conns) - 1; i >= 0; i-- {
			s.conns[i].Close()
		}
		if s.emb != nil {
			s.emb.Shutdown()
		}
		if s.wrote {
			errs = append(errs, removeReady(s.cfg.ReadyFile))
		}
		if s.lock != nil {
			if err := s.lock.release(); err != nil {
				errs = append(errs, fmt.Errorf("system: unlock data dir: %w", err))
			}
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// splitHostPort splits HOST:PORT with a numeric or named port.
func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := net.LookupPort("tcp", p)
	if err != nil {
		return "", 0, err
	}
	return host, port, nil
}
