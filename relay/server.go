package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboardgg/switchboard/internal/udpio"
	"github.com/switchboardgg/switchboard/protocol/relaywire"
)

// Server is a relay node's data plane. Create it with [New], then give it
// sockets with ServePacket (UDP) and Serve (WebSocket); one allocation is
// reachable over every carrier at once.
type Server struct {
	// immutable after New
	cfg Config
	log *slog.Logger
	m   *metrics

	// lock-free maps: unrelated allocations share no lock
	allocs    sync.Map // relaywire.AllocationID → *allocation
	byAddr    sync.Map // endpoint → *allocation, for the bare CLOSE
	released  sync.Map // relaywire.AllocationID → time.Time (its blob's expiry)
	nAllocs   atomic.Int64
	nReleased atomic.Int64

	done      chan struct{} // closed by Close
	closeOnce sync.Once
	sweepOnce sync.Once
	wg        sync.WaitGroup

	mu       sync.Mutex // guards below
	closed   bool
	shutting bool // Shutdown began: no new WebSocket connections
	pcs      map[net.PacketConn]struct{}
	lns      map[net.Listener]struct{}
	wsConns  map[*wsConn]struct{}
	wsByIP   map[netip.Addr]int // WebSocket connections per handshakeSource

	dtls dtlsTable // DTLS connections and handshakes; its own lock

	// pskLen, when not 0, truncates DTLS pre-shared keys to this many
	// bytes; set by export_test.go only, before serving (stock mbed TLS
	// caps PSKs at 32 bytes).
	pskLen int
}

// New checks cfg and returns a server; it starts no goroutines. It fails
// with an error wrapping ErrConfig when Keys, NodeID or BootEpoch is
// missing or a limit is negative or out of range, and when metrics cannot
// be registered.
func New(cfg Config) (*Server, error) {
	cfg.fill()
	switch {
	case cfg.Keys == nil:
		return nil, fmt.Errorf("relay: no relay keys: %w", ErrConfig)
	case cfg.NodeID == "":
		return nil, fmt.Errorf("relay: no node id: %w", ErrConfig)
	case cfg.BootEpoch == 0:
		return nil, fmt.Errorf("relay: boot epoch 0: %w", ErrConfig)
	case cfg.MaxDatagram < relaywire.RelayHeaderSize || cfg.MaxDatagram > relaywire.MaxMessageSize:
		return nil, fmt.Errorf("relay: max datagram %d out of [%d, %d]: %w", cfg.MaxDatagram, relaywire.RelayHeaderSize, relaywire.MaxMessageSize, ErrConfig)
	case cfg.IdleTimeout < 0 || cfg.HostAloneTimeout < 0 || cfg.BindTimeout < 0 || cfg.SweepInterval < 0 ||
		cfg.WSHandshakeTimeout < 0 || cfg.WSIdleTimeout < 0 || cfg.WSWriteTimeout < 0 ||
		cfg.DTLSHandshakeTimeout < 0 || cfg.DTLSCookieTimeout < 0 || cfg.DTLSIdleTimeout < 0:
		return nil, fmt.Errorf("relay: negative timeout: %w", ErrConfig)
	case cfg.MaxAllocations < 0 || cfg.MaxReleased < 0 || cfg.MaxPeers < 0 || cfg.AllocationRate < 0 ||
		cfg.SourceRate < 0 || cfg.SourceBurst < 0 || cfg.SubscribeRate < 0 || cfg.SubscribeBurst < 0 || cfg.WSSendQueue < 0 || cfg.MaxWSConns < 0 || cfg.MaxWSConnsPerIP < 0 || cfg.Batch < 0 ||
		cfg.MaxDTLSConns < 0 || cfg.MaxDTLSHandshakes < 0 || cfg.MaxDTLSHandshakesPerIP < 0 || cfg.DTLSQueue < 0 ||
		cfg.MaxDTLSConnsPerAllocation < 0:
		return nil, fmt.Errorf("relay: negative limit: %w", ErrConfig)
	case cfg.AllocationBurst < cfg.MaxDatagram:
		return nil, fmt.Errorf("relay: allocation burst %d under the max datagram %d: %w", cfg.AllocationBurst, cfg.MaxDatagram, ErrConfig)
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Server{
		cfg:     cfg,
		log:     cfg.Logger.With("node", cfg.NodeID),
		m:       m,
		done:    make(chan struct{}),
		pcs:     make(map[net.PacketConn]struct{}),
		lns:     make(map[net.Listener]struct{}),
		wsConns: make(map[*wsConn]struct{}),
		wsByIP:  make(map[netip.Addr]int),
	}, nil
}

// track registers a socket; it reports false once the server is closed.
func (s *Server) track(pc net.PacketConn, ln net.Listener) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if pc != nil {
		s.pcs[pc] = struct{}{}
	}
	if ln != nil {
		s.lns[ln] = struct{}{}
	}
	s.sweepOnce.Do(func() {
		s.wg.Add(1)
		go s.sweepLoop()
	})
	return true
}

// Close closes every socket given to the server and every WebSocket
// connection at once, and waits for the server's goroutines. ServePacket
// and Serve then return ErrServerClosed. It is idempotent.
func (s *Server) Close() error {
	var errs []error
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		close(s.done)
		for pc := range s.pcs {
			if err := pc.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
				errs = append(errs, err)
			}
		}
		for ln := range s.lns {
			if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
				errs = append(errs, err)
			}
		}
		for c := range s.wsConns {
			c.nc.Close()
		}
		s.mu.Unlock()
		s.dtlsStopAll() // outside s.mu: dispatch takes the table's lock, then s.mu
	})
	s.wg.Wait()
	return errors.Join(errs...)
}

// Shutdown stops accepting WebSocket connections, sends every open one a
// close frame (1001, going away), waits for them to end or ctx to be done,
// then closes everything as Close does. UDP has nothing to drain: a client
// learns of a node's end from its silence, as from a crash.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.shutting = true
	for ln := range s.lns {
		ln.Close()
	}
	conns := make([]*wsConn, 0, len(s.wsConns))
	for c := range s.wsConns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.goAway()
	}
	s.dtlsStopAll() // each sends close_notify
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		s.mu.Lock()
		n := len(s.wsConns)
		s.mu.Unlock()
		if n == 0 {
			return s.Close()
		}
		select {
		case <-ctx.Done():
			s.Close()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// ServePacket serves relay messages and QoS probes arriving on pc until
// pc fails or the server closes, then returns ErrServerClosed (or the
// read error). The server closes pc on Close.
func (s *Server) ServePacket(pc net.PacketConn) error {
	if !s.track(pc, nil) {
		return ErrServerClosed
	}
	u := &udpCarrier{s: s, pc: pc}
	w := s.newWorker(newSourceTable(4096, &s.cfg))
	uc, ok := pc.(*net.UDPConn)
	if !ok {
		return u.readLoop(w)
	}
	u.uc = uc
	io, err := udpio.New(uc, udpio.Config{Batch: s.cfg.Batch, ReadBuffer: s.cfg.ReadBuffer, WriteBuffer: s.cfg.WriteBuffer})
	if err != nil {
		select {
		case <-s.done: // Close came first and closed pc
			return ErrServerClosed
		default:
		}
		return fmt.Errorf("relay: %w", err)
	}
	if r, wr := io.Buffers(); r > 0 && s.cfg.ReadBuffer > 0 && (r < s.cfg.ReadBuffer || wr < s.cfg.WriteBuffer) {
		s.log.Warn("relay: the kernel capped the UDP socket buffers; raise net.core.rmem_max and wmem_max (docs/configuration.md)",
			"read_bytes", r, "write_bytes", wr, "asked_read_bytes", s.cfg.ReadBuffer, "asked_write_bytes", s.cfg.WriteBuffer)
	}
	u.io = io
	w.udp = u
	w.outbox = make([]udpio.Message, 0, io.Batch())
	w.small = make([][64]byte, io.Batch())
	return u.batchLoop(w)
}

// batchLoop reads datagrams a batch at a time, handles them, then sends
// what they produced for this socket in one batch.
func (u *udpCarrier) batchLoop(w *worker) error {
	ms := make([]udpio.Message, u.io.Batch())
	for i := range ms {
		// One byte over the largest accepted message: a longer datagram
		// is truncated to a length that handle drops as too large.
		ms[i].Buf = make([]byte, max(u.s.cfg.MaxDatagram, qosMaxRequest)+1)
	}
	for {
		n, err := u.io.ReadBatch(ms)
		if err != nil {
			select {
			case <-u.s.done:
				return ErrServerClosed
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("relay: reading UDP: %w", err)
		}
		for i := range ms[:n] {
			b := ms[i].Buf[:ms[i].N]
			if len(b) > 0 && b[0] == qosRequestMagic {
				u.s.qos(u, ms[i].Addr, b, w)
				continue
			}
			w.handle(endpoint{c: u, ap: ms[i].Addr}, b)
		}
		w.flush()
	}
}

// udpCarrier is one UDP socket.
type udpCarrier struct {
	s  *Server
	pc net.PacketConn
	uc *net.UDPConn // pc when it is one: reads and writes without allocating
	io *udpio.Conn  // batched I/O on uc; its writes belong to the reader
}

func (u *udpCarrier) kind() string { return "udp" }

func (u *udpCarrier) send(ap netip.AddrPort, b []byte) bool {
	var err error
	if u.uc != nil {
		_, err = u.uc.WriteToUDPAddrPort(b, ap)
	} else {
		_, err = u.pc.WriteTo(b, net.UDPAddrFromAddrPort(ap))
	}
	return err == nil
}

func (u *udpCarrier) readLoop(w *worker) error {
	buf := make([]byte, 65536)
	for {
		var (
			n   int
			ap  netip.AddrPort
			err error
		)
		if u.uc != nil {
			n, ap, err = u.uc.ReadFromUDPAddrPort(buf)
		} else {
			var a net.Addr
			n, a, err = u.pc.ReadFrom(buf)
			if ua, ok := a.(*net.UDPAddr); ok {
				ap = ua.AddrPort()
			}
		}
		if err != nil {
			select {
			case <-u.s.done:
				return ErrServerClosed
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("relay: reading UDP: %w", err)
		}
		if n > 0 && buf[0] == qosRequestMagic {
			u.s.qos(u, ap, buf[:n], w)
			continue
		}
		w.handle(endpoint{c: u, ap: ap}, buf[:n])
	}
}

func (s *Server) sweepLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
			s.sweep(s.cfg.Now())
		}
	}
}

// sweep releases the allocations idle past their timeout or past their
// blob's expiry, and forgets released ids whose blobs expired.
func (s *Server) sweep(now time.Time) {
	nano := now.UnixNano()
	s.allocs.Range(func(_, v any) bool {
		a := v.(*allocation)
		switch {
		case !now.Before(a.expires):
			s.release(a, ReleaseExpired)
		case nano-a.lastSeen.Load() > int64(a.ttl(&s.cfg)):
			s.release(a, ReleaseTimeout)
		}
		return true
	})
	s.released.Range(func(k, v any) bool {
		if !now.Before(v.(time.Time)) {
			s.released.Delete(k)
			s.nReleased.Add(-1)
		}
		return true
	})
}

// release ends an allocation: it forgets its address, remembers its id
// until its blob expires, disconnects its peers (a host's joiners are
// released with it; a joiner's host is told with a DISCONNECT) and reports
// the release through Config.OnRelease (a host's before its joiners').
func (s *Server) release(a *allocation, reason ReleaseReason) {
	a.mu.Lock()
	if a.released {
		a.mu.Unlock()
		return
	}
	a.released = true
	peers := make([]*allocation, 0, len(a.peers))
	for _, p := range a.peers {
		peers = append(peers, p)
	}
	clear(a.peers)
	a.npeers.Store(0)
	a.mu.Unlock()

	s.released.Store(a.id, a.expires)
	s.nReleased.Add(1)
	s.allocs.Delete(a.id)
	ep := a.ep.Load()
	if ep != nil {
		s.byAddr.CompareAndDelete(*ep, a)
	}
	s.nAllocs.Add(-1)
	s.m.allocations.Dec()
	s.m.releases.WithLabelValues(string(reason)).Inc()

	s.log.Debug("relay: allocation released", "allocation", a.id, "host", a.isHost, "reason", reason)
	if s.cfg.OnRelease != nil {
		s.cfg.OnRelease(Release{AllocationID: a.id, Host: a.isHost, Reason: reason})
	}

	var out [relaywire.DisconnectSize]byte
	for _, p := range peers {
		if !a.isHost && !s.unlink(p, a.id) {
			continue // the host is going too
		}
		// Tell the peer that a is gone (UTP closes its connection with a).
		d := relaywire.Disconnect{From: a.id, To: p.id}
		b, _ := d.AppendTo(out[:0])
		if pep := p.ep.Load(); pep != nil {
			s.send(*pep, b)
		}
		if a.isHost {
			s.release(p, ReleaseHostGone)
		}
	}
	if reason == ReleaseTimeout && ep != nil {
		// ERROR 1: UTP takes it as fatal and asks for a new allocation.
		e := relaywire.Error{AllocationID: a.id, Code: relaywire.CodeTimedOut}
		b, _ := e.AppendTo(out[:0])
		s.send(*ep, b)
	}
	dtlsReleased(ep) // a DTLS connection serves one allocation
}

// unlink removes id from p's peers, taking p's lock, and reports whether
// p is still live.
func (s *Server) unlink(p *allocation, id relaywire.AllocationID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.peers[id]; ok {
		delete(p.peers, id)
		p.npeers.Add(-1)
		if p.isHost && p.subscribed.Load() && !p.released {
			s.peerEvent(p, relaywire.PeerDisconnected, id)
		}
	}
	return !p.released
}

// peerEvent sends host a PEER_EVENT. The caller holds host.mu, so that
// the events of one host leave in the order of the changes.
func (s *Server) peerEvent(host *allocation, ev relaywire.PeerEventKind, peer relaywire.AllocationID) {
	ep := host.ep.Load()
	if ep == nil {
		return
	}
	var out [relaywire.PeerEventSize]byte
	m := relaywire.PeerEvent{Event: ev, Peer: peer}
	b, _ := m.AppendTo(out[:0])
	s.send(*ep, b)
}

// send sends b to ep and counts it.
func (s *Server) send(ep endpoint, b []byte) {
	if ep.c.send(ep.ap, b) {
		s.m.packetsOut.Inc()
		s.m.bytesOut.Add(float64(len(b)))
	} else {
		s.m.drops[dropSendFailed].Inc()
	}
}

func (s *Server) lookup(id relaywire.AllocationID) *allocation {
	v, ok := s.allocs.Load(id)
	if !ok {
		return nil
	}
	return v.(*allocation)
}

// Allocation returns the counters of a live allocation, and false when
// this node has no such allocation.
func (s *Server) Allocation(id [16]byte) (AllocationStats, bool) {
	a := s.lookup(id)
	if a == nil {
		return AllocationStats{}, false
	}
	st := AllocationStats{
		Host:       a.isHost,
		Peers:      int(a.npeers.Load()),
		Created:    a.created,
		PacketsIn:  a.packetsIn.Load(),
		BytesIn:    a.bytesIn.Load(),
		PacketsOut: a.packetsOut.Load(),
		BytesOut:   a.bytesOut.Load(),
	}
	if ep := a.ep.Load(); ep != nil {
		st.Carrier = ep.c.kind()
	}
	return st, true
}

// Allocations returns the number of live allocations.
func (s *Server) Allocations() int { return int(s.nAllocs.Load()) }
