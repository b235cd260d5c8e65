package relay

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/gobwas/ws"

	"github.com/switchboardgg/switchboard/api"
)

// wsCarrier is the WebSocket carrier (docs/protocol/relay.md §1, §15): one
// relay message per binary message; the client masks its frames, as RFC
// 6455 requires. Pings from the relay node are answered; fragmented
// messages are joined.
type wsCarrier struct {
	// immutable after dialWS
	nc           net.Conn
	br           *bufio.Reader
	writeTimeout time.Duration

	mu  sync.Mutex // serializes writes (send, and the reader's pongs)
	out []byte     // guarded by mu: the frame being written

	// owned by the reader (recv)
	ctl [ws.MaxControlFramePayloadSize]byte
}

func dialWS(ctx context.Context, ep api.RelayServerEndpoint, _ *Allocation, cfg *Config) (carrier, error) {
	scheme := "ws"
	if ep.ConnectionType == "wss" || ep.Secure {
		scheme = "wss"
	}
	u := url.URL{Scheme: scheme, Host: net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port)), Path: "/"}
	if cfg.wsAddr != "" {
		u.Host = cfg.wsAddr
	}
	d := ws.Dialer{Timeout: cfg.DialTimeout, TLSConfig: cfg.TLSConfig}
	nc, br, _, err := d.Dial(ctx, u.String())
	if err != nil {
		return nil, fmt.Errorf("relay: websocket %s: %w", u.String(), err)
	}
	if br == nil {
		br = bufio.NewReaderSize(nc, 4096)
	}
	return &wsCarrier{nc: nc, br: br, writeTimeout: cfg.WriteTimeout}, nil
}

func (c *wsCarrier) send(b []byte) error { return c.write(ws.OpBinary, b) }

// write writes one masked frame.
func (c *wsCarrier) write(op ws.OpCode, b []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var mask [4]byte
	_, _ = rand.Read(mask[:])
	h := ws.Header{Fin: true, OpCode: op, Masked: true, Mask: mask, Length: int64(len(b))}
	out := c.out[:0]
	out = appendHeader(out, h)
	start := len(out)
	out = append(out, b...)
	ws.Cipher(out[start:], mask, 0)
	if cap(out) <= 4096 {
		c.out = out
	}
	_ = c.nc.SetWriteDeadline(time.Now().Add(c.writeTimeout))
	_, err := c.nc.Write(out)
	return err
}

// appendHeader appends a client frame header (RFC 6455 §5.2).
func appendHeader(b []byte, h ws.Header) []byte {
	b0 := byte(h.OpCode)
	if h.Fin {
		b0 |= 0x80
	}
	switch n := h.Length; {
	case n < 126:
		b = append(b, b0, 0x80|byte(n))
	case n <= 0xFFFF:
		b = append(b, b0, 0x80|126, byte(n>>8), byte(n))
	default:
		b = append(b, b0, 0x80|127, byte(n>>56), byte(n>>48), byte(n>>40), byte(n>>32), byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
	return append(b, h.Mask[:]...)
}

// recv returns the next binary message. A message longer than buf is
// read and dropped.
func (c *wsCarrier) recv(buf []byte) (int, error) {
	n, tooLong := 0, false
	for {
		h, err := ws.ReadHeader(c.br)
		if err != nil {
			return 0, err
		}
		if h.OpCode.IsControl() {
			if h.Length > int64(len(c.ctl)) {
				return 0, errors.New("relay: websocket control frame too long")
			}
			p := c.ctl[:h.Length]
			if _, err := io.ReadFull(c.br, p); err != nil {
				return 0, err
			}
			if h.Masked {
				ws.Cipher(p, h.Mask, 0)
			}
			switch h.OpCode {
			case ws.OpPing:
				if err := c.write(ws.OpPong, p); err != nil {
					return 0, err
				}
			case ws.OpClose:
				_ = c.write(ws.OpClose, nil)
				return 0, fmt.Errorf("relay: websocket closed by the relay: %w", io.EOF)
			}
			continue
		}
		if h.Masked {
			return 0, errors.New("relay: websocket frame from the relay is masked")
		}
		if h.OpCode != ws.OpContinuation {
			n, tooLong = 0, h.OpCode != ws.OpBinary // text is not ours: skip it
		}
		if tooLong || int64(n)+h.Length > int64(len(buf)) {
			tooLong = true
			if _, err := io.CopyN(io.Discard, c.br, h.Length); err != nil {
				return 0, err
			}
		} else {
			if _, err := io.ReadFull(c.br, buf[n:n+int(h.Length)]); err != nil {
				return 0, err
			}
			n += int(h.Length)
		}
		if h.Fin {
			if !tooLong {
				return n, nil
			}
			n, tooLong = 0, false
		}
	}
}

func (c *wsCarrier) close() error {
	if c.mu.TryLock() { // a write in progress: close without the frame
		_ = c.nc.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		_, _ = c.nc.Write([]byte{0x88, 0x80, 0, 0, 0, 0}) // close frame, empty, masked with zeros
		c.mu.Unlock()
	}
	err := c.nc.Close()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
