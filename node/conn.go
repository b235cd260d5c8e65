package node

import (
	"bufio"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gobwas/ws"
	"golang.org/x/time/rate"

	"github.com/switchboardgg/switchboard/protocol/roomwire"
	"github.com/switchboardgg/switchboard/rooms"
)

// invalidLimit is the number of invalid messages in a row that close a
// connection with ERROR 6.
const invalidLimit = 3

// pongBurst and pongsPerSecond bound the WebSocket pongs one connection
// gets: pings beyond them are read (within the read budget) but not
// answered.
const (
	pongBurst      = 10
	pongsPerSecond = 10
)

// conn is one WebSocket connection. The handler goroutine of ServeHTTP is
// its reader; it starts one writer goroutine and joins it before
// returning. conn implements rooms.Peer.
type conn struct {
	// immutable after newConn
	s          *Server
	nc         net.Conn
	br         *bufio.Reader
	id         uint64
	hsDeadline time.Time     // the handshake must be read by then
	wake       chan struct{} // capacity 1: the writer has work
	readerDone chan struct{} // closed when the reader stops
	writerDone chan struct{} // closed when the writer has closed nc

	bound      atomic.Bool // has a seat (drain reaches it through its room)
	closing    atomic.Bool // mirror of q.closing for the reader
	peerClosed atomic.Bool // the reader got the client's close frame
	atBoundary atomic.Bool // the reader stopped between two frames

	// owned by the reader goroutine
	log      *slog.Logger
	link     *rooms.Link
	hdr      [ws.MaxHeaderSize - 2]byte
	ctl      [ws.MaxControlFramePayloadSize]byte
	buf      []byte // the message being read, unmasked
	lastMsg  time.Time
	deadline time.Time     // when the read deadline was last pushed
	lim      *rate.Limiter // read budget: every frame, control frames too
	pongs    *rate.Limiter // pings answered
	d        Dispatcher

	mu sync.Mutex // guards q
	q  sendQueue
}

// sendQueue is the bounded queue between the room (and the reader) and the
// writer goroutine. It holds at most Config.SendQueueDepth messages, and
// Config.MaxQueueBytes bytes with the batch being written; what the room
// queues inside the handshake (WELCOME and a resume's catch-up) is exempt,
// bounded by the rooms' retention, and grows the ring when it must.
type sendQueue struct {
	ring      []*rooms.Msg
	head, n   int
	counted   int  // messages in ring that count against the depth
	bytes     int  // bytes that count against MaxQueueBytes, queued or being written
	exempt    bool // the handshake is queuing its answer
	final     *rooms.Msg
	closing   bool          // no more Sends: write final and a close frame, then close
	closeCode ws.StatusCode // of that close frame
	abort     bool          // close without writing: a Send found the queue full, or kill
	pong      []byte        // payload of a WebSocket ping to answer
	hasPong   bool
	reason    string // first reason the connection is ending, for the metric
}

func newConn(s *Server, nc net.Conn, br *bufio.Reader, hsDeadline time.Time) *conn {
	id := s.connSeq.Add(1)
	c := &conn{
		s:          s,
		nc:         nc,
		br:         br,
		id:         id,
		hsDeadline: hsDeadline,
		wake:       make(chan struct{}, 1),
		readerDone: make(chan struct{}),
		writerDone: make(chan struct{}),
		log:        s.log.With("conn", id),
		lim:        rate.NewLimiter(rate.Limit(s.cfg.ReadRate), s.cfg.ReadBurst),
		pongs:      rate.NewLimiter(pongsPerSecond, pongBurst),
	}
	c.q.ring = make([]*rooms.Msg, s.cfg.SendQueueDepth)
	return c
}

func (c *conn) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Send implements rooms.Peer: it queues m, or reports false when the
// queue is full (the connection is then dropped) or closing.
func (c *conn) Send(m *rooms.Msg) bool {
	return c.enqueue(m, true)
}

// enqueue queues m; a full queue marks the connection overflowed when
// dropOnFull, otherwise m is just not sent.
func (c *conn) enqueue(m *rooms.Msg, dropOnFull bool) bool {
	size := len(m.Wire())
	c.mu.Lock()
	q := &c.q
	if q.closing {
		c.mu.Unlock()
		return false
	}
	if !q.exempt && (q.counted >= c.s.cfg.SendQueueDepth || q.bytes+size > c.s.cfg.MaxQueueBytes) {
		if !dropOnFull {
			c.mu.Unlock()
			return false
		}
		q.abort, q.closing = true, true
		c.closing.Store(true)
		if q.reason == "" {
			q.reason = discSlow
		}
		c.mu.Unlock()
		c.nc.Close() // the writer may be blocked on the socket
		c.signal()
		return false
	}
	if q.n == len(q.ring) {
		q.grow()
	}
	m.Retain()
	i := q.head + q.n
	if i >= len(q.ring) {
		i -= len(q.ring)
	}
	q.ring[i] = m
	q.n++
	if !q.exempt {
		q.counted++
		q.bytes += size
	}
	c.mu.Unlock()
	c.signal()
	return true
}

// grow doubles the ring, for the exempt messages of a handshake.
func (q *sendQueue) grow() {
	r := make([]*rooms.Msg, 2*len(q.ring))
	for i := range q.n {
		r[i] = q.ring[(q.head+i)%len(q.ring)]
	}
	q.ring, q.head = r, 0
}

// setExempt starts or ends the handshake's answer, which the queue's
// bounds do not count.
func (c *conn) setExempt(on bool) {
	c.mu.Lock()
	c.q.exempt = on
	c.mu.Unlock()
}

// Close implements rooms.Peer: the writer sends what is queued, then final
// and a close frame, and closes the connection.
func (c *conn) Close(final *rooms.Msg) {
	c.closeWith(final, ws.StatusNormalClosure, discServer)
}

func (c *conn) closeWith(final *rooms.Msg, code ws.StatusCode, reason string) {
	c.mu.Lock()
	if c.q.closing {
		c.mu.Unlock()
		return
	}
	c.q.closing, c.q.closeCode = true, code
	if c.q.reason == "" {
		c.q.reason = reason
	}
	if final != nil {
		final.Retain()
		c.q.final = final
	}
	c.closing.Store(true)
	c.mu.Unlock()
	c.signal()
}

// kill closes the socket at once (Server.Close), and stops the writer,
// which a reader waiting for its read budget waits for.
func (c *conn) kill(reason string) {
	c.mu.Lock()
	if c.q.reason == "" {
		c.q.reason = reason
	}
	c.q.abort, c.q.closing = true, true
	c.closing.Store(true)
	c.mu.Unlock()
	c.nc.Close()
	c.signal()
}

// setReason records why the connection ends, unless a reason is known.
func (c *conn) setReason(r string) {
	c.mu.Lock()
	if c.q.reason == "" {
		c.q.reason = r
	}
	c.mu.Unlock()
}

// serve runs the connection: the writer in a goroutine, the reader here.
func (c *conn) serve() {
	go c.writeLoop()
	reason, code := c.readLoop()
	c.setReason(reason)
	if c.link != nil {
		r := rooms.ReasonNetwork
		if reason == discIdle {
			r = rooms.ReasonTimeout
		}
		c.link.Disconnected(r)
	}
	c.closeWith(nil, code, reason)
	close(c.readerDone)
	<-c.writerDone
	c.mu.Lock()
	reason = c.q.reason
	c.mu.Unlock()
	c.s.m.disc[reason].Inc()
	c.log.Debug("connection closed", "reason", reason)
}

// readLoop reads messages until the connection fails or closes, and
// returns why, with the close code to send.
func (c *conn) readLoop() (string, ws.StatusCode) {
	_ = c.nc.SetReadDeadline(c.hsDeadline)
	handshaken := false
	for {
		op, p, err := c.readMessage(handshaken)
		if err != nil {
			return c.readError(err, handshaken)
		}
		if c.closing.Load() || op != ws.OpBinary {
			continue // text frames are ignored; nothing is read after a final message
		}
		if handshaken {
			c.dispatch(p)
			continue
		}
		if c.handshake(p) {
			handshaken = true
			c.s.adm.release(c.nc)
			now := time.Now()
			c.lastMsg, c.deadline = now, now
			_ = c.nc.SetReadDeadline(now.Add(c.s.cfg.IdleTimeout))
		}
	}
}

var (
	errPeerClose = errors.New("node: close frame")
	errIdle      = errors.New("node: idle timeout")
	errTooBig    = errors.New("node: message too big")
	errProtocol  = errors.New("node: websocket protocol error")
)

// closeError carries the status code of a client's close frame.
type closeError struct{ code ws.StatusCode }

func (e closeError) Error() string        { return errPeerClose.Error() }
func (e closeError) Is(target error) bool { return target == errPeerClose }

func (c *conn) readError(err error, handshaken bool) (string, ws.StatusCode) {
	var ce closeError
	var ne net.Error
	switch {
	case errors.As(err, &ce):
		c.peerClosed.Store(true)
		code := ce.code
		if code == 0 || code == ws.StatusNoStatusRcvd {
			code = ws.StatusNormalClosure
		}
		return discClient, code
	case errors.Is(err, errIdle):
		c.atBoundary.Store(true)
		return discIdle, ws.StatusNormalClosure
	case errors.Is(err, errTooBig):
		return discTooBig, ws.StatusMessageTooBig
	case errors.Is(err, errProtocol):
		return discProtocol, ws.StatusProtocolError
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return discClient, ws.StatusNormalClosure
	case !handshaken && errors.As(err, &ne) && ne.Timeout():
		c.atBoundary.Store(true) // only await waits without a frame begun
		return discHandshakeTimout, ws.StatusNormalClosure
	case errors.As(err, &ne) && ne.Timeout() && time.Since(c.lastMsg) >= c.s.cfg.IdleTimeout:
		// The idle deadline fired inside a frame (control frames and
		// text do not count as messages): idle all the same.
		return discIdle, ws.StatusNormalClosure
	}
	return discNetwork, ws.StatusNormalClosure
}

// dispatch handles one message after the handshake.
func (c *conn) dispatch(p []byte) {
	pong, fatal := c.d.Dispatch(p)
	if pong != nil {
		c.enqueue(pong, false)
		pong.Release()
	}
	if fatal {
		em := c.s.engine.ErrorMsg(roomwire.CodeProtocolUnsupported, "", nil)
		c.closeWith(em, ws.StatusNormalClosure, discInvalid)
		em.Release()
	}
}

var errWrongDirection = errors.New("node: message type not sent by clients")

// writeLoop writes queued messages, each batch with one writev, until the
// connection closes.
func (c *conn) writeLoop() {
	defer close(c.writerDone)
	defer c.nc.Close()
	var (
		batch   []*rooms.Msg
		iov     net.Buffers
		pong    [2 + ws.MaxControlFramePayloadSize]byte
		closeFr [4]byte
		wset    time.Time // when the write deadline was last pushed
	)
	release := func() {
		for i, m := range batch {
			m.Release()
			batch[i] = nil
		}
		batch = batch[:0]
	}
	defer func() { // drop whatever is left
		c.mu.Lock()
		c.q.closing = true
		for c.q.n > 0 {
			batch = append(batch, c.q.ring[c.q.head])
			c.q.ring[c.q.head] = nil
			c.q.head = (c.q.head + 1) % len(c.q.ring)
			c.q.n--
		}
		if c.q.final != nil {
			batch = append(batch, c.q.final)
			c.q.final = nil
		}
		c.mu.Unlock()
		release()
	}()
	for {
		// The reader always closes the queue (closeWith) before it stops,
		// so waking up for work is enough: the closing path below ends.
		<-c.wake
		c.mu.Lock()
		q := &c.q
		for q.n > 0 {
			batch = append(batch, q.ring[q.head])
			q.ring[q.head] = nil
			q.head++
			if q.head == len(q.ring) {
				q.head = 0
			}
			q.n--
		}
		q.head, q.counted = 0, 0
		taken := q.bytes // subtracted once written
		closing, abort, code, final := q.closing, q.abort, q.closeCode, q.final
		q.final = nil
		np := 0
		if q.hasPong {
			pong[0], pong[1] = 0x8A, byte(len(q.pong))
			np = 2 + copy(pong[2:], q.pong)
			q.hasPong = false
		}
		c.mu.Unlock()
		if abort {
			if final != nil {
				final.Release()
			}
			return
		}
		iov = iov[:0]
		for _, m := range batch {
			iov = append(iov, m.Wire())
		}
		if np > 0 {
			iov = append(iov, pong[:np])
		}
		if final != nil {
			batch = append(batch, final)
			iov = append(iov, final.Wire())
		}
		if closing {
			closeFr[0], closeFr[1], closeFr[2], closeFr[3] = 0x88, 2, byte(code>>8), byte(code)
			iov = append(iov, closeFr[:])
		}
		if len(iov) > 0 {
			if now := time.Now(); now.Sub(wset) > c.s.cfg.WriteTimeout/4 {
				_ = c.nc.SetWriteDeadline(now.Add(c.s.cfg.WriteTimeout))
				wset = now
			}
			out := &c.s.m.out
			for _, m := range batch {
				t := m.Type()
				out[t].Inc()
				if t == roomwire.TypeError {
					c.s.m.errs[m.Payload()[1]].Inc()
				}
			}
			bufs := iov // WriteTo consumes its receiver; iov keeps the array
			if _, err := bufs.WriteTo(c.nc); err != nil {
				c.setReason(discNetwork)
				release()
				return
			}
		}
		release()
		if taken > 0 {
			c.mu.Lock()
			c.q.bytes -= taken
			c.mu.Unlock()
		}
		if closing {
			c.linger()
			return
		}
	}
}

// maxLingerBytes bounds what linger reads and drops.
const maxLingerBytes = 1 << 20

// linger ends a connection after the node's close frame: the write side
// is shut, and the node keeps reading (and dropping) until the client
// closes too or CloseWait passes, so that unread bytes do not turn the
// close into a reset that could destroy the final messages in flight.
func (c *conn) linger() {
	if cw, ok := c.nc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	deadline := time.Now().Add(c.s.cfg.CloseWait)
	t := time.NewTimer(c.s.cfg.CloseWait)
	defer t.Stop()
	select {
	case <-c.readerDone: // the reader stopped; read what is left here
	case <-t.C:
		return
	}
	if c.peerClosed.Load() {
		return // the client's close frame came: it sends nothing more
	}
	_ = c.nc.SetReadDeadline(deadline)
	if !c.atBoundary.Load() { // the stream is mid-frame: drop bytes
		_, _ = io.CopyN(io.Discard, c.br, maxLingerBytes)
		return
	}
	for n := int64(0); n < maxLingerBytes; { // drop frames until the client's close frame
		h, err := ws.ReadHeaderBuffer(c.br, c.hdr[:])
		if err != nil || h.OpCode == ws.OpClose {
			return
		}
		k, err := io.CopyN(io.Discard, c.br, h.Length)
		if err != nil {
			return
		}
		n += k
	}
}
