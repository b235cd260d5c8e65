package relay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/dtls/v3"
	"github.com/pion/logging"

	"github.com/switchboardgg/switchboard/protocol/relaywire"
)

// pionSuites returns relaywire.DTLSCipherSuites as pion names them.
func pionSuites() []dtls.CipherSuiteID {
	out := make([]dtls.CipherSuiteID, len(relaywire.DTLSCipherSuites))
	for i, id := range relaywire.DTLSCipherSuites {
		out[i] = dtls.CipherSuiteID(id)
	}
	return out
}

// DTLS record layer constants (RFC 6347 §4.1, §4.2.2): a new source's
// first datagram must start with a handshake record of epoch 0 holding a
// ClientHello.
const (
	dtlsRecordHeader    = 13
	dtlsContentHS       = 22
	dtlsHandshakeHeader = 12
	dtlsClientHello     = 1
	dtlsHelloVerify     = 3
)

// ServeDTLS serves relay messages over DTLS 1.2 on pc (docs/protocol/relay.md
// §16): one relay message per DTLS record, the allocation's key as the
// pre-shared key, the allocation id as the PSK identity (its 16 bytes, as
// Unity Transport sends it, or its canonical UUID text, as Unity's docs
// say). The key is derived from the identity alone
// (tokens.RelayKeyring.AllocationKeyOfID), so a handshake needs no lookup;
// a connection binds only the allocation its identity names.
//
// pc's reader (the calling goroutine) demultiplexes datagrams by source
// address; a new source must open with a ClientHello, and is answered
// with a HelloVerifyRequest (a cookie) before the handshake goes on, so a
// spoofed source gets one datagram smaller than its ClientHello. Each
// connection runs one goroutine (handshake, then reads). Handshakes are
// bounded by Config.DTLSHandshakeTimeout (Config.DTLSCookieTimeout until
// the source echoes the cookie), Config.MaxDTLSHandshakes and
// Config.MaxDTLSHandshakesPerIP, connections by Config.MaxDTLSConns and
// Config.DTLSIdleTimeout and, per allocation, Config.MaxDTLSConnsPerAllocation;
// a connection is closed when the allocation
// bound over it is released. It returns ErrServerClosed after Close; the
// server closes pc then.
func (s *Server) ServeDTLS(pc net.PacketConn) error {
	if !s.track(pc, nil) {
		return ErrServerClosed
	}
	d := &dtlsSocket{s: s, pc: pc}
	d.uc, _ = pc.(*net.UDPConn)
	if d.uc != nil && s.cfg.ReadBuffer > 0 {
		_ = d.uc.SetReadBuffer(s.cfg.ReadBuffer) // the kernel may cap it (docs/configuration.md)
		_ = d.uc.SetWriteBuffer(s.cfg.WriteBuffer)
	}
	src := newSourceTable(4096, &s.cfg)
	buf := make([]byte, 65536)
	for {
		n, ap, err := d.read(buf)
		if err != nil {
			select {
			case <-s.done:
				return ErrServerClosed
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("relay: reading DTLS: %w", err)
		}
		d.dispatch(ap, buf[:n], src)
	}
}

// dtlsSocket is one UDP socket of the DTLS carrier.
type dtlsSocket struct {
	s  *Server
	pc net.PacketConn
	uc *net.UDPConn // pc when it is one
}

func (d *dtlsSocket) read(buf []byte) (int, netip.AddrPort, error) {
	if d.uc != nil {
		return d.uc.ReadFromUDPAddrPort(buf)
	}
	n, a, err := d.pc.ReadFrom(buf)
	ua, _ := a.(*net.UDPAddr)
	if ua == nil {
		return n, netip.AddrPort{}, err
	}
	return n, ua.AddrPort(), err
}

func (d *dtlsSocket) write(b []byte, ap netip.AddrPort) (int, error) {
	if d.uc != nil {
		return d.uc.WriteToUDPAddrPort(b, ap)
	}
	return d.pc.WriteTo(b, net.UDPAddrFromAddrPort(ap))
}

// dtlsKey names a DTLS connection: its socket and its peer's address.
type dtlsKey struct {
	d  *dtlsSocket
	ap netip.AddrPort
}

// dtlsTable is every DTLS connection of a server and the handshakes under
// way, guarded by its mutex.
type dtlsTable struct {
	mu     sync.Mutex
	conns  map[dtlsKey]*dtlsConn
	hs     int                            // handshakes under way
	hsByIP map[netip.Addr]int             // handshakes under way per source address
	byID   map[relaywire.AllocationID]int // connections past the handshake per allocation
}

// dispatch hands a datagram to its connection, or starts one for a new
// source whose datagram is a ClientHello, within the limits.
func (d *dtlsSocket) dispatch(ap netip.AddrPort, b []byte, src *sourceTable) {
	s := d.s
	t := &s.dtls
	k := dtlsKey{d, ap}
	t.mu.Lock()
	c := t.conns[k]
	t.mu.Unlock()
	if c != nil {
		if !c.echoed.Load() && c.echoes(b) {
			c.echoed.Store(true)
		}
		c.push(b)
		return
	}
	if !isClientHello(b) {
		s.m.drops[dropDTLSNotHello].Inc()
		return
	}
	if !src.allow(ap, s.cfg.Now().UnixNano()) {
		s.m.drops[dropSourceRate].Inc()
		return
	}
	ip := handshakeSource(ap)
	t.mu.Lock()
	switch {
	case len(t.conns) >= s.cfg.MaxDTLSConns || t.hs >= s.cfg.MaxDTLSHandshakes ||
		t.hsByIP[ip] >= s.cfg.MaxDTLSHandshakesPerIP:
		t.mu.Unlock()
		s.m.drops[dropDTLSHandshakes].Inc()
		return
	}
	s.mu.Lock()
	if s.closed || s.shutting {
		s.mu.Unlock()
		t.mu.Unlock()
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	c = &dtlsConn{
		s:    s,
		d:    d,
		ap:   ap,
		ip:   ip,
		in:   make(chan []byte, s.cfg.DTLSQueue),
		free: make(chan []byte, s.cfg.DTLSQueue),
		done: make(chan struct{}),
		dl:   make(chan struct{}),
	}
	if t.conns == nil {
		t.conns = make(map[dtlsKey]*dtlsConn)
		t.hsByIP = make(map[netip.Addr]int)
		t.byID = make(map[relaywire.AllocationID]int)
	}
	t.conns[k] = c
	t.hs++
	t.hsByIP[ip]++
	t.mu.Unlock()
	s.m.dtlsConns.Inc()
	c.push(b)
	go c.run()
}

// handshakeSource is what MaxDTLSHandshakesPerIP counts by: an IPv4
// address, or an IPv6 /64 (what one host or subscriber gets, as the game
// node counts its pending connections).
func handshakeSource(ap netip.AddrPort) netip.Addr {
	a := ap.Addr().Unmap()
	if a.Is4() {
		return a
	}
	p, _ := a.Prefix(64)
	return p.Addr()
}

// isClientHello reports whether b starts with a DTLS handshake record of
// epoch 0 whose first message is a ClientHello.
func isClientHello(b []byte) bool {
	return len(b) >= dtlsRecordHeader+dtlsHandshakeHeader &&
		b[0] == dtlsContentHS && b[3] == 0 && b[4] == 0 && // epoch 0
		b[dtlsRecordHeader] == dtlsClientHello
}

// hvrCookie returns the cookie of b when b starts with a handshake record
// of epoch 0 holding a HelloVerifyRequest (RFC 6347 §4.2.1).
func hvrCookie(b []byte) ([]byte, bool) {
	const at = dtlsRecordHeader + dtlsHandshakeHeader + 2 // past server_version
	if len(b) <= at || b[0] != dtlsContentHS || b[3] != 0 || b[4] != 0 || b[dtlsRecordHeader] != dtlsHelloVerify {
		return nil, false
	}
	n := int(b[at])
	if len(b) < at+1+n {
		return nil, false
	}
	return b[at+1 : at+1+n], true
}

// helloCookie returns the cookie of b when b starts with a ClientHello
// record (RFC 6347 §4.2.1: version, random, session id, cookie).
func helloCookie(b []byte) ([]byte, bool) {
	if !isClientHello(b) {
		return nil, false
	}
	at := dtlsRecordHeader + dtlsHandshakeHeader + 2 + 32 // the session id's length
	if len(b) <= at {
		return nil, false
	}
	at += 1 + int(b[at]) // the cookie's length
	if len(b) <= at {
		return nil, false
	}
	n := int(b[at])
	if len(b) < at+1+n {
		return nil, false
	}
	return b[at+1 : at+1+n], true
}

// echoes reports whether b is a ClientHello with the cookie c sent.
func (c *dtlsConn) echoes(b []byte) bool {
	sent := c.cookie.Load()
	got, ok := helloCookie(b)
	return sent != nil && ok && len(got) > 0 && bytes.Equal(got, *sent)
}

// dtlsConn is one DTLS connection: a carrier for the allocation its PSK
// identity names. To pion it is the net.PacketConn of one peer: the
// socket's reader pushes the peer's datagrams into a bounded queue (a
// full queue drops, as UDP would) and writes go straight to the socket.
type dtlsConn struct {
	// immutable after dispatch
	s    *Server
	d    *dtlsSocket
	ap   netip.AddrPort
	ip   netip.Addr    // handshakeSource of ap
	in   chan []byte   // datagrams from the peer, bounded by Config.DTLSQueue
	free chan []byte   // spent buffers, for reuse
	done chan struct{} // closed by stop

	conn atomic.Pointer[dtls.Conn] // set once the handshake is done

	// cookie is the HelloVerifyRequest's cookie (set by WriteTo, read by
	// the socket's reader); echoed is set once a ClientHello came back
	// with it: the source is not spoofed.
	cookie atomic.Pointer[[]byte]
	echoed atomic.Bool
	bound  atomic.Bool            // an allocation was bound over c (noteBound)
	id     relaywire.AllocationID // the PSK identity; written before conn is set

	dlMu sync.Mutex
	dl   chan struct{} // closed when the read deadline passes; guarded by dlMu
	dlT  *time.Timer   // guarded by dlMu

	stopOnce sync.Once
}

func (c *dtlsConn) kind() string { return "dtls" }

// send encrypts b into one record and writes it; it never waits for the
// peer.
func (c *dtlsConn) send(_ netip.AddrPort, b []byte) bool {
	conn := c.conn.Load()
	if conn == nil {
		return false
	}
	_, err := conn.Write(b)
	return err == nil
}

// push queues a datagram from the peer.
func (c *dtlsConn) push(b []byte) {
	var buf []byte
	select {
	case buf = <-c.free:
	default:
		buf = make([]byte, 0, len(b))
	}
	buf = append(buf[:0], b...)
	select {
	case c.in <- buf:
	default:
		c.s.m.drops[dropDTLSQueue].Inc()
	}
}

func (c *dtlsConn) stop() { c.stopOnce.Do(func() { close(c.done) }) }

// ReadFrom is pion's read of the peer's next datagram.
func (c *dtlsConn) ReadFrom(b []byte) (int, net.Addr, error) {
	c.dlMu.Lock()
	dl := c.dl
	c.dlMu.Unlock()
	select {
	case buf := <-c.in:
		n := copy(b, buf)
		select {
		case c.free <- buf:
		default:
		}
		return n, net.UDPAddrFromAddrPort(c.ap), nil
	case <-c.done:
		return 0, nil, net.ErrClosed
	case <-dl:
		return 0, nil, os.ErrDeadlineExceeded
	}
}

// WriteTo is pion's write of one datagram to the peer; it works after
// stop, so that the close_notify of pion's Close leaves.
func (c *dtlsConn) WriteTo(b []byte, _ net.Addr) (int, error) {
	if c.cookie.Load() == nil {
		if ck, ok := hvrCookie(b); ok {
			ck = append([]byte(nil), ck...)
			c.cookie.Store(&ck)
		}
	}
	n, err := c.d.write(b, c.ap)
	if err != nil {
		c.s.m.drops[dropSendFailed].Inc()
	}
	return n, err
}

// Close ends the connection's reads; the socket stays the server's.
func (c *dtlsConn) Close() error { c.stop(); return nil }

// LocalAddr is the socket's address.
func (c *dtlsConn) LocalAddr() net.Addr { return c.d.pc.LocalAddr() }

// SetDeadline sets the read deadline; writes never wait.
func (c *dtlsConn) SetDeadline(t time.Time) error { return c.SetReadDeadline(t) }

// SetWriteDeadline does nothing: a write goes straight to the socket.
func (c *dtlsConn) SetWriteDeadline(time.Time) error { return nil }

// SetReadDeadline makes a pending and future ReadFrom return
// os.ErrDeadlineExceeded at t (pion interrupts reads with a past time).
func (c *dtlsConn) SetReadDeadline(t time.Time) error {
	c.dlMu.Lock()
	defer c.dlMu.Unlock()
	if c.dlT != nil {
		c.dlT.Stop()
		c.dlT = nil
	}
	select {
	case <-c.dl:
		c.dl = make(chan struct{})
	default:
	}
	if t.IsZero() {
		return nil
	}
	ch := c.dl
	expire := func() {
		c.dlMu.Lock()
		defer c.dlMu.Unlock()
		if c.dl == ch {
			select {
			case <-ch:
			default:
				close(ch)
			}
		}
	}
	if d := time.Until(t); d > 0 {
		c.dlT = time.AfterFunc(d, expire)
		return nil
	}
	close(ch)
	return nil
}

// psk is the server's PSK callback: the key of the allocation the
// identity names, derived from the id (no lookup).
func (c *dtlsConn) psk(identity []byte) ([]byte, error) {
	id, err := relaywire.ParseDTLSIdentity(identity)
	if err != nil {
		return nil, err
	}
	k, err := c.s.cfg.Keys.AllocationKeyOfID(id)
	if err != nil {
		return nil, fmt.Errorf("relay: DTLS identity %s: %w", relaywire.AllocationID(id), err)
	}
	if c.s.pskLen > 0 { // tests only: a client library that caps PSKs
		return k[:c.s.pskLen], nil
	}
	return k[:], nil
}

// handshakeDone ends c's handshake in the table's counts, once.
func (c *dtlsConn) handshakeDone(t *dtlsTable) {
	t.mu.Lock()
	t.hs--
	if t.hsByIP[c.ip]--; t.hsByIP[c.ip] <= 0 {
		delete(t.hsByIP, c.ip)
	}
	t.mu.Unlock()
}

// run handshakes, then reads one relay message per record until the peer
// closes, idles past Config.DTLSIdleTimeout, or the connection is stopped.
func (c *dtlsConn) run() {
	s := c.s
	t := &s.dtls
	handshaking := true
	defer func() {
		c.stop()
		if handshaking {
			c.handshakeDone(t)
		}
		t.mu.Lock()
		delete(t.conns, dtlsKey{c.d, c.ap})
		t.mu.Unlock()
		s.m.dtlsConns.Dec()
		s.wg.Done()
	}()
	conn, err := dtls.ServerWithOptions(c, net.UDPAddrFromAddrPort(c.ap),
		dtls.WithPSK(c.psk),
		dtls.WithCipherSuites(pionSuites()...),
		dtls.WithExtendedMasterSecret(dtls.RequestExtendedMasterSecret),
		dtls.WithMTU(s.cfg.MaxDatagram+dtlsOverhead),
		dtls.WithLoggerFactory(&logging.DefaultLoggerFactory{Writer: io.Discard, DefaultLogLevel: logging.LogLevelDisabled}),
	)
	if err != nil {
		s.log.Warn("relay: DTLS server", "err", err)
		return
	}
	defer conn.Close() // sends close_notify while the socket is open
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.DTLSHandshakeTimeout)
	// A source that has not echoed the cookie by DTLSCookieTimeout is
	// spoofed, or starts over with a new ClientHello: its slot comes back.
	cookieT := time.AfterFunc(s.cfg.DTLSCookieTimeout, func() {
		if !c.echoed.Load() {
			cancel()
		}
	})
	go func() { // ends with the handshake: stop interrupts it
		select {
		case <-c.done:
		case <-ctx.Done():
		}
		cancel()
	}()
	err = conn.HandshakeContext(ctx)
	cookieT.Stop()
	cancel()
	c.handshakeDone(t)
	handshaking = false
	if err != nil {
		s.m.dtlsHandshakes[dtlsHandshakeFailed].Inc()
		s.log.Debug("relay: DTLS handshake failed", "remote", c.ap, "err", err)
		return
	}
	st, _ := conn.ConnectionState()
	id, err := relaywire.ParseDTLSIdentity(st.IdentityHint)
	if err != nil { // the PSK callback accepted it
		return
	}
	// A released allocation's key still derives from its id: its former
	// holder handshakes, but could bind nothing; it holds no connection.
	if _, ok := s.released.Load(id); ok {
		s.m.dtlsHandshakes[dtlsHandshakeRefused].Inc()
		return
	}
	// An allocation needs one connection (two while it re-binds): more
	// would let one key holder fill MaxDTLSConns.
	t.mu.Lock()
	full := t.byID[id] >= s.cfg.MaxDTLSConnsPerAllocation
	if !full {
		t.byID[id]++
	}
	t.mu.Unlock()
	if full {
		s.m.dtlsHandshakes[dtlsHandshakeRefused].Inc()
		return
	}
	defer func() {
		t.mu.Lock()
		if t.byID[id]--; t.byID[id] <= 0 {
			delete(t.byID, id)
		}
		t.mu.Unlock()
	}()
	c.id = id
	c.conn.Store(conn)
	s.m.dtlsHandshakes[dtlsHandshakeOK].Inc()

	w := s.newWorker(newSourceTable(1, &s.cfg))
	ep := endpoint{c: c}
	buf := make([]byte, s.cfg.MaxDatagram+1)
	// A client binds first thing (BIND, retried while unanswered): a
	// connection that has bound nothing by then is closed, however much
	// it sends, so that a key holder cannot keep idle connections.
	bindBy := time.Now().Add(s.cfg.DTLSHandshakeTimeout)
	for {
		// Silence is tolerated as long as its allocation tolerates it (an
		// allocation's own idle timeout may be longer: a long scene load).
		idle := s.cfg.DTLSIdleTimeout
		if a := s.lookup(c.id); a != nil && a.idle > idle {
			idle = a.idle
		}
		dl := time.Now().Add(idle)
		if !c.bound.Load() {
			if !time.Now().Before(bindBy) {
				w.drop(dropDTLSUnbound)
				return
			}
			if bindBy.Before(dl) {
				dl = bindBy
			}
		}
		_ = conn.SetReadDeadline(dl)
		n, err := conn.Read(buf)
		if err != nil {
			var te *dtls.TemporaryError
			if errors.As(err, &te) && !te.Timeout() {
				w.drop(dropTooLarge) // a record over MaxDatagram
				continue
			}
			if !c.bound.Load() && !time.Now().Before(bindBy) {
				w.drop(dropDTLSUnbound)
			}
			return
		}
		w.handle(ep, buf[:n])
	}
}

// dtlsOverhead is the most a DTLS 1.2 record adds to a relay message: a
// 13-byte header, an 8-byte explicit nonce, a 16-byte tag (AEAD), or IV,
// MAC and padding (CBC with SHA-256: 16 + 32 + 16).
const dtlsOverhead = 13 + 16 + 32 + 16

// dtlsReleased closes the DTLS connection an allocation was bound over.
func dtlsReleased(ep *endpoint) {
	if ep == nil {
		return
	}
	if c, ok := ep.c.(*dtlsConn); ok {
		c.stop()
	}
}

// dtlsStopAll stops every DTLS connection (Close and Shutdown).
func (s *Server) dtlsStopAll() {
	s.dtls.mu.Lock()
	defer s.dtls.mu.Unlock()
	for _, c := range s.dtls.conns {
		c.stop()
	}
}
