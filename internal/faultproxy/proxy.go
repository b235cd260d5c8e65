package faultproxy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Direction says which way bytes flow through a connection. It is a bit set.
type Direction uint8

// The directions of a proxied connection.
const (
	Up   Direction = 1 << iota // client → target
	Down                       // target → client
	Both = Up | Down
)

// Stats are a [Proxy]'s counters since [New].
type Stats struct {
	Connections  int64 // client connections admitted
	Active       int64 // admitted connections not yet closed
	Rejected     int64 // client connections closed on accept: over Config.MaxConns
	Refused      int64 // client connections closed on accept during a blackout
	DialFailures int64 // admitted connections whose dial to Target failed
	Severed      int64 // connections cut by a random fault or [Proxy.SeverAll]
	Stalled      int64 // stalls started, random or by [Proxy.StallAll]
	Delayed      int64 // chunks forwarded with an added delay
	BytesUp      int64 // bytes written to Target
	BytesDown    int64 // bytes written to clients
}

// Proxy forwards TCP connections to Config.Target and injects faults. Its
// methods are safe for concurrent use.
type Proxy struct {
	// immutable after New
	cfg    Config
	seed   int64
	log    *slog.Logger
	ctx    context.Context // canceled by Close
	cancel context.CancelFunc

	faults  atomic.Pointer[Faults]
	enabled atomic.Bool

	connections, rejected, refused, dialFailures atomic.Int64
	severed, stalled, delayed, up, down          atomic.Int64

	wg sync.WaitGroup // Serve's scheduler and one per connection; Add under mu

	mu       sync.Mutex // guards the fields below
	closed   bool
	blackout bool // SetBlackout: new connections are closed on accept
	started  bool // the fault scheduler runs
	nextID   uint64
	lns      map[net.Listener]struct{}
	conns    map[uint64]*conn
}

// New returns a proxy for cfg with faults enabled. It starts no
// goroutines. It returns an error wrapping [ErrInvalidConfig] when cfg is
// invalid.
func New(cfg Config) (*Proxy, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	p := &Proxy{cfg: cfg, seed: cfg.Seed, log: cfg.Logger,
		lns: make(map[net.Listener]struct{}), conns: make(map[uint64]*conn)}
	if p.seed == 0 {
		p.seed = rand.Int64N(math.MaxInt64) + 1
	}
	f := cfg.Faults
	p.faults.Store(&f)
	p.enabled.Store(true)
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p, nil
}

// Seed returns the seed in use: Config.Seed, or the random one picked when
// it was zero. Log it to replay a run.
func (p *Proxy) Seed() int64 { return p.seed }

// Serve accepts connections on ln and proxies each to Config.Target until
// [Proxy.Close]; then it returns [ErrServerClosed]. Any other accept error
// is returned wrapped. Serve closes ln when it returns. It may be called
// for several listeners at once.
func (p *Proxy) Serve(ln net.Listener) error {
	defer ln.Close()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrServerClosed
	}
	p.lns[ln] = struct{}{}
	if !p.started {
		p.started = true
		p.wg.Add(1)
		go p.schedule()
	}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.lns, ln)
		p.mu.Unlock()
	}()
	p.log.Debug("faultproxy: serving", "addr", ln.Addr().String(), "target", p.cfg.Target, "seed", p.seed)
	backoff := time.Duration(0)
	for {
		c, err := ln.Accept()
		if err != nil {
			if p.ctx.Err() != nil {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				select {
				case <-time.After(backoff):
					continue
				case <-p.ctx.Done():
					return ErrServerClosed
				}
			}
			return fmt.Errorf("faultproxy: accept: %w", err)
		}
		backoff = 0
		p.admit(c)
	}
}

func (p *Proxy) admit(client net.Conn) {
	p.mu.Lock()
	if p.closed || p.blackout || len(p.conns) >= p.cfg.MaxConns {
		switch {
		case p.closed:
		case p.blackout:
			p.refused.Add(1)
		default:
			p.rejected.Add(1)
		}
		p.mu.Unlock()
		client.Close()
		return
	}
	p.nextID++
	c := newConn(p, p.nextID, client)
	p.conns[c.id] = c
	p.wg.Add(1)
	p.mu.Unlock()
	p.connections.Add(1)
	go c.run()
}

func (p *Proxy) remove(c *conn) {
	p.mu.Lock()
	delete(p.conns, c.id)
	p.mu.Unlock()
}

// live returns the open connections in the order they were admitted.
func (p *Proxy) live() []*conn {
	p.mu.Lock()
	cs := make([]*conn, 0, len(p.conns))
	for _, c := range p.conns {
		cs = append(cs, c)
	}
	p.mu.Unlock()
	slices.SortFunc(cs, func(a, b *conn) int { return cmp.Compare(a.id, b.id) })
	return cs
}

// Close closes every listener passed to Serve and every proxied connection
// on both sides, then waits for all of the proxy's goroutines. It is
// idempotent; the listeners' close errors are joined.
func (p *Proxy) Close() error {
	var errs []error
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		p.cancel()
		for ln := range p.lns {
			if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
				errs = append(errs, fmt.Errorf("faultproxy: close %s: %w", ln.Addr(), err))
			}
		}
		for _, c := range p.conns {
			c.close()
		}
	}
	p.mu.Unlock()
	p.wg.Wait()
	return errors.Join(errs...)
}

// SeverAll closes both sides of every live connection now, counting each in
// Stats.Severed, and returns how many it cut. Faults need not be enabled.
func (p *Proxy) SeverAll() int {
	n := 0
	for _, c := range p.live() {
		if c.sever("manual") {
			n++
		}
	}
	return n
}

// SetBlackout starts or ends a blackout, a network outage that the peers
// notice at once: starting one severs every live connection (as
// [Proxy.SeverAll], and returns how many), and until it ends every new
// connection is closed on accept, before the target is dialed, and counted
// in Stats.Refused. Ending one returns 0. Faults need not be enabled.
func (p *Proxy) SetBlackout(on bool) int {
	p.mu.Lock()
	p.blackout = on
	p.mu.Unlock()
	if !on {
		return 0
	}
	// A connection admitted before the flag was set is in p.conns by now.
	return p.SeverAll()
}

// StallAll stops forwarding in dir on every live connection for d (ending
// any shorter stall later), counting one stall per connection, and returns
// how many connections it stalled. Chunks already read wait in the queue;
// once it is full the proxy stops reading. Faults need not be enabled.
func (p *Proxy) StallAll(dir Direction, d time.Duration) int {
	cs := p.live()
	for _, c := range cs {
		c.stall(dir, d)
	}
	return len(cs)
}

// ResumeAll ends every stall now; queued chunks are then forwarded in order.
func (p *Proxy) ResumeAll() {
	for _, c := range p.live() {
		c.up.resume()
		c.down.resume()
	}
}

// SetFaults replaces the random faults; the next draw uses them. It returns
// an error wrapping [ErrInvalidConfig], and changes nothing, when f is
// invalid.
func (p *Proxy) SetFaults(f Faults) error {
	if err := f.fill(); err != nil {
		return err
	}
	p.faults.Store(&f)
	return nil
}

// SetFaultsEnabled turns random faults on or off; they are on after [New].
// Turning them off stops new severs, stalls and delays and ends every
// stall in effect (as [Proxy.ResumeAll]); chunks already delayed keep
// their delay. The faults themselves are kept for when they are turned on.
func (p *Proxy) SetFaultsEnabled(on bool) {
	p.enabled.Store(on)
	if !on {
		p.ResumeAll()
	}
}

// Stats returns a snapshot of the counters.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	active := int64(len(p.conns))
	p.mu.Unlock()
	return Stats{
		Connections: p.connections.Load(), Active: active, Rejected: p.rejected.Load(), Refused: p.refused.Load(),
		DialFailures: p.dialFailures.Load(), Severed: p.severed.Load(), Stalled: p.stalled.Load(),
		Delayed: p.delayed.Load(), BytesUp: p.up.Load(), BytesDown: p.down.Load(),
	}
}

// schedule draws severs and stalls for every live connection each
// Config.FaultInterval. It runs from the first Serve until Close.
func (p *Proxy) schedule() {
	defer p.wg.Done()
	rng := rand.New(rand.NewPCG(uint64(p.seed), 0))
	tk := time.NewTicker(p.cfg.FaultInterval)
	defer tk.Stop()
	dt := p.cfg.FaultInterval.Seconds()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-tk.C:
		}
		f := p.faults.Load()
		if !p.enabled.Load() || (f.SeverRate == 0 && f.StallRate == 0) {
			continue
		}
		pSever := 1 - math.Exp(-f.SeverRate*dt)
		pStall := 1 - math.Exp(-f.StallRate*dt)
		for _, c := range p.live() {
			sever, stall := rng.Float64() < pSever, rng.Float64() < pStall
			dir := Direction(1 + rng.IntN(3))
			d := uniform(rng, f.StallMin, f.StallMax)
			switch {
			case sever:
				c.sever("random")
			case stall:
				c.stall(dir, d)
			}
		}
	}
}

// delay returns the delay for the next chunk, drawn from rng.
func (p *Proxy) delay(rng *rand.Rand) time.Duration {
	f := p.faults.Load()
	if f.DelayMax == 0 || !p.enabled.Load() {
		return 0
	}
	return uniform(rng, f.DelayMin, f.DelayMax)
}

func uniform(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
}
