package relay

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gobwas/ws"
)

// Serve accepts WebSocket connections on ln and serves the relay protocol
// over them (reference unity-relay.md §5): the upgrade is on path "/",
// the 101 carries no Sec-WebSocket-Protocol or Sec-WebSocket-Extensions
// header (UTP closes the connection if it does), and every binary message
// is one relay message. It returns ErrServerClosed after Close or
// Shutdown; the server closes ln then. For wss, pass a tls.Listener.
func (s *Server) Serve(ln net.Listener) error {
	if !s.track(nil, ln) {
		return ErrServerClosed
	}
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.stopping() {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return fmt.Errorf("relay: accepting WebSocket connections: %w", err)
		}
		c := &wsConn{
			s:    s,
			nc:   nc,
			q:    make(chan []byte, s.cfg.WSSendQueue),
			free: make(chan []byte, s.cfg.WSSendQueue),
			ctl:  make(chan []byte, 4),
			done: make(chan struct{}),
		}
		if ta, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
			c.ip = handshakeSource(ta.AddrPort())
		}
		s.mu.Lock()
		if s.closed || s.shutting || len(s.wsConns) >= s.cfg.MaxWSConns || s.wsByIP[c.ip] >= s.cfg.MaxWSConnsPerIP {
			s.mu.Unlock()
			s.m.drops[dropCapacity].Inc()
			nc.Close()
			continue
		}
		s.wsConns[c] = struct{}{}
		s.wsByIP[c.ip]++
		s.wg.Add(2)
		s.mu.Unlock()
		s.m.wsConns.Inc()
		go c.readLoop()
	}
}

func (s *Server) stopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed || s.shutting
}

// wsConn is one WebSocket connection: a carrier for the allocations bound
// over it. It runs a reader goroutine (which handles messages) and a
// writer goroutine fed by a bounded queue; a full queue drops, as UDP
// would.
type wsConn struct {
	s  *Server
	nc net.Conn
	ip netip.Addr // handshakeSource of the peer; counts against MaxWSConnsPerIP

	q    chan []byte   // binary messages to write, bounded by Config.WSSendQueue
	free chan []byte   // spent buffers, for reuse
	ctl  chan []byte   // whole control frames (pong, close)
	done chan struct{} // closed when the reader ends
	// idle is the longest own idle timeout (ns) of the allocations bound
	// over the connection: it stays open through that much silence, as
	// they do, when that is longer than Config.WSIdleTimeout.
	idle atomic.Int64
	// closing is set by the writer once it has sent a close frame; the
	// reader then keeps its read deadline short (see readLoop).
	closing atomic.Bool

	stopOnce sync.Once
}

// noteBound tells ep's carrier that a was bound over it: a WebSocket
// connection then tolerates a's own idle timeout, a DTLS connection has
// bound (it is closed if it binds nothing after its handshake).
func noteBound(ep endpoint, a *allocation) {
	if d, ok := ep.c.(*dtlsConn); ok {
		d.bound.Store(true)
		return
	}
	c, ok := ep.c.(*wsConn)
	if !ok {
		return
	}
	for {
		cur := c.idle.Load()
		if int64(a.idle) <= cur || c.idle.CompareAndSwap(cur, int64(a.idle)) {
			return
		}
	}
}

func (c *wsConn) kind() string { return "ws" }

func (c *wsConn) send(_ netip.AddrPort, b []byte) bool {
	select {
	case <-c.done:
		return false
	default:
	}
	var buf []byte
	select {
	case buf = <-c.free:
	default:
		buf = make([]byte, 0, c.s.cfg.MaxDatagram)
	}
	buf = append(buf[:0], b...)
	select {
	case c.q <- buf:
		return true
	default:
		return false
	}
}

// closeWait bounds how long a connection waits for the client's close
// frame once the node has sent its own.
const closeWait = time.Second

// goAway asks the writer to send a close frame (1001) and end.
func (c *wsConn) goAway() {
	select {
	case c.ctl <- ws.MustCompileFrame(ws.NewCloseFrame(ws.NewCloseFrameBody(ws.StatusGoingAway, ""))):
	default:
	}
}

func (c *wsConn) stop() {
	c.stopOnce.Do(func() { close(c.done) })
}

func (c *wsConn) readLoop() {
	s := c.s
	defer func() {
		c.stop()
		c.nc.Close()
		s.mu.Lock()
		delete(s.wsConns, c)
		if s.wsByIP[c.ip]--; s.wsByIP[c.ip] <= 0 {
			delete(s.wsByIP, c.ip)
		}
		s.mu.Unlock()
		s.m.wsConns.Dec()
		s.wg.Done()
	}()
	_ = c.nc.SetDeadline(time.Now().Add(s.cfg.WSHandshakeTimeout))
	up := ws.Upgrader{
		OnRequest: func(uri []byte) error {
			if string(uri) != "/" {
				return ws.RejectConnectionError(ws.RejectionStatus(404))
			}
			return nil
		},
	}
	if _, err := up.Upgrade(c.nc); err != nil {
		s.wg.Done() // the writer never starts
		s.log.Debug("relay: WebSocket upgrade failed", "remote", c.nc.RemoteAddr(), "err", err)
		return
	}
	_ = c.nc.SetDeadline(time.Time{})
	go c.writeLoop()

	w := s.newWorker(newSourceTable(1, &s.cfg))
	ep := endpoint{c: c}
	br := bufio.NewReaderSize(c.nc, 4096)
	buf := make([]byte, 0, s.cfg.MaxDatagram)
	var ctl [ws.MaxControlFramePayloadSize]byte
	frags := 0
	for {
		_ = c.nc.SetReadDeadline(time.Now().Add(max(s.cfg.WSIdleTimeout, time.Duration(c.idle.Load()))))
		// The writer may have sent a close frame and shortened the deadline
		// just before the line above lengthened it again: checked after
		// setting, so one of the two short deadlines always wins.
		if c.closing.Load() {
			_ = c.nc.SetReadDeadline(time.Now().Add(closeWait))
		}
		h, err := ws.ReadHeader(br)
		if err != nil {
			return
		}
		if h.Rsv != 0 || !h.Masked {
			c.closeWith(ws.StatusProtocolError)
			return
		}
		if h.OpCode.IsControl() {
			if !h.Fin || h.Length > ws.MaxControlFramePayloadSize {
				c.closeWith(ws.StatusProtocolError)
				return
			}
			p := ctl[:h.Length]
			if _, err := io.ReadFull(br, p); err != nil {
				return
			}
			ws.Cipher(p, h.Mask, 0)
			switch h.OpCode {
			case ws.OpPing:
				select {
				case c.ctl <- ws.MustCompileFrame(ws.NewPongFrame(append([]byte(nil), p...))):
				default:
				}
			case ws.OpClose:
				c.closeWith(ws.StatusNormalClosure)
				return
			}
			continue
		}
		switch {
		case h.OpCode == ws.OpBinary && frags == 0:
			buf = buf[:0]
		case h.OpCode == ws.OpContinuation && frags > 0:
		default: // text, or a broken fragment sequence
			c.closeWith(ws.StatusProtocolError)
			return
		}
		if h.Length > int64(s.cfg.MaxDatagram-len(buf)) {
			w.drop(dropTooLarge)
			c.closeWith(ws.StatusMessageTooBig)
			return
		}
		n := len(buf)
		buf = buf[:n+int(h.Length)]
		if _, err := io.ReadFull(br, buf[n:]); err != nil {
			return
		}
		ws.Cipher(buf[n:], h.Mask, 0)
		if !h.Fin {
			frags++
			continue
		}
		frags = 0
		w.handle(ep, buf)
	}
}

// closeWith queues a close frame; the writer sends it and ends.
func (c *wsConn) closeWith(code ws.StatusCode) {
	select {
	case c.ctl <- ws.MustCompileFrame(ws.NewCloseFrame(ws.NewCloseFrameBody(code, ""))):
	default:
	}
	// Give the writer a moment to send it; the reader's return closes nc.
	t := time.NewTimer(100 * time.Millisecond)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
	}
}

func (c *wsConn) writeLoop() {
	defer c.s.wg.Done()
	defer c.stop()
	bw := bufio.NewWriterSize(c.nc, 16<<10)
	for {
		var (
			b   []byte
			ctl []byte
		)
		select {
		case <-c.done:
			return
		case ctl = <-c.ctl:
		case b = <-c.q:
		}
		_ = c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.WSWriteTimeout))
		if ctl != nil {
			_, err := bw.Write(ctl)
			if err == nil {
				err = bw.Flush()
			}
			if err != nil || ws.OpCode(ctl[0]&0x0F) == ws.OpClose {
				// Bound the wait for the client's close frame.
				c.closing.Store(true)
				_ = c.nc.SetReadDeadline(time.Now().Add(closeWait))
				return
			}
			continue
		}
		for b != nil {
			err := ws.WriteHeader(bw, ws.Header{Fin: true, OpCode: ws.OpBinary, Length: int64(len(b))})
			if err == nil {
				_, err = bw.Write(b)
			}
			select {
			case c.free <- b:
			default:
			}
			if err != nil {
				return
			}
			select {
			case b = <-c.q:
			default:
				b = nil
			}
		}
		if err := bw.Flush(); err != nil {
			return
		}
	}
}
