package impair

import (
	"errors"
	"fmt"
	"github.com/switchboardgg/switchboard/internal/duequeue"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// A Proxy forwards UDP datagrams between clients and one target with
// impairments. Its methods are safe for concurrent use.
type Proxy struct {
	// immutable after New
	cfg    Config
	target *net.UDPAddr
	log    *slog.Logger
	dirs   [2]dirState
	wake   chan struct{} // buffered 1: the earliest due time changed
	done   chan struct{} // closed by Close

	mu      sync.Mutex
	conn    *net.UDPConn               // guarded by mu: the client-facing socket
	clients map[netip.AddrPort]*client // guarded by mu
	closed  bool                       // guarded by mu
	started bool                       // guarded by mu: the scheduler runs
	rebinds atomic.Uint64

	qmu   sync.Mutex
	queue duequeue.Queue[packet] // guarded by qmu
	free  [][]byte               // guarded by qmu: spare buffers
	bufs  int                    // guarded by qmu: buffers allocated, at most QueueDepth

	wg sync.WaitGroup
}

// dirState is one direction's faults, generator and counters.
type dirState struct {
	mu       sync.Mutex
	faults   Faults     // guarded by mu
	rng      *rand.Rand // guarded by mu
	blackout bool       // guarded by mu

	received, forwarded, lost, duplicated, reordered, blackholed,
	overflowed, oversized, refused, sendErrors atomic.Uint64
}

// client is one client address and its upstream socket.
type client struct {
	addr netip.AddrPort
	up   atomic.Pointer[net.UDPConn]
}

// New checks cfg and returns a Proxy. It starts nothing and opens no
// socket; see [Proxy.Serve]. Errors wrap [ErrInvalidConfig].
func New(cfg Config) (*Proxy, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	target, err := net.ResolveUDPAddr("udp", cfg.Target)
	if err != nil {
		return nil, fmt.Errorf("impair: resolve target %q: %v: %w", cfg.Target, err, ErrInvalidConfig)
	}
	if cfg.Seed == 0 {
		cfg.Seed = rand.Uint64() | 1
	}
	p := &Proxy{
		cfg:     cfg,
		target:  target,
		log:     cfg.Logger,
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		clients: make(map[netip.AddrPort]*client),
	}
	for d, f := range []Faults{cfg.Up, cfg.Down} {
		p.dirs[d].faults = f
		p.dirs[d].rng = rand.New(rand.NewPCG(cfg.Seed, uint64(d)+1))
	}
	return p, nil
}

// Seed returns the seed of the proxy's random decisions.
func (p *Proxy) Seed() uint64 { return p.cfg.Seed }

// SetFaults replaces direction d's faults. Errors wrap
// [ErrInvalidConfig] and leave the faults unchanged.
func (p *Proxy) SetFaults(d Direction, f Faults) error {
	f, err := f.withDefaults()
	if err != nil {
		return err
	}
	ds := &p.dirs[d]
	ds.mu.Lock()
	ds.faults = f
	ds.mu.Unlock()
	return nil
}

// SetBlackout turns a blackout of direction d on or off.
func (p *Proxy) SetBlackout(d Direction, on bool) {
	ds := &p.dirs[d]
	ds.mu.Lock()
	ds.blackout = on
	ds.mu.Unlock()
}

// Stats returns a snapshot of the counters.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	n := len(p.clients)
	p.mu.Unlock()
	s := Stats{Clients: n, Rebinds: p.rebinds.Load()}
	for d, out := range []*DirStats{&s.Up, &s.Down} {
		ds := &p.dirs[d]
		*out = DirStats{
			Received: ds.received.Load(), Forwarded: ds.forwarded.Load(),
			Lost: ds.lost.Load(), Duplicated: ds.duplicated.Load(),
			Reordered: ds.reordered.Load(), Blackholed: ds.blackholed.Load(),
			Overflowed: ds.overflowed.Load(), Oversized: ds.oversized.Load(),
			Refused: ds.refused.Load(), SendErrors: ds.sendErrors.Load(),
		}
	}
	return s
}

// Serve forwards the datagrams that clients send to conn, the proxy's
// client-facing socket (the address clients are pointed at), until
// [Proxy.Close]; then it returns [ErrClosed]. It returns another error
// if reading conn fails. Serve closes conn when it returns. One proxy
// serves one socket at a time ([ErrServing]).
func (p *Proxy) Serve(conn *net.UDPConn) error {
	p.mu.Lock()
	switch {
	case p.closed:
		p.mu.Unlock()
		conn.Close()
		return ErrClosed
	case p.conn != nil:
		p.mu.Unlock()
		return ErrServing
	}
	p.conn = conn
	if !p.started {
		p.started = true
		p.wg.Add(1)
		go p.schedule()
	}
	p.mu.Unlock()
	defer conn.Close()

	ds := &p.dirs[Up]
	buf := make([]byte, p.cfg.MaxDatagram+1)
	for {
		n, from, err := conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if p.isClosed() {
				return ErrClosed
			}
			return fmt.Errorf("impair: read from clients: %w", err)
		}
		ds.received.Add(1)
		if n > p.cfg.MaxDatagram {
			ds.oversized.Add(1)
			continue
		}
		c, err := p.client(from)
		if err != nil {
			ds.refused.Add(1)
			continue
		}
		p.dispatch(Up, c, buf[:n])
	}
}

func (p *Proxy) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

var errTooManyClients = errors.New("impair: too many clients")

// client returns from's client, creating it with its upstream socket
// and reader on its first datagram.
func (p *Proxy) client(from netip.AddrPort) (*client, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.clients[from]; ok {
		return c, nil
	}
	if p.closed {
		return nil, ErrClosed
	}
	if len(p.clients) >= p.cfg.MaxClients {
		return nil, errTooManyClients
	}
	up, err := net.DialUDP("udp", nil, p.target)
	if err != nil {
		p.log.Warn("impair: cannot open an upstream socket", "target", p.target, "err", err)
		return nil, err
	}
	c := &client{addr: from}
	c.up.Store(up)
	p.clients[from] = c
	p.startReaderLocked(c, up)
	p.log.Debug("impair: new client", "client", from, "upstream", up.LocalAddr())
	return c, nil
}

// startReaderLocked reads what the target sends to up for client c.
func (p *Proxy) startReaderLocked(c *client, up *net.UDPConn) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		ds := &p.dirs[Down]
		buf := make([]byte, p.cfg.MaxDatagram+1)
		for {
			n, err := up.Read(buf)
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue // e.g. ICMP port unreachable from the target
			}
			ds.received.Add(1)
			if n > p.cfg.MaxDatagram {
				ds.oversized.Add(1)
				continue
			}
			p.dispatch(Down, c, buf[:n])
		}
	}()
}

// Rebind gives every client a new upstream socket on a new port, as a
// NAT that remaps: the target sees their next datagrams from a new
// address; the old sockets are closed, so answers to them are lost. It
// returns [ErrClosed] on a closed proxy, or the error of opening a
// socket (clients rebound before it keep their new socket).
func (p *Proxy) Rebind() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	for _, c := range p.clients {
		up, err := net.DialUDP("udp", nil, p.target)
		if err != nil {
			return fmt.Errorf("impair: rebind %s: %w", c.addr, err)
		}
		old := c.up.Swap(up)
		old.Close()
		p.startReaderLocked(c, up)
		p.log.Debug("impair: rebound", "client", c.addr, "from", old.LocalAddr(), "to", up.LocalAddr())
	}
	p.rebinds.Add(1)
	return nil
}

// dispatch applies direction d's faults to one datagram and sends it or
// queues its copies. b is the reader's buffer: it is copied if queued.
func (p *Proxy) dispatch(d Direction, c *client, b []byte) {
	ds := &p.dirs[d]
	var delays [2]time.Duration
	ds.mu.Lock()
	f := ds.faults
	switch {
	case ds.blackout:
		ds.mu.Unlock()
		ds.blackholed.Add(1)
		return
	case f.Loss > 0 && ds.rng.Float64() < f.Loss:
		ds.mu.Unlock()
		ds.lost.Add(1)
		return
	}
	copies := 1
	if f.Duplicate > 0 && ds.rng.Float64() < f.Duplicate {
		copies = 2
		ds.duplicated.Add(1)
	}
	for i := range copies {
		delays[i] = f.Delay
		if f.Jitter > 0 {
			delays[i] += time.Duration(ds.rng.Int64N(int64(f.Jitter)))
		}
		if f.Reorder > 0 && ds.rng.Float64() < f.Reorder {
			delays[i] += f.ReorderDelay
			ds.reordered.Add(1)
		}
	}
	ds.mu.Unlock()

	now := time.Now()
	for i := range copies {
		if delays[i] == 0 {
			p.send(d, c, b)
		} else {
			p.enqueue(d, c, b, now.Add(delays[i]))
		}
	}
}

// send writes b on direction d's socket for client c.
func (p *Proxy) send(d Direction, c *client, b []byte) {
	var err error
	if d == Up {
		_, err = c.up.Load().Write(b)
	} else {
		p.mu.Lock()
		conn := p.conn
		p.mu.Unlock()
		if conn == nil {
			return
		}
		_, err = conn.WriteToUDPAddrPort(b, c.addr)
	}
	if err != nil {
		p.dirs[d].sendErrors.Add(1)
		return
	}
	p.dirs[d].forwarded.Add(1)
}

// enqueue copies b into a free buffer and queues it until due.
func (p *Proxy) enqueue(d Direction, c *client, b []byte, due time.Time) {
	p.qmu.Lock()
	var buf []byte
	switch {
	case len(p.free) > 0:
		buf = p.free[len(p.free)-1]
		p.free = p.free[:len(p.free)-1]
	case p.bufs < p.cfg.QueueDepth:
		buf = make([]byte, p.cfg.MaxDatagram)
		p.bufs++
	default:
		p.qmu.Unlock()
		p.dirs[d].overflowed.Add(1)
		return
	}
	first := p.queue.Len() == 0 || due.Before(p.queue.Top().Due)
	p.queue.Push(due, packet{dir: d, c: c, buf: buf, n: copy(buf, b)})
	p.qmu.Unlock()
	if first {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}

// schedule sends queued datagrams when they are due.
func (p *Proxy) schedule() {
	defer p.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var batch []duequeue.Item[packet]
	for {
		p.qmu.Lock()
		now := time.Now()
		batch = batch[:0]
		for p.queue.Len() > 0 && !p.queue.Top().Due.After(now) {
			batch = append(batch, p.queue.Pop())
		}
		wait := time.Hour
		if p.queue.Len() > 0 {
			wait = p.queue.Top().Due.Sub(now)
		}
		p.qmu.Unlock()

		for i := range batch {
			it := &batch[i]
			p.send(it.Value.dir, it.Value.c, it.Value.buf[:it.Value.n])
		}
		if len(batch) > 0 {
			p.qmu.Lock()
			for i := range batch {
				p.free = append(p.free, batch[i].Value.buf)
				batch[i] = duequeue.Item[packet]{}
			}
			p.qmu.Unlock()
		}
		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-p.wake:
		case <-p.done:
			return
		}
	}
}

// Close closes the client-facing socket and every upstream socket,
// drops queued datagrams and joins every goroutine. It is idempotent
// and returns nil.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	if p.conn != nil {
		p.conn.Close()
	}
	for _, c := range p.clients {
		c.up.Load().Close()
	}
	close(p.done)
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}
