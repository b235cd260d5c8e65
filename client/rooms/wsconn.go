package rooms

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gobwas/ws"

	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// keepBuffer is the capacity up to which read and write buffers are kept
// between messages; a bigger one (a FRAME_BATCH, a snapshot) is dropped after
// use, so thousands of idle clients do not each hold their largest message.
const keepBuffer = 16 << 10

// errLeaving is the cause of a connection the client closed after LEAVE.
var errLeaving = errors.New("left")

// wsConn is one WebSocket connection to a game node: client side of RFC 6455
// framing over a net.Conn, with one reader goroutine (the Room's) and one
// writer goroutine that drains a byte queue of ready, masked frames.
type wsConn struct {
	// immutable after dialNode
	nc           net.Conn
	br           *bufio.Reader
	maxMessage   int
	maxQueue     int
	writeTimeout time.Duration

	// owned by the reading goroutine (the handshake, then the reader)
	hdr [ws.MaxHeaderSize]byte
	ctl [ws.MaxControlFramePayloadSize]byte
	msg []byte

	now    func() time.Time
	recvAt atomic.Int64 // Config.Now of the last message handled, Unix ns

	wake   chan struct{} // capacity 1: the queue has bytes or closing is set
	doneCh chan struct{} // closed by kill
	wg     sync.WaitGroup

	mu      sync.Mutex // guards the fields below
	pending []byte     // framed, masked messages for the writer
	spare   []byte     // the writer's last buffer, for reuse
	scratch []byte     // encoding buffer of the send methods
	closing bool       // after pending: send a close frame and close
	dead    bool
	err     error // why the connection ended; set once by kill
}

// dialNode dials wsURL, sends the handshake hs and reads the node's answer:
// a WELCOME (returned, owning its bytes) or an ERROR (a *NodeError). The
// connection starts no goroutine; the caller starts the reader and writer.
// ctx cancels the dial and the handshake.
func dialNode(ctx context.Context, cfg *Config, wsURL string, hs []byte) (*wsConn, *roomwire.Welcome, error) {
	nc, br, _, err := cfg.Dialer.Dial(ctx, wsURL)
	if err != nil {
		return nil, nil, fmt.Errorf("dial node: %w", err)
	}
	if br == nil {
		br = bufio.NewReaderSize(nc, 4096)
	}
	c := &wsConn{
		nc:           nc,
		br:           br,
		maxMessage:   cfg.MaxMessageSize,
		maxQueue:     cfg.MaxSendQueueBytes,
		writeTimeout: cfg.WriteTimeout,
		now:          cfg.Now,
		wake:         make(chan struct{}, 1),
		doneCh:       make(chan struct{}),
	}
	w, err := c.handshake(ctx, cfg.HandshakeTimeout, hs)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	c.recvAt.Store(cfg.Now().UnixNano())
	return c, w, nil
}

// handshake implements "连接与握手": the first binary message is the
// handshake, and the node's first message is WELCOME or ERROR.
func (c *wsConn) handshake(ctx context.Context, timeout time.Duration, hs []byte) (*roomwire.Welcome, error) {
	c.nc.SetDeadline(time.Now().Add(timeout))
	stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	frame := appendFrame(nil, ws.OpBinary, hs)
	if _, err := c.nc.Write(frame); err != nil {
		return nil, ctxErr(ctx, fmt.Errorf("handshake: %w", err))
	}
	msg, err := c.readMessage(nil)
	if err != nil {
		return nil, ctxErr(ctx, fmt.Errorf("handshake: %w", err))
	}
	t, err := roomwire.Peek(msg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHandshake, err)
	}
	switch t {
	case roomwire.TypeWelcome:
		w := new(roomwire.Welcome)
		if err := w.Unmarshal(msg); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrHandshake, err)
		}
		w.ResumeToken = append([]byte(nil), w.ResumeToken...)
		if !stop() {
			return nil, ctx.Err()
		}
		c.nc.SetDeadline(time.Time{})
		return w, nil
	case roomwire.TypeError:
		var e roomwire.Error
		if err := e.Unmarshal(msg); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrHandshake, err)
		}
		return nil, newNodeError(&e)
	}
	return nil, fmt.Errorf("%w: first message is %s", ErrHandshake, t)
}

// ctxErr prefers the context's error when it caused err.
func ctxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("%w: %w", cerr, err)
	}
	return err
}

// readMessage returns the next binary message. It answers pings through
// the writer queue, skips text messages and pongs, joins fragments, and
// fails on a close frame, a protocol violation or a message over
// maxMessage. The result is valid until the next call. onPing, when set,
// queues a pong; the handshake passes nil.
func (c *wsConn) readMessage(onPing func(payload []byte)) ([]byte, error) {
	if cap(c.msg) > keepBuffer {
		c.msg = nil
	}
	c.msg = c.msg[:0]
	var op ws.OpCode // of the message being assembled; 0 before its first frame
	for {
		h, err := ws.ReadHeaderBuffer(c.br, c.hdr[:])
		if err != nil {
			return nil, err
		}
		if h.Rsv != 0 {
			return nil, ws.ErrProtocolNonZeroRsv
		}
		if h.OpCode.IsControl() {
			if h.Length > ws.MaxControlFramePayloadSize || !h.Fin {
				return nil, ws.ErrProtocolControlPayloadOverflow
			}
			p := c.ctl[:h.Length]
			if _, err := io.ReadFull(c.br, p); err != nil {
				return nil, err
			}
			if h.Masked {
				ws.Cipher(p, h.Mask, 0)
			}
			switch h.OpCode {
			case ws.OpClose:
				code, reason := ws.StatusNoStatusRcvd, ""
				if len(p) >= 2 {
					code, reason = ws.StatusCode(binary.BigEndian.Uint16(p)), string(p[2:])
				}
				return nil, fmt.Errorf("node closed the websocket: %d %q: %w", code, reason, io.EOF)
			case ws.OpPing:
				if onPing != nil {
					onPing(p)
				}
			}
			continue
		}
		switch {
		case h.OpCode == ws.OpContinuation && op == 0:
			return nil, ws.ErrProtocolContinuationUnexpected
		case h.OpCode != ws.OpContinuation && op != 0:
			return nil, ws.ErrProtocolContinuationExpected
		case h.OpCode != ws.OpContinuation:
			op = h.OpCode
		}
		if h.Length > int64(c.maxMessage-len(c.msg)) {
			return nil, fmt.Errorf("message from node over %d bytes", c.maxMessage)
		}
		n := len(c.msg)
		c.msg = grow(c.msg, int(h.Length))
		if _, err := io.ReadFull(c.br, c.msg[n:]); err != nil {
			return nil, err
		}
		if h.Masked {
			ws.Cipher(c.msg[n:], h.Mask, 0)
		}
		if !h.Fin {
			continue
		}
		if op == ws.OpBinary {
			return c.msg, nil
		}
		c.msg, op = c.msg[:0], 0 // text and unknown data messages are ignored
	}
}

// grow extends b by n bytes.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b[:len(b)+n]
	}
	nb := make([]byte, len(b)+n, max(len(b)+n, 2*cap(b), 512))
	copy(nb, b)
	return nb
}

// appendFrame appends one final, masked client frame carrying payload.
func appendFrame(b []byte, op ws.OpCode, payload []byte) []byte {
	n := len(payload)
	b = append(b, 0x80|byte(op))
	switch {
	case n <= 125:
		b = append(b, 0x80|byte(n))
	case n <= 0xFFFF:
		b = append(b, 0x80|126, byte(n>>8), byte(n))
	default:
		b = append(b, 0x80|127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	mask := ws.NewMask()
	b = append(b, mask[:]...)
	start := len(b)
	b = append(b, payload...)
	ws.Cipher(b[start:], mask, 0)
	return b
}

// queueLocked frames payload into the writer queue. c.mu is held.
func (c *wsConn) queueLocked(op ws.OpCode, payload []byte) error {
	if c.dead || c.closing {
		return ErrNotConnected
	}
	if len(c.pending)+len(payload)+ws.MaxHeaderSize > c.maxQueue {
		return ErrSendQueueFull
	}
	c.pending = appendFrame(c.pending, op, payload)
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return nil
}

// sendInput queues INPUT. It allocates nothing.
func (c *wsConn) sendInput(ack uint32, data []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := roomwire.Input{AckFrame: ack, Data: data}
	b, err := m.AppendTo(c.scratch[:0])
	if err != nil {
		return fmt.Errorf("input: %w", err)
	}
	c.scratch = b
	return c.queueLocked(ws.OpBinary, b)
}

// sendPing queues PING.
func (c *wsConn) sendPing(clientMS uint64, rttMS uint32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := roomwire.Ping{ClientMS: clientMS, RTTMS: rttMS}
	b, _ := m.AppendTo(c.scratch[:0]) // a PING has no capped field
	c.scratch = b
	return c.queueLocked(ws.OpBinary, b)
}

// sendFrameReq queues FRAME_REQ.
func (c *wsConn) sendFrameReq(req roomwire.FrameReq) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, _ := req.AppendTo(c.scratch[:0]) // no capped field
	c.scratch = b
	return c.queueLocked(ws.OpBinary, b)
}

// send queues any message.
func (c *wsConn) send(m roomwire.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, err := m.AppendTo(c.scratch[:0])
	if err != nil {
		return fmt.Errorf("%s: %w", m.Type(), err)
	}
	c.scratch = b
	if cap(c.scratch) > keepBuffer {
		c.scratch = nil
	}
	return c.queueLocked(ws.OpBinary, b)
}

// sendPong queues a pong control frame answering a ping.
func (c *wsConn) sendPong(payload []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.queueLocked(ws.OpPong, payload) // a lost pong is harmless
}

// sendLeave queues LEAVE and a close frame after it, then the writer closes
// the connection ("离开:先在 WebSocket 上发 LEAVE,再关闭").
func (c *wsConn) sendLeave() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, _ := (&roomwire.Leave{}).AppendTo(c.scratch[:0])
	c.scratch = b
	if err := c.queueLocked(ws.OpBinary, b); err != nil {
		return err
	}
	c.pending = appendFrame(c.pending, ws.OpClose, ws.NewCloseFrameBody(ws.StatusNormalClosure, ""))
	c.closing = true
	return nil
}

// writeLoop is the writer goroutine: it writes whatever is queued in one
// write, and closes the connection after a close frame or on error.
func (c *wsConn) writeLoop() {
	defer c.wg.Done()
	for {
		select {
		case <-c.wake:
		case <-c.doneCh:
			return
		}
		c.mu.Lock()
		buf := c.pending
		c.pending, c.spare = c.spare[:0], nil
		closing := c.closing
		c.mu.Unlock()
		if len(buf) > 0 {
			c.nc.SetWriteDeadline(time.Now().Add(c.writeTimeout))
			if _, err := c.nc.Write(buf); err != nil {
				c.kill(fmt.Errorf("write: %w", err))
				return
			}
		}
		if closing {
			c.kill(errLeaving)
			return
		}
		if cap(buf) <= keepBuffer {
			c.mu.Lock()
			c.spare = buf[:0]
			c.mu.Unlock()
		}
	}
}

// kill ends the connection with err, the first cause winning, and closes
// the socket, which unblocks the reader and the writer.
func (c *wsConn) kill(err error) {
	c.mu.Lock()
	if c.dead {
		c.mu.Unlock()
		return
	}
	c.dead = true
	c.err = err
	close(c.doneCh)
	c.mu.Unlock()
	c.nc.Close()
}

// cause returns why the connection ended.
func (c *wsConn) cause() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// start starts the reader and the writer.
func (c *wsConn) start(handle func(msg []byte) error) {
	c.wg.Add(2)
	go c.writeLoop()
	go c.readLoop(handle)
}

// readLoop is the reader goroutine.
func (c *wsConn) readLoop(handle func(msg []byte) error) {
	defer c.wg.Done()
	onPing := c.sendPong
	for {
		msg, err := c.readMessage(onPing)
		if err != nil {
			c.kill(fmt.Errorf("read: %w", err))
			return
		}
		if err := handle(msg); err != nil {
			c.kill(err)
			return
		}
		c.recvAt.Store(c.now().UnixNano())
	}
}

func (c *wsConn) wait()                 { c.wg.Wait() }
func (c *wsConn) done() <-chan struct{} { return c.doneCh }
func (c *wsConn) lastRecv() int64       { return c.recvAt.Load() }
func (c *wsConn) transport() string     { return TransportWS }
