package p2p

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/switchboardgg/switchboard/internal/p2pseal"
	"github.com/switchboardgg/switchboard/internal/sealed"
	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// A punched TCP connection (docs/protocol/p2p.md §20.5) carries frames
//
//	length  u32  12+29 .. 65,507: the sealed datagram's size
//	sealed  a datagram of §11 (marker 0xE1, key id, seq, ciphertext, tag)
//	        sealed with the punch's pair key
//
// whose plaintexts are a routing header with no route flags and a kind's
// fields: PUNCH_PROBE first (each side; the other side's probe opening
// proves it holds the pair key), then MESSAGE, REQUEST, RESPONSE and the
// datagram kinds, PUNCH_PROBE/PUNCH_ACK as keep-alives.

const (
	// tcpDialTimeout bounds one connect of the simultaneous open; the
	// attempts repeat until the punch's deadline.
	tcpDialTimeout = 500 * time.Millisecond
	// tcpRetryGap separates connect attempts refused at once (the other
	// side not connecting yet).
	tcpRetryGap = 50 * time.Millisecond
	// maxTCPFrame is the largest sealed frame on a punched connection.
	maxTCPFrame = sealed.MaxDatagram
	// minTCPFrame is the smallest: a routing header sealed.
	minTCPFrame = sealed.Overhead + p2pwire.MinFrameSize
)

// tcpPath is a punched TCP connection.
type tcpPath struct {
	conn   net.Conn
	remote netip.AddrPort
	side   p2pseal.Side
	cfgWT  time.Duration

	wmu  sync.Mutex
	wbuf []byte // guarded by wmu

	down atomic.Bool
	once sync.Once
}

// write seals plain into one frame and writes it.
func (t *tcpPath) write(plain []byte) error {
	if len(plain) > sealed.MaxPayload {
		return fmt.Errorf("p2p: direct TCP frame of %d bytes over %d: %w", len(plain), sealed.MaxPayload, ErrTooLarge)
	}
	t.wmu.Lock()
	defer t.wmu.Unlock()
	b := append(t.wbuf[:0], 0, 0, 0, 0)
	b, err := t.side.Seal.Seal(b, plain)
	if err != nil {
		return fmt.Errorf("p2p: seal direct TCP frame: %w", err)
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	if cap(b) <= 64<<10 {
		t.wbuf = b
	}
	_ = t.conn.SetWriteDeadline(time.Now().Add(t.cfgWT))
	if _, err := t.conn.Write(b); err != nil {
		t.close()
		return fmt.Errorf("p2p: write direct TCP: %w", err)
	}
	return nil
}

// read reads one frame and opens it into buf.
func (t *tcpPath) read(br *bufio.Reader, frame, buf []byte) ([]byte, []byte, error) {
	hdr, err := br.Peek(4) // not io.ReadFull into an array: it would escape, once per frame
	if err != nil {
		return frame, nil, err
	}
	n := int(binary.BigEndian.Uint32(hdr))
	_, _ = br.Discard(4)
	if n < minTCPFrame || n > maxTCPFrame {
		return frame, nil, fmt.Errorf("p2p: direct TCP frame of %d bytes outside %d..%d", n, minTCPFrame, maxTCPFrame)
	}
	if cap(frame) < n {
		frame = make([]byte, n)
	}
	frame = frame[:n]
	if _, err := io.ReadFull(br, frame); err != nil {
		return frame, nil, err
	}
	plain, _, err := t.side.Open.Open(buf[:0], frame)
	if err != nil {
		return frame, nil, fmt.Errorf("p2p: direct TCP frame does not open: %w", err)
	}
	return frame, plain, nil
}

func (t *tcpPath) close() {
	t.once.Do(func() {
		t.down.Store(true)
		_ = t.conn.Close()
	})
}

func (t *tcpPath) dead() bool { return t.down.Load() }

// reuseControl sets SO_REUSEADDR and SO_REUSEPORT: both sides of a TCP
// punch bind their registered port for every attempt (and for punches
// to other peers) while earlier sockets may linger.
func reuseControl(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = errors.Join(
			unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1),
			unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1))
	})
	return errors.Join(err, serr)
}

// dialSimultaneous connects from local to remote, again and again until
// ctx ends: the two sides' SYNs cross (TCP simultaneous open), or one
// side's SYN reaches the other while it is connecting. Without a NAT in
// between (one machine, one LAN) a SYN that arrives between two attempts
// is refused at once and the attempts could keep missing each other, so
// it also listens on local for the duration and takes a connection from
// remote: the two ends have one address pair, so however it opens there
// is only one connection, and both sides get that one.
func dialSimultaneous(ctx context.Context, local, remote netip.AddrPort) (net.Conn, error) {
	accepted := make(chan net.Conn, 1)
	lc := net.ListenConfig{Control: reuseControl}
	if ln, err := lc.Listen(ctx, "tcp", local.String()); err == nil { // without it: connect only
		done := make(chan struct{})
		defer func() {
			_ = ln.Close()
			<-done
			select {
			case c := <-accepted: // accepted after the dial won: not ours
				_ = c.Close()
			default:
			}
		}()
		go func() {
			defer close(done)
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				ap, _ := netip.ParseAddrPort(c.RemoteAddr().String())
				if netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()) != remote {
					_ = c.Close() // not the other side
					continue
				}
				select {
				case accepted <- c:
				default:
					_ = c.Close()
				}
			}
		}()
	}
	d := net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(local), Control: reuseControl}
	for {
		actx, cancel := context.WithTimeout(ctx, tcpDialTimeout)
		c, err := d.DialContext(actx, "tcp", remote.String())
		cancel()
		if err == nil {
			return c, nil
		}
		select {
		case c := <-accepted:
			return c, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(tcpRetryGap):
		}
	}
}

// runTCP connects from the registered UDP port number to the other
// side's public endpoint at the same time as it connects back (the hub
// offered both at once), exchanges PUNCH_PROBEs sealed with the pair key
// on the connection, and installs it as the direct path.
func (a *attempt) runTCP(ctx context.Context) error {
	p := a.pp.p
	local := p.udpLocal()
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-a.pp.stop:
			cancel()
		case <-dctx.Done():
		}
	}()
	conn, err := dialSimultaneous(dctx, local, a.offer.Public)
	if err != nil {
		return ErrPunchFailed
	}
	tp := &tcpPath{conn: conn, remote: a.offer.Public, side: a.side, cfgWT: p.cfg.WriteTimeout}
	if ap, ok := netip.ParseAddrPort(conn.RemoteAddr().String()); ok == nil {
		tp.remote = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	probe, _ := (&p2pwire.PunchProbe{PunchID: a.offer.PunchID, Target: tp.remote}).AppendTo(nil)
	if err := tp.write(probe); err != nil {
		tp.close()
		return ErrPunchFailed
	}
	dl, _ := dctx.Deadline()
	_ = conn.SetReadDeadline(dl)
	br := bufio.NewReaderSize(conn, 64<<10)
	_, plain, err := tp.read(br, nil, make([]byte, 0, 256))
	var m p2pwire.PunchProbe
	if err != nil || m.Unmarshal(plain) != nil || m.PunchID != a.offer.PunchID {
		tp.close()
		return ErrPunchFailed
	}
	_ = conn.SetReadDeadline(time.Time{})
	// Under the puncher's lock, with the attempt still live: the stop
	// and forget close what they find installed, so nothing installed
	// after them may survive.
	a.pp.mu.Lock()
	if a.pp.closed || a.pp.live[a.offer.PunchID] != a {
		a.pp.mu.Unlock()
		tp.close()
		return ErrPunchFailed
	}
	a.tcp.Store(tp)
	a.d.writeTCP = tp.write
	a.d.up.Store(true)
	a.pp.wg.Add(1)
	a.pp.mu.Unlock()
	p.setDirectPath(a.d)
	go a.readTCP(br)
	return nil
}

// readTCP reads the punched connection until it fails: messages go to
// Messages, datagram kinds to the UDP side's dispatch, probes are
// answered and acks keep the path alive.
func (a *attempt) readTCP(br *bufio.Reader) {
	p, tp := a.pp.p, a.tcp.Load()
	defer a.pp.wg.Done()
	defer tp.close()
	frame := make([]byte, 0, 4<<10)
	buf := make([]byte, 0, 4<<10)
	for {
		var plain []byte
		var err error
		frame, plain, err = tp.read(br, frame, buf)
		if err != nil {
			return
		}
		if cap(plain) > cap(buf) {
			buf = plain[:0]
		}
		rt, err := p2pwire.DecodeRouting(plain)
		if err != nil || rt.Flags != 0 {
			return // the other end breaks the protocol: drop the path
		}
		switch rt.Kind {
		case p2pwire.KindPunchProbe:
			var m p2pwire.PunchProbe
			if m.Unmarshal(plain) == nil && m.PunchID == a.offer.PunchID {
				ack, _ := (&p2pwire.PunchAck{PunchID: m.PunchID, Target: m.Target, Observed: tp.remote}).AppendTo(nil)
				_ = tp.write(ack)
			}
		case p2pwire.KindPunchAck:
			a.mu.Lock()
			a.lastAck = time.Now()
			a.mu.Unlock()
		case p2pwire.KindMessage, p2pwire.KindRequest:
			var m p2pwire.Msg // REQUEST has the same layout
			if rt.Kind == p2pwire.KindRequest {
				var r p2pwire.Request
				err = r.Unmarshal(plain)
				m = p2pwire.Msg(r)
			} else {
				err = m.Unmarshal(plain)
			}
			if err != nil {
				return
			}
			p.deliver(&Message{From: a.d.peer, id: m.MessageID, p: p, Path: PathDirectTCP,
				Envelope: Envelope{Header: m.Header, Pairs: m.Pairs, Payload: append([]byte(nil), m.Payload...)}})
		case p2pwire.KindResponse:
			var m p2pwire.Response
			if m.Unmarshal(plain) != nil {
				return
			}
			p.answer(m.MessageID, a.d.peer, &response{msg: &Message{From: a.d.peer, p: p, Path: PathDirectTCP,
				Envelope: Envelope{Header: m.Header, Pairs: m.Pairs, Payload: append([]byte(nil), m.Payload...)}}})
		default:
			if rt.Kind.OnDatagram() {
				p.dispatchDatagram(PathDirectTCP, a.d.peer, netip.AddrPort{}, a.offer.KeyID, plain, time.Now())
			}
		}
	}
}

// sendDirectStream sends a MESSAGE, REQUEST or RESPONSE to peer to on its
// punched TCP connection when one is up, and reports whether it did; the
// caller sends through the hub otherwise (also when the write fails, or
// the message is larger than a direct frame).
func (p *Peer) sendDirectStream(kind p2pwire.Kind, to string, e *p2pwire.Envelope) bool {
	if p.udp == nil {
		return false
	}
	d := p.directPath(to)
	if d == nil || d.path != PathDirectTCP || !d.up.Load() || d.writeTCP == nil {
		return false
	}
	var m p2pwire.Message
	switch kind {
	case p2pwire.KindRequest:
		m = &p2pwire.Request{Envelope: *e}
	case p2pwire.KindResponse:
		m = &p2pwire.Response{Envelope: *e}
	default:
		m = &p2pwire.Msg{Envelope: *e}
	}
	plain, err := m.AppendTo(nil)
	if err != nil || len(plain) > sealed.MaxPayload {
		return false
	}
	return d.writeTCP(plain) == nil
}
