package faultproxy

import (
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// conn is one proxied connection. Each direction is a pipe: a reader
// goroutine reads chunks from the source into the pipe's queue and a writer
// goroutine writes them to the destination once their delay is over and no
// stall is in effect. The pipe owns QueueDepth+1 buffers; when all are
// queued the reader stops reading, so memory stays bounded and TCP
// back-pressure reaches the sender.
type conn struct {
	// immutable after newConn
	p        *Proxy
	id       uint64
	log      *slog.Logger
	client   net.Conn
	done     chan struct{} // closed by close
	up, down *pipe

	mu     sync.Mutex // guards the fields below
	closed bool
	target net.Conn // nil until dialed
}

type pipe struct {
	// immutable after newPipe
	rng   *rand.Rand    // owned by the reader goroutine
	free  chan []byte   // buffers not in the queue
	queue chan chunk    // capacity equals the number of buffers: never blocks
	bytes *atomic.Int64 // bytes written to the destination
	kick  chan struct{} // wakes the writer when a stall ends early

	eof bool // owned by the reader; the writer reads it after queue is closed

	mu    sync.Mutex
	until time.Time // end of the stall in effect; guarded by mu
}

type chunk struct {
	b   []byte
	due time.Time // zero: no delay
}

func newConn(p *Proxy, id uint64, client net.Conn) *conn {
	return &conn{p: p, id: id, log: p.log.With("conn", id), client: client,
		done: make(chan struct{}),
		up:   newPipe(p, rand.NewPCG(uint64(p.seed), 2*id), &p.up),
		down: newPipe(p, rand.NewPCG(uint64(p.seed), 2*id+1), &p.down)}
}

func newPipe(p *Proxy, src rand.Source, bytes *atomic.Int64) *pipe {
	n := p.cfg.QueueDepth + 1
	pp := &pipe{rng: rand.New(src), free: make(chan []byte, n), queue: make(chan chunk, n),
		bytes: bytes, kick: make(chan struct{}, 1)}
	for range n {
		pp.free <- make([]byte, p.cfg.ChunkSize)
	}
	return pp
}

// run dials the target and forwards until both directions end or the
// connection is closed. It is counted in p.wg.
func (c *conn) run() {
	defer c.p.wg.Done()
	defer c.p.remove(c)
	defer c.close()
	d := net.Dialer{Timeout: c.p.cfg.DialTimeout}
	target, err := d.DialContext(c.p.ctx, "tcp", c.p.cfg.Target)
	if err != nil {
		c.p.dialFailures.Add(1)
		c.log.Debug("faultproxy: dial target", "err", err)
		return
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		target.Close()
		return
	}
	c.target = target
	c.mu.Unlock()
	c.log.Debug("faultproxy: open", "client", c.client.RemoteAddr().String())
	var wg sync.WaitGroup
	wg.Go(func() { c.read(c.client, c.up) })
	wg.Go(func() { c.write(target, c.up) })
	wg.Go(func() { c.read(target, c.down) })
	wg.Go(func() { c.write(c.client, c.down) })
	wg.Wait()
	c.log.Debug("faultproxy: closed")
}

// close closes both sides once and reports whether this call closed them.
func (c *conn) close() bool { return c.closeAs(nil) }

// closeAs is close that adds one to counter, if not nil, before the peers
// can see the close.
func (c *conn) closeAs(counter *atomic.Int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.closed = true
	if counter != nil {
		counter.Add(1)
	}
	close(c.done)
	c.client.Close()
	if c.target != nil {
		c.target.Close()
	}
	return true
}

func (c *conn) sever(why string) bool {
	if !c.closeAs(&c.p.severed) {
		return false
	}
	c.log.Debug("faultproxy: sever", "why", why)
	return true
}

func (c *conn) stall(dir Direction, d time.Duration) {
	until := time.Now().Add(d)
	if dir&Up != 0 {
		c.up.stall(until)
	}
	if dir&Down != 0 {
		c.down.stall(until)
	}
	c.p.stalled.Add(1)
	c.log.Debug("faultproxy: stall", "dir", dir, "for", d)
}

func (pp *pipe) stall(until time.Time) {
	pp.mu.Lock()
	if until.After(pp.until) {
		pp.until = until
	}
	pp.mu.Unlock()
}

func (pp *pipe) resume() {
	pp.mu.Lock()
	pp.until = time.Time{}
	pp.mu.Unlock()
	select {
	case pp.kick <- struct{}{}:
	default:
	}
}

func (pp *pipe) stalledUntil() time.Time {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	return pp.until
}

// read moves chunks from src into pp.queue until src ends or c closes. A
// clean EOF is passed on as a half-close; any other error closes c.
func (c *conn) read(src net.Conn, pp *pipe) {
	defer close(pp.queue)
	for {
		var buf []byte
		select {
		case buf = <-pp.free:
		case <-c.done:
			return
		}
		n, err := src.Read(buf)
		if n > 0 {
			var due time.Time
			if d := c.p.delay(pp.rng); d > 0 {
				due = time.Now().Add(d)
				c.p.delayed.Add(1)
			}
			pp.queue <- chunk{b: buf[:n], due: due}
		} else {
			pp.free <- buf
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				pp.eof = true
			} else {
				c.close()
			}
			return
		}
	}
}

// write moves chunks from pp.queue to dst in order, each after its delay
// and outside stalls.
func (c *conn) write(dst net.Conn, pp *pipe) {
	var t *time.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for ch := range pp.queue {
		if !c.wait(pp, ch.due, &t) {
			return
		}
		n, err := dst.Write(ch.b)
		pp.bytes.Add(int64(n))
		pp.free <- ch.b[:cap(ch.b)]
		if err != nil {
			c.close()
			return
		}
	}
	if !pp.eof {
		c.close()
		return
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		if cw.CloseWrite() == nil {
			return
		}
	}
	c.close()
}

// wait blocks until due has passed and pp is not stalled. It reports
// false if c closed first.
func (c *conn) wait(pp *pipe, due time.Time, t **time.Timer) bool {
	for {
		end := pp.stalledUntil()
		if due.After(end) {
			end = due
		}
		d := time.Until(end)
		if d <= 0 {
			return true
		}
		if *t == nil {
			*t = time.NewTimer(d)
		} else {
			(*t).Reset(d)
		}
		select {
		case <-(*t).C:
		case <-pp.kick:
		case <-c.done:
			return false
		}
	}
}
