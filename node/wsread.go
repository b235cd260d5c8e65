package node

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"time"

	"github.com/gobwas/ws"
)

// maxFragments bounds the frames of one fragmented message.
const maxFragments = 64

// readMessage reads the next data message (binary or text), answering
// pings and reassembling fragments on the way, and returns its unmasked
// payload in c.buf, valid until the next call. It fails with a closeError
// for a close frame, errTooBig over Config.ReadLimit, errProtocol for a
// framing error and errIdle when no message came for Config.IdleTimeout
// (after the handshake; before it the handshake deadline applies).
func (c *conn) readMessage(handshaken bool) (ws.OpCode, []byte, error) {
	var (
		op    ws.OpCode
		n     int
		frags int
	)
	for {
		if err := c.await(handshaken); err != nil {
			return 0, nil, err
		}
		h, err := ws.ReadHeaderBuffer(c.br, c.hdr[:])
		if err != nil {
			if errors.Is(err, ws.ErrHeaderLengthMSB) || errors.Is(err, ws.ErrHeaderLengthUnexpected) {
				return 0, nil, errProtocol
			}
			return 0, nil, err
		}
		if h.Rsv != 0 || !h.Masked {
			return 0, nil, errProtocol
		}
		if h.OpCode.IsControl() {
			if !h.Fin || h.Length > ws.MaxControlFramePayloadSize {
				return 0, nil, errProtocol
			}
			if err := c.throttle(time.Now(), ws.HeaderSize(h)+int(h.Length)); err != nil {
				return 0, nil, err
			}
			if err := c.control(h); err != nil {
				return 0, nil, err
			}
			continue
		}
		switch h.OpCode {
		case ws.OpContinuation:
			if frags == 0 {
				return 0, nil, errProtocol
			}
		case ws.OpBinary, ws.OpText:
			if frags > 0 {
				return 0, nil, errProtocol
			}
			op = h.OpCode
		default:
			return 0, nil, errProtocol
		}
		if frags++; frags > maxFragments {
			return 0, nil, errProtocol
		}
		if h.Length > int64(c.s.cfg.ReadLimit-n) {
			return 0, nil, errTooBig
		}
		l := int(h.Length)
		now := time.Now()
		if err := c.throttle(now, ws.HeaderSize(h)+l); err != nil {
			return 0, nil, err
		}
		if cap(c.buf) < n+l {
			nb := make([]byte, n, max(n+l, 2*cap(c.buf), 256))
			copy(nb, c.buf[:n])
			c.buf = nb
		}
		c.buf = c.buf[:n+l]
		if _, err := io.ReadFull(c.br, c.buf[n:]); err != nil {
			return 0, nil, err
		}
		ws.Cipher(c.buf[n:], h.Mask, 0)
		n += l
		if h.Fin {
			if op == ws.OpBinary && handshaken {
				c.touch(now)
			}
			return op, c.buf[:n], nil
		}
	}
}

// control handles a control frame, whose header readMessage checked: ping
// is answered within the pong budget (pongBurst, pongsPerSecond), pong
// ignored, close ends the read loop.
func (c *conn) control(h ws.Header) error {
	p := c.ctl[:h.Length]
	if _, err := io.ReadFull(c.br, p); err != nil {
		return err
	}
	ws.Cipher(p, h.Mask, 0)
	switch h.OpCode {
	case ws.OpPing:
		if !c.pongs.Allow() {
			return nil // a ping flood: the pings over the budget go unanswered
		}
		c.mu.Lock()
		if !c.q.closing {
			c.q.pong = append(c.q.pong[:0], p...)
			c.q.hasPong = true
		}
		c.mu.Unlock()
		c.signal()
	case ws.OpClose:
		var code ws.StatusCode
		if len(p) >= 2 {
			code = ws.StatusCode(binary.BigEndian.Uint16(p))
		}
		return closeError{code: code}
	case ws.OpPong:
	default:
		return errProtocol
	}
	return nil
}

// await waits for the first byte of the next frame. After the handshake a
// read deadline that fires before IdleTimeout has passed since the last
// message is pushed back; the deadline itself is only moved every
// IdleTimeout/8 by touch, so that most messages cost no timer update.
func (c *conn) await(handshaken bool) error {
	for {
		if c.br.Buffered() > 0 {
			return nil
		}
		_, err := c.br.Peek(1)
		if err == nil {
			return nil
		}
		var ne net.Error
		if !handshaken || !errors.As(err, &ne) || !ne.Timeout() {
			return err
		}
		idle := c.s.cfg.IdleTimeout
		if time.Since(c.lastMsg) >= idle {
			return errIdle
		}
		c.deadline = time.Now()
		_ = c.nc.SetReadDeadline(c.lastMsg.Add(idle))
	}
}

// touch records a message: the idle clock restarts.
func (c *conn) touch(now time.Time) {
	c.lastMsg = now
	if idle := c.s.cfg.IdleTimeout; now.Sub(c.deadline) >= idle/8 {
		c.deadline = now
		_ = c.nc.SetReadDeadline(now.Add(idle))
	}
}

// throttle waits until the connection's read rate allows n more bytes.
func (c *conn) throttle(now time.Time, n int) error {
	if c.lim.AllowN(now, n) {
		return nil
	}
	r := c.lim.ReserveN(now, n)
	if !r.OK() {
		return errTooBig
	}
	t := time.NewTimer(r.DelayFrom(now))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-c.writerDone:
		return net.ErrClosed
	}
}
