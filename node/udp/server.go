package udp

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/switchboardgg/switchboard/internal/kcploop"
	"github.com/switchboardgg/switchboard/internal/sealed"
	"github.com/switchboardgg/switchboard/internal/udpio"
	"github.com/switchboardgg/switchboard/node"
	"github.com/switchboardgg/switchboard/protocol/roomudp"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
	"github.com/switchboardgg/switchboard/rooms"
)

// hsKey names a connection attempt: its key id and client nonce.
type hsKey struct {
	kid   roomudp.KeyID
	nonce [roomudp.NonceSize]byte
}

// Server is the UDP transport of one game node.
type Server struct {
	// immutable after New
	cfg    Config
	log    *slog.Logger
	secret [roomudp.KeySize]byte
	m      *metrics
	loop   *kcploop.Loop
	conv   kcploop.ConvConfig
	maxIn  int           // largest message a client may send
	hsLim  *rate.Limiter // new HANDSHAKEs whose keys are derived; the reader's only

	srcLim *sourceLimiter // the same per source, in front of hsLim (nil: none); the reader's only

	mu       sync.Mutex
	sessions map[uint32]*session // by conv: seated sessions
	pending  map[hsKey]*session  // by attempt: every session and refused handshake, until forgotten
	refused  int                 // refused handshakes in pending, at most Config.MaxPending
	closed   bool
	pc       *net.UDPConn
	cancel   context.CancelFunc

	out outQueue
	wg  sync.WaitGroup
}

// New checks cfg and returns a Server; it starts nothing and registers
// the metrics.
func New(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	loop, err := kcploop.New(kcploop.Config{Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("udp: %w", err)
	}
	kmtu := cfg.MTU - roomudp.SessionOverhead
	s := &Server{
		cfg:    cfg,
		log:    cfg.Logger,
		secret: cfg.Signer.Derive(roomudp.SecretLabel),
		m:      newMetrics(),
		loop:   loop,
		conv: kcploop.ConvConfig{
			MTU: kmtu, SendWindow: roomudp.KCPWindow, RecvWindow: roomudp.KCPWindow,
			SendQueue: cfg.SendQueue, MaxMessage: 255 * (kmtu - kcploop.Overhead),
			NoDelay: true, Interval: roomudp.KCPInterval,
		},
		maxIn:    node.DefaultReadLimit,
		hsLim:    rate.NewLimiter(rate.Limit(cfg.HandshakeRate), cfg.HandshakeBurst),
		sessions: map[uint32]*session{},
		pending:  map[hsKey]*session{},
	}
	if cfg.SourceHandshakeRate > 0 {
		s.srcLim = newSourceLimiter(cfg.SourceHandshakeRate, cfg.SourceHandshakeBurst, cfg.MaxHandshakeSources)
	}
	s.out.init(cfg.OutQueue)
	if cfg.Registerer != nil {
		for _, c := range s.m.all {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("udp: register metrics: %w", err)
			}
		}
	}
	return s, nil
}

// Serve serves pc until Close; it returns ErrClosed then, or the socket's
// error. Close closes pc.
func (s *Server) Serve(pc *net.UDPConn) error {
	uc, err := udpio.New(pc, udpio.Config{Batch: s.cfg.Batch})
	if err != nil {
		return fmt.Errorf("udp: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.mu.Lock()
	if s.closed || s.pc != nil {
		s.mu.Unlock()
		cancel()
		return ErrClosed
	}
	s.pc, s.cancel = pc, cancel
	s.mu.Unlock()
	s.wg.Go(func() { _ = s.loop.Run(ctx) })
	s.wg.Go(func() { s.writeLoop(ctx, uc) })
	s.wg.Go(func() { s.janitor(ctx) })
	s.log.Info("game node serving UDP", "addr", pc.LocalAddr().String(), "mtu", s.cfg.MTU)
	err = s.readLoop(uc)
	if ctx.Err() != nil {
		return ErrClosed
	}
	return fmt.Errorf("udp: read: %w", err)
}

// Shutdown waits until every session's KCP has delivered what it holds
// (the ERROR 10 node_draining that the node's drain queued, say), at most
// Config.Linger or until ctx ends, then calls Close. Closing at once would
// drop what KCP had not flushed yet, and a player would learn of the drain
// only from the silence.
func (s *Server) Shutdown(ctx context.Context) error {
	t := time.NewTimer(s.cfg.Linger)
	defer t.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for s.unacknowledged() {
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), s.Close())
		case <-t.C:
			return s.Close()
		case <-tick.C:
		}
	}
	return s.Close()
}

// unacknowledged reports whether a session's KCP holds data its client
// has not acknowledged.
func (s *Server) unacknowledged() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ss := range s.pending {
		if ss.kcp != nil && ss.kcp.Pending() > 0 {
			return true
		}
	}
	return false
}

// Close closes the socket, stops the goroutines, waits for them and
// forgets every session; their seats go offline. What KCP has not
// delivered is lost: Shutdown waits for it first.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	pc, cancel := s.pc, s.cancel
	all := make([]*session, 0, len(s.pending))
	for _, ss := range s.pending {
		all = append(all, ss)
	}
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	var err error
	if pc != nil {
		err = pc.Close()
	}
	_ = s.loop.Close()
	s.wg.Wait()
	for _, ss := range all {
		s.end(ss, rooms.ReasonNetwork)
	}
	return err
}

// readLoop reads batches of datagrams and handles each; it returns the
// socket's error.
func (s *Server) readLoop(uc *udpio.Conn) error {
	r := &reader{
		s:     s,
		msgs:  make([]udpio.Message, uc.Batch()),
		plain: make([]byte, roomudp.MaxDatagram),
		recv:  make([]byte, s.maxIn),
	}
	for i := range r.msgs {
		r.msgs[i].Buf = make([]byte, roomudp.MaxDatagram+1) // +1: a longer datagram shows as too long
	}
	for {
		n, err := uc.ReadBatch(r.msgs)
		if err != nil {
			return err
		}
		s.m.in.Add(float64(n))
		for i := range n {
			m := &r.msgs[i]
			r.handle(m.Buf[:m.N], m.Addr)
		}
	}
}

// reader is what the reading goroutine owns.
type reader struct {
	s     *Server
	msgs  []udpio.Message
	plain []byte // an opened payload
	recv  []byte // a KCP message
}

func (r *reader) drop(reason string) { r.s.m.drop[reason].Inc() }

func (r *reader) handle(d []byte, from netip.AddrPort) {
	switch {
	case len(d) == 0:
		r.drop(dropShort)
	case len(d) > roomudp.MaxDatagram:
		r.drop(dropSize)
	case d[0] == roomudp.KindHandshake:
		r.handshake(d, from)
	case d[0] == roomudp.KindSession:
		r.session(d, from)
	default:
		r.drop(dropKind)
	}
}

// session handles a SESSION datagram.
func (r *reader) session(d []byte, from netip.AddrPort) {
	s := r.s
	h, err := sealed.ParseHeader(d)
	if err != nil {
		r.drop(dropShort)
		return
	}
	s.mu.Lock()
	ss := s.sessions[h.KeyID]
	s.mu.Unlock()
	if ss == nil {
		r.drop(dropUnknownKey)
		return
	}
	p, seq, err := ss.open.Open(r.plain[:0], d)
	switch {
	case errors.Is(err, sealed.ErrReplay):
		r.drop(dropReplay)
		return
	case err != nil:
		r.drop(dropAuth)
		return
	}
	ss.heard(seq, from, len(d))
	if !ss.lim.AllowN(time.Now(), len(d)) { // after authentication: a forger cannot spend it
		r.drop(dropRate)
		return
	}
	ch, body, err := roomudp.ParseSession(p)
	if err != nil {
		r.drop(dropInvalid)
		return
	}
	if ch == roomudp.ChannelMessage {
		if !roomudp.Unreliable(body, false) {
			r.drop(dropInvalid)
			r.dispatch(ss, nil, false) // counts as an invalid message
			return
		}
		r.dispatch(ss, body, true)
		return
	}
	if ch == roomudp.ChannelInputs {
		r.inputs(ss, body)
		return
	}
	if ch == roomudp.ChannelPathResponse {
		r.pathResponse(ss, body, from)
		return
	}
	if roomudp.CheckDirection(ch, false) != nil { // FRAME, PATH_CHALLENGE: node to client only
		r.drop(dropInvalid)
		r.dispatch(ss, nil, false)
		return
	}
	if err := ss.kcp.Input(body); err != nil {
		if !errors.Is(err, kcploop.ErrClosed) {
			r.drop(dropInvalid)
		}
		return
	}
	for {
		n := ss.kcp.PeekSize()
		if n < 0 {
			return
		}
		if n > len(r.recv) {
			s.log.Debug("udp session sent a message over the read limit", "conv", ss.conv, "size", n)
			ss.fail(roomwire.CodeProtocolUnsupported)
			return
		}
		n, err := ss.kcp.Recv(r.recv)
		if err != nil {
			return
		}
		if !r.dispatch(ss, r.recv[:n], false) {
			return
		}
	}
}

// inputs handles an INPUTS body: each INPUT numbered above the highest
// taken so far goes to the room, oldest first; the others are repeats
// and are counted only. A malformed body is dropped whole and counts as
// an invalid message.
func (r *reader) inputs(ss *session, body []byte) {
	in, err := roomudp.ParseInputs(body)
	if err != nil {
		r.drop(dropInvalid)
		r.dispatch(ss, nil, false)
		return
	}
	taken := ss.inSeq.Load()
	if in.Last() <= taken {
		r.s.m.inputs[inputRepeat].Add(float64(in.Count))
		return
	}
	ss.inSeq.Store(in.Last())
	for {
		seq, msg, ok := in.Next()
		if !ok {
			return
		}
		if seq <= taken {
			r.s.m.inputs[inputRepeat].Inc()
			continue
		}
		r.s.m.inputs[inputTaken].Inc()
		if !r.dispatch(ss, msg, true) {
			return
		}
	}
}

// dispatch hands one message to the session's room; p nil counts as an
// invalid message. It reports false once the session is failing.
func (r *reader) dispatch(ss *session, p []byte, unreliable bool) bool {
	if ss.d == nil || ss.isClosing() {
		return false
	}
	var pong *rooms.Msg
	var fatal bool
	if p == nil {
		fatal = ss.d.Invalid()
	} else {
		pong, fatal = ss.d.Dispatch(p)
	}
	if pong != nil {
		if ss.sendPayload(pong.Payload(), unreliable) {
			r.s.cfg.Node.CountSent(pong.Payload())
		}
		pong.Release()
	}
	if fatal {
		ss.fail(roomwire.CodeProtocolUnsupported)
		return false
	}
	return true
}

// handshake handles a HANDSHAKE datagram.
func (r *reader) handshake(d []byte, from netip.AddrPort) {
	s := r.s
	h, err := roomudp.ParseHandshake(d)
	if err != nil {
		r.drop(dropSize)
		return
	}
	key := hsKey{kid: h.KeyID, nonce: h.ClientNonce}
	s.mu.Lock()
	// Refused attempts do not count: anyone holding one C1's session key
	// can make them with fresh nonces.
	prev, busy := s.pending[key], len(s.pending)-s.refused >= s.cfg.MaxPending+s.cfg.MaxSessions
	s.mu.Unlock()
	if prev != nil {
		// A retransmission: the same reply, once per accepted sequence.
		if _, _, err := prev.hsOpen.Open(r.plain[:0], h.Sealed); err != nil {
			if errors.Is(err, sealed.ErrReplay) {
				r.drop(dropReplay)
			} else {
				r.drop(dropAuth)
			}
			return
		}
		if prev.isEstablished() {
			r.drop(dropInvalid)
			return
		}
		prev.resent(from, len(d))
		s.out.pushRaw(s, prev.reply, from)
		s.m.hs[hsResent].Inc()
		return
	}
	var src *sourceEntry // charged once the node-wide limit takes it too
	if s.srcLim != nil {
		var ok bool
		if src, ok = s.srcLim.check(from, s.srcLim.now()); !ok {
			r.drop(dropSourceRate)
			return
		}
	}
	if busy || (s.hsLim != nil && !s.hsLim.Allow()) {
		r.drop(dropBusy)
		return
	}
	if src != nil {
		src.spend()
	}
	sk := roomudp.SessionKey(&s.secret, h.KeyID)
	hk, err := roomudp.HandshakeKeys(&sk, &h.ClientNonce)
	if err != nil {
		r.drop(dropAuth)
		return
	}
	hsOpen, _ := sealed.NewOpener(hk.I2R[:], roomudp.HandshakeKeyID)
	p, _, err := hsOpen.Open(r.plain[:0], h.Sealed)
	if err != nil {
		r.drop(dropAuth)
		return
	}
	hsb, err := roomudp.HandshakeBytes(p)
	if err != nil {
		r.drop(dropInvalid)
		return
	}
	ss := &session{s: s, key: key, sk: sk, hsOpen: hsOpen, created: time.Now(), addr: from,
		lim: rate.NewLimiter(rate.Limit(s.cfg.ReadRate), s.cfg.ReadBurst)}
	if _, err := rand.Read(ss.serverNonce[:]); err != nil {
		r.drop(dropBusy)
		return
	}
	ss.hsSeal, _ = sealed.NewSealer(hk.R2I[:], roomudp.HandshakeKeyID)
	var (
		link *rooms.Link
		code uint8
	)
	hs, err := roomwire.ParseHandshake(hsb)
	switch {
	case err != nil:
		code = roomwire.CodeProtocolUnsupported
	case s.fullSessions():
		code, err = roomwire.CodeNodeDraining, errFull
	default:
		ticketID := ""
		if hs.Kind == roomwire.KindHello {
			ticketID = h.KeyID.String()
		}
		ss.seating.Store(true)
		link, code, err = s.cfg.Node.Seat(hs, ticketID, ss)
		ss.seating.Store(false)
	}
	if err == nil && ss.kcp == nil {
		err, code = errNoWelcome, roomwire.CodeProtocolUnsupported
		link.Disconnected(rooms.ReasonNetwork)
	}
	if err != nil {
		s.log.Debug("udp handshake refused", "code", roomwire.CodeName(code), "err", err) // never the token or key
		em := s.cfg.Node.ErrorMsg(code)
		msg := append([]byte(nil), em.Payload()...)
		em.Release()
		s.m.hs[hsError].Inc()
		s.cfg.Node.CountSent(msg)
		if ss.kcp != nil {
			_ = ss.kcp.Close()
		}
		ss.reply, err = ss.hsSeal.Seal(nil, roomudp.AppendReply(make([]byte, 0, roomudp.NonceSize+len(msg)), &ss.serverNonce, msg))
		if err != nil {
			return
		}
		s.out.pushRaw(s, ss.reply, from)
	} else { // session.start queued the WELCOME's reply
		ss.link, ss.d = link, s.cfg.Node.NewDispatcher(link)
		s.m.hs[hsWelcome].Inc()
	}
	s.mu.Lock()
	switch {
	case ss.link != nil:
		s.pending[key] = ss
		s.sessions[ss.conv] = ss
	case s.refused < s.cfg.MaxPending: // remembered: its retransmissions get the same ERROR
		s.pending[key] = ss
		s.refused++
	} // else a retransmission is handled afresh (and limited by hsLim)
	s.m.sessions.Set(float64(len(s.sessions)))
	s.mu.Unlock()
}

var (
	errFull      = errors.New("udp: too many sessions")
	errNoWelcome = errors.New("udp: seated without a WELCOME")
)

func (s *Server) fullSessions() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions) >= s.cfg.MaxSessions
}

// end forgets ss; when reason is not empty and ss is seated, its seat
// goes offline for that reason.
func (s *Server) end(ss *session, reason string) {
	s.mu.Lock()
	if s.pending[ss.key] == ss {
		delete(s.pending, ss.key)
		if ss.link == nil {
			s.refused--
		}
	}
	if ss.link != nil && s.sessions[ss.conv] == ss {
		delete(s.sessions, ss.conv)
	}
	s.m.sessions.Set(float64(len(s.sessions)))
	s.mu.Unlock()
	ss.markClosing(0)
	if ss.kcp != nil {
		_ = ss.kcp.Close()
	}
	if reason != "" && ss.link != nil {
		ss.link.Disconnected(reason)
	}
}

// janitor ends idle, lingering and never-established sessions once a
// second.
func (s *Server) janitor(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var all []*session
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		all = all[:0]
		s.mu.Lock()
		for _, ss := range s.pending {
			all = append(all, ss)
		}
		s.mu.Unlock()
		for i, ss := range all {
			switch reason, done := ss.due(now); {
			case done:
				s.end(ss, reason)
			}
			all[i] = nil
		}
	}
}

// writeLoop writes what the sessions queue, in batches, and the FRAMEs
// to repeat when they are due.
func (s *Server) writeLoop(ctx context.Context, uc *udpio.Conn) {
	again := time.NewTimer(time.Hour)
	again.Stop()
	defer again.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.out.wake:
		case <-again.C:
		}
		if batch := s.out.take(); len(batch) > 0 {
			n, err := uc.WriteBatch(batch)
			s.out.done(batch)
			if !s.wrote(n, err) {
				return
			}
		}
		for {
			now := time.Now()
			s.out.mu.Lock()
			run, next := s.out.again.dueAt(now)
			s.out.mu.Unlock()
			if len(run) > 0 {
				n, err := uc.WriteBatch(run)
				s.out.mu.Lock()
				s.out.again.release(len(run))
				s.out.mu.Unlock()
				if !s.wrote(n, err) {
					return
				}
			}
			if next.IsZero() {
				break
			}
			if d := next.Sub(now); d > 0 {
				again.Reset(d)
				break
			}
		}
	}
}

// wrote counts a written batch and reports whether the socket is still
// open.
func (s *Server) wrote(n int, err error) bool {
	s.m.out.Add(float64(n))
	s.m.writes.Inc()
	if err != nil {
		if errors.Is(err, net.ErrClosed) {
			return false
		}
		s.log.Warn("udp write failed", "err", err)
	}
	return true
}
