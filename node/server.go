package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gobwas/ws"

	"github.com/switchboardgg/switchboard/protocol/roomwire"
	"github.com/switchboardgg/switchboard/rooms"
	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/tokens"
)

// Server is a game node: it serves im.game.v1 over WebSocket, runs the rooms
// in a [rooms.Engine], executes the commands of control (it implements
// store.CommandHandler) and keeps its registry entry alive.
type Server struct {
	// immutable after New
	cfg     Config
	log     *slog.Logger
	engine  *rooms.Engine
	m       *metrics
	tickets *ticketCache
	resumes resumeSuccessors
	records *recordQueue
	adm     *admission
	mux     *http.ServeMux
	started time.Time

	nconns   atomic.Int64
	connSeq  atomic.Uint64
	draining atomic.Bool

	upgradeHook atomic.Pointer[func()] // tests: runs between upgrade and registration
	hbFailures  atomic.Int64           // registry heartbeats failed in a row

	startOnce sync.Once
	startErr  error

	mu       sync.Mutex
	closed   bool
	shutting bool // Shutdown runs: no new connections
	servers  []*http.Server
	conns    map[*conn]struct{}
	wsURL    string
	stopCmds func() error
	cancel   context.CancelFunc

	bg     sync.WaitGroup // engine, record worker, heartbeat
	connWG sync.WaitGroup // connection handlers (each joins its writer)
}

// New returns a node for cfg. It starts nothing: [Server.Serve] does.
func New(cfg Config) (*Server, error) {
	if cfg.Signer == nil {
		return nil, errors.New("node: Config.Signer is required")
	}
	if cfg.ID == "" {
		cfg.ID = "node-" + tokens.NewName(6)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	setInt := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	setDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	setInt(&cfg.MaxRooms, DefaultMaxRooms)
	setInt(&cfg.MaxConnections, DefaultMaxConnections)
	setInt(&cfg.MaxPending, DefaultMaxPending)
	setInt(&cfg.MaxPendingPerSource, DefaultMaxPendingPerSource)
	setInt(&cfg.SendQueueDepth, DefaultSendQueueDepth)
	setInt(&cfg.MaxQueueBytes, DefaultMaxQueueBytes)
	setInt(&cfg.ReadLimit, DefaultReadLimit)
	setInt(&cfg.MaxHeaderBytes, DefaultMaxHeaderBytes)
	setInt(&cfg.ReadRate, DefaultReadRate)
	setInt(&cfg.ReadBurst, DefaultReadBurst)
	setInt(&cfg.MaxTicketCache, DefaultMaxTicketCache)
	setDur(&cfg.HandshakeTimeout, DefaultHandshakeTimeout)
	setDur(&cfg.IdleTimeout, DefaultIdleTimeout)
	setDur(&cfg.WriteTimeout, DefaultWriteTimeout)
	setDur(&cfg.CloseWait, DefaultCloseWait)
	setDur(&cfg.Heartbeat, DefaultHeartbeat)
	setDur(&cfg.UpdateTimeout, DefaultUpdateTimeout)
	switch {
	case cfg.MaxRooms < 0 || cfg.MaxConnections < 0 || cfg.MaxPending < 0 || cfg.MaxPendingPerSource < 0 || cfg.ReadRate < 0 || cfg.MaxTicketCache < 0 || cfg.MaxHeaderBytes < 0:
		return nil, errors.New("node: negative limit in config")
	case cfg.HandshakeTimeout < 0 || cfg.IdleTimeout < 0 || cfg.WriteTimeout < 0 || cfg.CloseWait < 0 || cfg.Heartbeat < 0 || cfg.UpdateTimeout < 0:
		return nil, errors.New("node: negative duration in config")
	case cfg.SendQueueDepth < 32:
		return nil, fmt.Errorf("node: SendQueueDepth %d is below 32", cfg.SendQueueDepth)
	case cfg.MaxQueueBytes < maxOutMessage:
		return nil, fmt.Errorf("node: MaxQueueBytes %d is below the largest message (%d)", cfg.MaxQueueBytes, maxOutMessage)
	case cfg.ReadLimit < maxMessage:
		return nil, fmt.Errorf("node: ReadLimit %d is below the largest valid message (%d)", cfg.ReadLimit, maxMessage)
	}
	cfg.ReadBurst = max(cfg.ReadBurst, cfg.ReadLimit+ws.MaxHeaderSize)

	s := &Server{
		cfg:     cfg,
		log:     cfg.Logger,
		tickets: newTicketCache(cfg.MaxTicketCache),
		adm:     newAdmission(cfg.MaxPending, cfg.MaxPendingPerSource),
		conns:   make(map[*conn]struct{}),
		wsURL:   cfg.WSURL,
		started: cfg.Now().UTC(),
	}
	s.records = newRecordQueue(cfg.DB, cfg.UpdateTimeout, cfg.Now, cfg.Logger)
	rc := cfg.Rooms
	rc.Now = cfg.Now
	rc.Logger = cfg.Logger
	rc.SealResume = s.sealResume
	rc.Header = wsHeader
	rc.Observer = s.records
	rc.MaxRooms = cfg.MaxRooms
	s.m = newMetrics(s)
	rc.ObserveTick = s.m.observeTick
	eng, err := rooms.New(rc)
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	s.engine = eng
	if err := s.m.register(cfg.Registerer); err != nil {
		s.m.unregister(cfg.Registerer)
		return nil, fmt.Errorf("node: register metrics: %w", err)
	}
	s.mux = http.NewServeMux()
	s.mux.Handle(Path, s)
	return s, nil
}

// ID returns the node id.
func (s *Server) ID() string { return s.cfg.ID }

// wsHeader writes the header of an unmasked, final, binary WebSocket
// frame of n bytes at the end of h (rooms.Config.Header).
func wsHeader(h []byte, n int) int {
	e := len(h)
	switch {
	case n < 126:
		h[e-2], h[e-1] = 0x82, byte(n)
		return 2
	case n <= 0xFFFF:
		h[e-4], h[e-3], h[e-2], h[e-1] = 0x82, 126, byte(n>>8), byte(n)
		return 4
	}
	h[e-10], h[e-9] = 0x82, 127
	for i := range 8 {
		h[e-1-i] = byte(n >> (8 * i))
	}
	return 10
}

// Start starts what the first [Server.Serve] starts — the room scheduler,
// the record worker, the registry heartbeat and the commands from control
// — and returns its error, so that a caller knows the node is up before it
// serves or reports it ready. Serve calls it; later calls return the first
// call's result. Set [Config.WSURL] when calling Start before Serve.
func (s *Server) Start() error {
	s.startOnce.Do(s.start)
	return s.startErr
}

// Serve accepts WebSocket connections on ln until Shutdown or Close, and
// returns ErrServerClosed then. The first call also starts the room
// scheduler, the record worker, the registry heartbeat and, with a
// Backbone, the commands from control. Serve may be called for several
// listeners. The caller's listener is closed by Shutdown and Close.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrServerClosed
	}
	if s.wsURL == "" {
		s.wsURL = "ws://" + ln.Addr().String() + Path
	}
	hs := &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: s.cfg.HandshakeTimeout,
		MaxHeaderBytes:    s.cfg.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		// The handshake timeout counts from the start of the request,
		// which is the accept: a connection carries one request.
		ConnContext: func(ctx context.Context, _ net.Conn) context.Context {
			return context.WithValue(ctx, acceptedKey{}, time.Now())
		},
		// A connection http.Server closes never got to its handshake.
		ConnState: func(c net.Conn, st http.ConnState) {
			if st == http.StateClosed {
				s.adm.release(c)
			}
		},
	}
	hs.SetKeepAlivesEnabled(false)
	s.servers = append(s.servers, hs)
	s.mu.Unlock()

	if err := s.Start(); err != nil {
		return err
	}
	err := hs.Serve(admitListener{Listener: ln, s: s})
	if errors.Is(err, http.ErrServerClosed) {
		return ErrServerClosed
	}
	return err
}

// start runs the background goroutines.
func (s *Server) start() {
	ctx, cancel := context.WithCancel(context.Background())
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cancel()
		s.startErr = ErrServerClosed
		return
	}
	s.cancel = cancel
	s.bg.Go(func() { _ = s.engine.Run(ctx) })
	s.bg.Go(func() { s.records.run(ctx) })
	s.mu.Unlock()
	if s.cfg.DB != nil {
		// Before the first command: rooms of a previous process with this
		// id are closed, not admitted into empty engine rooms.
		n, err := s.records.takeBack(ctx, s.cfg.ID, func(id string) bool { return s.engine.Room(id) != nil })
		switch {
		case err != nil:
			s.log.Warn("rooms of the previous run not closed; their joins may fail until they expire", "closed", n, "err", err)
		case n > 0:
			s.log.Info("closed the rooms of the previous run of this node", "rooms", n, "reason", store.CloseReasonNodeRestarted)
		}
	}
	if s.cfg.Backbone != nil {
		stop, err := store.ServeCommands(s.cfg.Backbone, s.cfg.ID, commands{s})
		if err != nil {
			s.startErr = fmt.Errorf("node: %w", err)
			return
		}
		s.mu.Lock()
		closed := s.closed
		if !closed {
			s.stopCmds = stop
		}
		s.mu.Unlock()
		if closed { // Close ran meanwhile and found nothing to stop
			_ = stop()
		}
	}
	if s.cfg.DB != nil {
		// Registered once it serves commands.
		s.putNode(ctx)
		// Under mu, so that a Close that began meanwhile is not waiting
		// on bg already.
		s.mu.Lock()
		if !s.closed {
			s.bg.Go(func() { s.heartbeat(ctx) })
			s.bg.Go(func() { s.records.purgeLoop(ctx, s.cfg.ID) })
		}
		s.mu.Unlock()
	}
	s.log.Info("game node serving", "ws_url", s.wsURL)
}

func (s *Server) heartbeat(ctx context.Context) {
	t := time.NewTicker(s.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.putNode(ctx)
		}
	}
}

// putNode writes the registry entry.
func (s *Server) putNode(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Heartbeat)
	defer cancel()
	s.mu.Lock()
	url := s.wsURL
	s.mu.Unlock()
	err := s.cfg.DB.PutNode(ctx, &store.Node{
		NodeID:      s.cfg.ID,
		WSURL:       url,
		UDPAddr:     s.cfg.UDPAddr,
		Region:      s.cfg.Region,
		Rooms:       s.engine.Len(),
		Connections: int(s.nconns.Load()),
		Draining:    s.draining.Load(),
		StartedAt:   s.started,
		Version:     s.cfg.Version,
	})
	switch {
	case err != nil && ctx.Err() == nil:
		// Once when they start failing, then once a minute or so.
		if n := s.hbFailures.Add(1); n == 1 || n%int64(max(time.Minute/s.cfg.Heartbeat, 1)) == 0 {
			s.log.Warn("registry heartbeat failed", "failures", n, "err", err)
		}
	case err == nil:
		if n := s.hbFailures.Swap(0); n > 0 {
			s.log.Info("registry heartbeat written again", "failures", n)
		}
	}
}

// acceptedKey is the context key of the time a connection was accepted.
type acceptedKey struct{}

// ServeHTTP upgrades GET /game/v1/ws to a WebSocket connection offering
// the im.game.v1 subprotocol and serves it until it closes. The handshake
// must arrive within Config.HandshakeTimeout of the start of the request
// (the accept, under Serve).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start, ok := r.Context().Value(acceptedKey{}).(time.Time)
	if !ok {
		start = time.Now()
	}
	deadline := start.Add(s.cfg.HandshakeTimeout)
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if !offers(r.Header.Values("Sec-WebSocket-Protocol"), Subprotocol) {
		http.Error(w, "the WebSocket subprotocol "+Subprotocol+" is required", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	if s.closed || s.shutting { // a draining node still answers handshakes: ERROR 10
		s.mu.Unlock()
		http.Error(w, "node shutting down", http.StatusServiceUnavailable)
		return
	}
	if s.nconns.Add(1) > int64(s.cfg.MaxConnections) {
		s.nconns.Add(-1)
		s.mu.Unlock()
		s.m.refused[refusedMaxConns].Inc()
		http.Error(w, "too many connections", http.StatusServiceUnavailable)
		return
	}
	s.connWG.Add(1) // before Shutdown or Close can wait: they set their flags under mu
	s.mu.Unlock()
	defer s.connWG.Done()
	defer s.nconns.Add(-1)

	wait := time.Until(deadline)
	if wait <= 0 { // the request took the whole handshake time
		http.Error(w, "handshake timeout", http.StatusRequestTimeout)
		return
	}
	up := ws.HTTPUpgrader{
		Timeout:  min(s.cfg.WriteTimeout, wait),
		Protocol: func(p string) bool { return p == Subprotocol },
	}
	nc, rw, _, err := up.Upgrade(r, w)
	if nc != nil { // hijacked: http.Server no longer closes it
		defer s.adm.release(nc)
	}
	if err != nil {
		if nc != nil { // the upgrader answered with an HTTP error
			nc.Close()
		}
		return
	}
	if h := s.upgradeHook.Load(); h != nil {
		(*h)()
	}
	c := newConn(s, nc, rw.Reader, deadline)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		nc.Close()
		return
	}
	s.conns[c] = struct{}{}
	// drain sets draining before it walks s.conns under mu: either it
	// finds c there, or c sees draining here.
	draining := s.draining.Load()
	s.mu.Unlock()
	if draining {
		m := s.engine.ErrorMsg(roomwire.CodeNodeDraining, "", nil)
		c.Close(m)
		m.Release()
	}
	c.serve()
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// offers reports whether a Sec-WebSocket-Protocol header lists p.
func offers(values []string, p string) bool {
	for _, v := range values {
		for tok := range strings.SplitSeq(v, ",") {
			if strings.TrimSpace(tok) == p {
				return true
			}
		}
	}
	return false
}

// drain stops admitting, marks the node draining and sends ERROR 10
// node_draining to every connection.
func (s *Server) drain() {
	if s.draining.Swap(true) {
		return
	}
	s.log.Info("game node draining")
	s.engine.Drain()
	m := s.engine.ErrorMsg(roomwire.CodeNodeDraining, "", nil)
	defer m.Release()
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if !c.bound.Load() {
			c.Close(m)
		}
	}
}

// Shutdown drains the node — ERROR 10 node_draining to every connection,
// no more rooms or admissions, the registry entry marked draining — then
// waits for the connections to close and the record updates to be written,
// and stops everything as Close does. When ctx ends first it closes what is
// left at once and returns ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.shutting = true
	s.mu.Unlock()
	s.drain()
	s.mu.Lock()
	servers := append([]*http.Server(nil), s.servers...)
	s.mu.Unlock()
	if s.cfg.DB != nil {
		s.putNode(ctx)
	}
	var errs []error
	for _, hs := range servers {
		if err := hs.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	done := make(chan struct{})
	go func() {
		s.connWG.Wait()
		close(done)
	}()
	select {
	case <-done:
		if err := s.records.flush(ctx); err != nil {
			errs = append(errs, err)
		}
	case <-ctx.Done():
		errs = append(errs, ctx.Err())
	}
	errs = append(errs, s.Close())
	<-done
	return errors.Join(errs...)
}

// Close closes the listeners and every connection at once, stops the
// commands, the scheduler, the record worker and the heartbeat, waits for
// all of them and removes the node's registry entry. It is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.connWG.Wait()
		s.bg.Wait()
		return nil
	}
	s.closed = true
	servers, stop, cancel := s.servers, s.stopCmds, s.cancel
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()

	var errs []error
	for _, hs := range servers {
		if err := hs.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if stop != nil {
		errs = append(errs, stop())
	}
	for _, c := range conns {
		c.kill(discShutdown)
	}
	s.connWG.Wait()
	if cancel != nil {
		cancel()
	}
	s.bg.Wait()
	if s.cfg.DB != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if err := s.cfg.DB.DeleteNode(ctx, s.cfg.ID); err != nil {
			s.log.Warn("remove registry entry", "err", err)
		}
		cancel()
	}
	s.m.unregister(s.cfg.Registerer)
	return errors.Join(errs...)
}
