package rooms

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/switchboardgg/switchboard/internal/kcploop"
	"github.com/switchboardgg/switchboard/internal/sealed"
	"github.com/switchboardgg/switchboard/internal/udpio"
	"github.com/switchboardgg/switchboard/protocol/roomudp"
)

// Defaults and limits of [UDPSocket].
const (
	// DefaultUDPBatch is the most datagrams one read or write system call
	// moves.
	DefaultUDPBatch = 32
	// DefaultUDPWriteQueueBytes caps the datagrams waiting for the socket's
	// writer; beyond it datagrams are dropped (KCP resends what matters).
	DefaultUDPWriteQueueBytes = 4 << 20
	// DefaultUDPReadBuffer is the socket receive buffer asked for.
	DefaultUDPReadBuffer = 1 << 20
	// udpReadBuffer is each read buffer: any datagram anyone accepts fits.
	udpReadBuffer = roomudp.MaxDatagram + 1
)

// UDPSocketConfig configures a [UDPSocket]. Its zero value works.
type UDPSocketConfig struct {
	// Listen is the local address, "host:port". Empty means ":0" (every
	// address, a free port; dual-stack where the system has it).
	Listen string
	// Redirect, when set, returns the address the datagrams for the node
	// at node (its connect.udp) go to instead: an impairment proxy in
	// front of it, in tests and benchmarks. It is called once per
	// handshake. Nil sends to the node itself.
	Redirect func(node netip.AddrPort) netip.AddrPort
	// Batch is the most datagrams per read or write system call. Zero
	// means DefaultUDPBatch; at most udpio.MaxBatch.
	Batch int
	// WriteQueueBytes caps the bytes waiting for the writer. Zero means
	// DefaultUDPWriteQueueBytes.
	WriteQueueBytes int
	// ReadBuffer is the socket receive buffer asked for, in bytes (the
	// system caps it: net.core.rmem_max on Linux). Zero means
	// DefaultUDPReadBuffer. A socket that many connections share needs
	// more: what arrives while its reader waits for a CPU is dropped
	// beyond it.
	ReadBuffer int
	// Logger receives the socket's rare events. Nil means slog.Default().
	Logger *slog.Logger
}

// UDPSocket is a UDP socket that carries the UDP connections of any number
// of [Room] values, with batched reads and writes (recvmmsg and sendmmsg on
// Linux) and one KCP timer loop for all of them: what a load generator
// needs so that thousands of bots cost a few goroutines. A Room given no
// UDPSocket (Config.UDPSocket) opens one of its own per connection.
//
// It runs three goroutines (reader, writer, KCP loop) from
// [NewUDPSocket] until [UDPSocket.Close], which joins them and closes the
// socket; close it after the Rooms that use it.
type UDPSocket struct {
	// immutable after NewUDPSocket
	uc    *net.UDPConn
	io    *udpio.Conn
	loop  *kcploop.Loop
	log   *slog.Logger
	via   func(netip.AddrPort) netip.AddrPort // nil: none
	maxQ  int
	stop  context.CancelFunc
	wg    sync.WaitGroup
	wake  chan struct{} // capacity 1: the write queue has datagrams
	batch int

	dropped atomic.Uint64 // datagrams dropped: unknown sender, not opening, queue full

	mu      sync.Mutex
	routes  map[routeKey]*udpConn        // guarded by mu: live sessions by (node, conv)
	pending map[netip.AddrPort][]*hsWait // guarded by mu: handshakes waiting for a reply
	closed  bool                         // guarded by mu
	out     []byte                       // guarded by mu: queued datagrams, back to back
	outMsgs []outMsg                     // guarded by mu
}

// routeKey names a session: the node's address and the conversation.
type routeKey struct {
	addr netip.AddrPort
	conv uint32
}

// outMsg is one queued datagram: out[start:end] to addr.
type outMsg struct {
	start, end int
	addr       netip.AddrPort
}

// hsWait is one handshake waiting for its reply.
type hsWait struct {
	opener *sealed.Opener
	reply  chan []byte // capacity 1: the opened reply payload, owned
}

// NewUDPSocket opens a socket and starts its goroutines.
func NewUDPSocket(cfg UDPSocketConfig) (*UDPSocket, error) {
	if cfg.Listen == "" {
		cfg.Listen = ":0"
	}
	setInt(&cfg.Batch, DefaultUDPBatch)
	setInt(&cfg.WriteQueueBytes, DefaultUDPWriteQueueBytes)
	setInt(&cfg.ReadBuffer, DefaultUDPReadBuffer)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &UDPSocket{
		log: cfg.Logger, maxQ: cfg.WriteQueueBytes, batch: cfg.Batch, via: cfg.Redirect,
		wake:    make(chan struct{}, 1),
		routes:  make(map[routeKey]*udpConn),
		pending: make(map[netip.AddrPort][]*hsWait),
	}
	la, err := net.ResolveUDPAddr("udp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("udp socket: %w", err)
	}
	if s.uc, err = net.ListenUDP("udp", la); err != nil {
		return nil, fmt.Errorf("udp socket: %w", err)
	}
	if s.io, err = udpio.New(s.uc, udpio.Config{Batch: cfg.Batch, ReadBuffer: cfg.ReadBuffer, WriteBuffer: 1 << 20}); err != nil {
		s.uc.Close()
		return nil, fmt.Errorf("udp socket: %w", err)
	}
	if s.loop, err = kcploop.New(kcploop.Config{Logger: cfg.Logger}); err != nil {
		s.uc.Close()
		return nil, fmt.Errorf("udp socket: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	s.stop = stop
	s.wg.Add(3)
	go func() { defer s.wg.Done(); _ = s.loop.Run(ctx) }()
	go s.readLoop()
	go s.writeLoop(ctx)
	return s, nil
}

// LocalAddr returns the socket's local address.
func (s *UDPSocket) LocalAddr() net.Addr { return s.uc.LocalAddr() }

// Dropped returns how many datagrams the socket dropped: from an unknown
// sender or session, not authenticating, or finding the write queue full.
func (s *UDPSocket) Dropped() uint64 { return s.dropped.Load() }

// Close stops the goroutines and closes the socket. Sessions still on it
// die with their next read. It is idempotent.
func (s *UDPSocket) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.stop()
	s.loop.Close()
	err := s.uc.Close()
	s.wg.Wait()
	return err
}

// resolveUDP resolves "host:port" to one address.
func resolveUDP(hostport string) (netip.AddrPort, error) {
	if a, err := netip.ParseAddrPort(hostport); err == nil {
		return a, nil
	}
	ua, err := net.ResolveUDPAddr("udp", hostport)
	if err != nil {
		return netip.AddrPort{}, err
	}
	return ua.AddrPort(), nil
}

// target returns where datagrams for a node at addr go.
func (s *UDPSocket) target(addr netip.AddrPort) netip.AddrPort {
	if s.via != nil {
		addr = s.via(addr)
	}
	return netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())
}

// queue copies datagram b into the write queue for addr; it drops it
// when the queue is full or the socket closed. It never blocks.
func (s *UDPSocket) queue(addr netip.AddrPort, b []byte) {
	s.mu.Lock()
	if s.closed || len(s.out)+len(b) > s.maxQ {
		s.mu.Unlock()
		s.dropped.Add(1)
		return
	}
	start := len(s.out)
	s.out = append(s.out, b...)
	s.outMsgs = append(s.outMsgs, outMsg{start: start, end: len(s.out), addr: addr})
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// writeLoop is the writer goroutine: it swaps the queue out and writes it
// in batches.
func (s *UDPSocket) writeLoop(ctx context.Context) {
	defer s.wg.Done()
	var buf []byte
	var msgs []outMsg
	ms := make([]udpio.Message, 0, s.batch)
	for {
		select {
		case <-s.wake:
		case <-ctx.Done():
			return
		}
		s.mu.Lock()
		buf, s.out = s.out, buf[:0]
		msgs, s.outMsgs = s.outMsgs, msgs[:0]
		s.mu.Unlock()
		for i := 0; i < len(msgs); i += s.batch {
			ms = ms[:0]
			for _, m := range msgs[i:min(len(msgs), i+s.batch)] {
				ms = append(ms, udpio.Message{Buf: buf[m.start:m.end], Addr: m.addr})
			}
			if _, err := s.io.WriteBatch(ms); err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				s.dropped.Add(uint64(len(ms)))
			}
		}
		if cap(buf) > s.maxQ { // keep no more than the cap between bursts
			buf = nil
		}
	}
}

// readLoop is the reader goroutine: it reads batches and hands each
// datagram to its session or waiting handshake.
func (s *UDPSocket) readLoop() {
	defer s.wg.Done()
	ms := make([]udpio.Message, s.batch)
	for i := range ms {
		ms[i].Buf = make([]byte, udpReadBuffer)
	}
	for {
		n, err := s.io.ReadBatch(ms)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				s.closeAll()
				return
			}
			continue // e.g. ICMP port unreachable surfacing as a read error
		}
		for i := range ms[:n] {
			m := &ms[i]
			if m.N > roomudp.MaxDatagram {
				s.dropped.Add(1)
				continue
			}
			s.dispatch(netip.AddrPortFrom(m.Addr.Addr().Unmap(), m.Addr.Port()), m.Buf[:m.N])
		}
	}
}

// dispatch hands one datagram from addr to its session, or to the
// handshake whose opener opens it.
func (s *UDPSocket) dispatch(addr netip.AddrPort, b []byte) {
	h, err := sealed.ParseHeader(b)
	if err != nil {
		s.dropped.Add(1)
		return
	}
	s.mu.Lock()
	if h.KeyID == roomudp.HandshakeKeyID {
		waits := s.pending[addr]
		s.mu.Unlock()
		for _, w := range waits {
			if p, _, err := w.opener.Open(nil, b); err == nil {
				select {
				case w.reply <- p:
				default:
				}
				return
			}
		}
		s.dropped.Add(1)
		return
	}
	c := s.routes[routeKey{addr, h.KeyID}]
	s.mu.Unlock()
	if c == nil || !c.input(b) {
		s.dropped.Add(1)
	}
}

// closeAll kills every session after the socket closed.
func (s *UDPSocket) closeAll() {
	s.mu.Lock()
	cs := make([]*udpConn, 0, len(s.routes))
	for _, c := range s.routes {
		cs = append(cs, c)
	}
	s.mu.Unlock()
	for _, c := range cs {
		c.kill(fmt.Errorf("read: %w", net.ErrClosed))
	}
}

// waitReply registers a handshake waiting for a reply from addr; the
// returned func unregisters it.
func (s *UDPSocket) waitReply(addr netip.AddrPort, w *hsWait) (func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, net.ErrClosed
	}
	s.pending[addr] = append(s.pending[addr], w)
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		ws := s.pending[addr]
		for i, x := range ws {
			if x == w {
				ws = append(ws[:i], ws[i+1:]...)
				break
			}
		}
		if len(ws) == 0 {
			delete(s.pending, addr)
		} else {
			s.pending[addr] = ws
		}
	}, nil
}

// addRoute makes c the session of (addr, conv); false when another holds it.
func (s *UDPSocket) addRoute(addr netip.AddrPort, conv uint32, c *udpConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := routeKey{addr, conv}
	if s.closed || s.routes[k] != nil {
		return false
	}
	s.routes[k] = c
	return true
}

// removeRoute forgets c.
func (s *UDPSocket) removeRoute(addr netip.AddrPort, conv uint32, c *udpConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k := (routeKey{addr, conv}); s.routes[k] == c {
		delete(s.routes, k)
	}
}
