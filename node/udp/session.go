package udp

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
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

// session is one connection attempt's state: a seated session, or a
// refused handshake kept so that retransmissions get the same ERROR. It
// implements rooms.Peer.
type session struct {
	s *Server
	// immutable once the handshake is done (set by the reader before the
	// session is in the server's maps)
	key         hsKey
	sk          [roomudp.KeySize]byte
	serverNonce [roomudp.NonceSize]byte
	hsOpen      *sealed.Opener // handshake I2R: retransmitted HANDSHAKEs
	hsSeal      *sealed.Sealer
	reply       []byte // the HANDSHAKE REPLY datagram (a WELCOME's: queued by start)
	created     time.Time
	conv        uint32
	send        *sealed.Sealer
	open        *sealed.Opener
	kcp         *kcploop.Conv
	link        *rooms.Link
	d           *node.Dispatcher // the reader's only
	lim         *rate.Limiter    // the read budget: the reader's only

	seating atomic.Bool // inside Seat: WELCOME is captured, not sent
	// inSeq is the highest INPUTS sequence number taken (the reader
	// writes it; every FRAME carries it as the acknowledgement).
	inSeq atomic.Uint32

	mu          sync.Mutex
	addr        netip.AddrPort
	maxSeq      uint64
	heardAny    bool
	lastHeard   time.Time
	established bool      // a SESSION datagram arrived
	lossyUntil  time.Time // FRAMEs go twice until then: see heard
	budget      int       // bytes the node may still send while limited (pathcheck.go)
	path        pathState // the session's addresses (pathcheck.go)
	closing     bool      // no more sends
	closeAt     time.Time // forget then (zero: not closing)
	reason      string    // the seat's offline reason when forgotten
}

// Send implements rooms.Peer.
func (ss *session) Send(m *rooms.Msg) bool {
	p := m.Payload()
	if ss.seating.Load() && ss.kcp == nil {
		if m.Type() != roomwire.TypeWelcome || len(p) < 5 || !ss.start(p) {
			return false
		}
		ss.s.cfg.Node.CountSent(p)
		return true
	}
	if ss.isClosing() || !ss.sendPayload(p, roomudp.Unreliable(p, true)) {
		return false
	}
	ss.s.cfg.Node.CountSent(p)
	return true
}

// start captures WELCOME, opens the session's keys and KCP conversation,
// so that a resume's catch-up can follow on KCP, and queues the HANDSHAKE
// REPLY at once: what the room sends next on KCP (ROOM_STATE, a resume's
// FRAME_BATCH) must leave after it, or the client, which cannot open a
// SESSION datagram before the reply, would drop it and wait for KCP's
// first retransmission.
func (ss *session) start(welcome []byte) bool {
	s := ss.s
	ss.conv = binary.BigEndian.Uint32(welcome[1:5])
	keys, err := roomudp.SessionKeys(&ss.sk, &ss.key.nonce, &ss.serverNonce)
	if err != nil {
		return false
	}
	reply, err := ss.hsSeal.Seal(nil, roomudp.AppendReply(make([]byte, 0, roomudp.NonceSize+len(welcome)), &ss.serverNonce, welcome))
	if err != nil {
		return false
	}
	ss.send, _ = sealed.NewSealer(keys.R2I[:], ss.conv)
	ss.open, _ = sealed.NewOpener(keys.I2R[:], ss.conv)
	cfg := s.conv
	cfg.SendWindow = unprovenWindow // until established: see heard
	c, err := s.loop.Open(ss.conv, cfg, ss.output)
	if err != nil {
		s.log.Warn("udp: open KCP conversation", "err", err)
		return false
	}
	ss.kcp = c
	ss.reply = reply
	ss.mu.Lock()
	ss.budget = amplification*roomudp.HandshakeSize - len(reply)
	to := ss.addr
	ss.path.proven = to
	ss.mu.Unlock()
	s.out.pushRaw(s, reply, to)
	return true
}

// Until a session is established (a SESSION datagram came: its client
// holds the keys and can be answered), the HANDSHAKE's source address is
// unproven: a replayed HANDSHAKE, or one sent by the token's holder with
// a forged source, must not turn into a flood there. As QUIC does before
// it validates an address (RFC 9000 §8), the node then sends at most
// amplification times the HANDSHAKE bytes it got from that address, and
// KCP's window is unprovenWindow segments, so that what waits behind it
// (a resume's catch-up) leaves at once when the session is established
// rather than after a retransmission timeout. After it is established,
// the same budget holds what goes to an address the session moved to
// until that address is validated (pathcheck.go).
const (
	amplification  = 3
	unprovenWindow = 2
)

// spendDest returns the session's address and whether n more bytes may
// go there, taking them from the budget while it is limited.
func (ss *session) spendDest(n int) (netip.AddrPort, bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.addr, ss.spendLocked(n)
}

// resent records a retransmitted HANDSHAKE of n bytes from a, which gets
// the reply again: the reply goes to a, and the budget grows by what a
// sent, less the reply. The budget is a's alone: when a is not the
// attempt's address, what the earlier address earned does not follow the
// attempt there (else a key holder retransmitting from its own address
// could bank budget, then aim a resume's catch-up at a forged one).
func (ss *session) resent(a netip.AddrPort, n int) {
	ss.mu.Lock()
	if a != ss.path.proven { // the reply goes to two addresses: neither is proven
		ss.path.proven = netip.AddrPort{}
	}
	if a != ss.addr {
		ss.addr, ss.budget = a, 0
	}
	ss.budget += amplification*n - len(ss.reply)
	ss.mu.Unlock()
}

// output is the KCP conversation's OutputFunc.
// Before the session is established it keeps to the budget: what it
// drops, KCP sends again.
// The address and the spending are read under one lock: the reader may
// move the session between them, and what was allowed to the validated
// address must not go to the new one.
func (ss *session) output(_ *kcploop.Conv, b []byte) {
	to, ok := ss.spendDest(len(b) + roomudp.SessionOverhead)
	if !ok {
		return
	}
	ss.s.out.seal(ss.s, ss.send, roomudp.ChannelKCP, b, to)
}

// sendPayload sends one message: as one datagram when unreliable and it
// fits, else on KCP. It reports false when the session must be dropped.
//
// Before the session is established an unreliable message is dropped, as
// if lost: nothing has yet shown that the client holds the session keys
// at the handshake's address, and a started room's FRAMEs (one a tick)
// would otherwise stream there until HandshakeTimeout — about 300
// datagrams for one HANDSHAKE at 30 Hz. KCP is bounded by its backoff and
// carries what the client must not miss.
//
// A FRAME goes on [roomudp.ChannelFrame] behind the highest input
// sequence number taken from the session: the client's acknowledgement.
func (ss *session) sendPayload(p []byte, unreliable bool) bool {
	s := ss.s
	if unreliable && len(p) > 0 && roomwire.Type(p[0]) == roomwire.TypeFrame {
		if len(p) <= s.cfg.MTU-roomudp.SessionOverhead-roomudp.FrameHeaderSize {
			if to, ok, twice := ss.frameDest(time.Now(), roomudp.SessionOverhead+roomudp.FrameHeaderSize+len(p)); ok {
				s.out.put(s, ss.send, roomudp.ChannelFrame, true, ss.inSeq.Load(), p, to, twice)
			}
			return true
		}
	} else if unreliable && len(p) <= s.cfg.MTU-roomudp.SessionOverhead {
		if to, ok := ss.liveDest(roomudp.SessionOverhead + len(p)); ok {
			s.out.seal(s, ss.send, roomudp.ChannelMessage, p, to)
		}
		return true
	}
	if err := ss.kcp.SendFlush(p); err != nil { // at once: a FRAME_BATCH fills a gap the client waits on
		if errors.Is(err, kcploop.ErrSendQueueFull) || errors.Is(err, kcploop.ErrTooLarge) {
			ss.markClosing(0)
		}
		return false
	}
	return true
}

// Close implements rooms.Peer: final goes on KCP, and the session is
// forgotten after Linger.
func (ss *session) Close(final *rooms.Msg) {
	if ss.isClosing() {
		return
	}
	if final != nil && ss.kcp != nil && ss.kcp.SendFlush(final.Payload()) == nil {
		ss.s.cfg.Node.CountSent(final.Payload())
	}
	ss.markClosing(ss.s.cfg.Linger)
}

// fail sends ERROR code on KCP, takes the seat offline and forgets the
// session after Linger.
func (ss *session) fail(code uint8) {
	if ss.isClosing() {
		return
	}
	em := ss.s.cfg.Node.ErrorMsg(code)
	if ss.kcp != nil && ss.kcp.SendFlush(em.Payload()) == nil {
		ss.s.cfg.Node.CountSent(em.Payload())
	}
	em.Release()
	ss.mu.Lock()
	ss.reason = rooms.ReasonNetwork
	ss.mu.Unlock()
	ss.markClosing(ss.s.cfg.Linger)
	if ss.link != nil {
		ss.link.Disconnected(rooms.ReasonNetwork)
	}
}

func (ss *session) markClosing(linger time.Duration) {
	ss.mu.Lock()
	if !ss.closing {
		ss.closing, ss.closeAt = true, time.Now().Add(linger)
	}
	ss.mu.Unlock()
}

func (ss *session) isClosing() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.closing
}

func (ss *session) isEstablished() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.established
}

// liveDest returns the session's address and whether a datagram of n
// bytes may go there: the session is established, and the address
// validated or its budget not spent (pathcheck.go). frameDest is liveDest
// for a FRAME, and whether to send it twice: while the client's datagrams
// showed a gap in the last lossMemory, and never to an address not
// validated.
func (ss *session) frameDest(now time.Time, n int) (to netip.AddrPort, ok, twice bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.established && ss.limitedLocked() {
		return ss.addr, ss.spendLocked(n), false
	}
	return ss.addr, ss.established, now.Before(ss.lossyUntil)
}

func (ss *session) liveDest(n int) (netip.AddrPort, bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.addr, ss.established && ss.spendLocked(n)
}

// heard records an authenticated SESSION datagram of n bytes: the
// session is established, alive, and moves to from when seq is the
// highest yet, to send there within the budget until the address is
// validated (pathcheck.go). The first one opens KCP's full window.
func (ss *session) heard(seq uint64, from netip.AddrPort, n int) {
	ss.mu.Lock()
	first := !ss.established
	ss.established = true
	ss.lastHeard = time.Now()
	if ss.heardAny && seq > ss.maxSeq+1 {
		// A gap in the client's sequence numbers: one of its datagrams
		// was lost (or is late). A path that loses one way mostly loses
		// the other way too; see repeatFor.
		ss.lossyUntil = ss.lastHeard.Add(lossMemory)
	}
	newest := !ss.heardAny || seq > ss.maxSeq
	if newest {
		ss.heardAny, ss.maxSeq = true, seq
	}
	c, challenge := ss.pathHeardLocked(from, n, first, newest, ss.lastHeard)
	ss.mu.Unlock()
	if challenge {
		ss.sendChallenge(&c)
	}
	if first && ss.kcp != nil {
		_ = ss.kcp.SetSendWindow(roomudp.KCPWindow)
	}
}

// due reports whether the janitor should forget ss now, and the seat's
// offline reason ("" when the room already knows).
func (ss *session) due(now time.Time) (reason string, done bool) {
	s := ss.s
	ss.mu.Lock()
	defer ss.mu.Unlock()
	switch {
	case ss.closing:
		return "", !now.Before(ss.closeAt)
	case ss.link == nil: // a refused handshake
		return "", now.Sub(ss.created) >= s.cfg.HandshakeTimeout
	case !ss.established:
		return rooms.ReasonNetwork, now.Sub(ss.created) >= s.cfg.HandshakeTimeout
	default:
		return rooms.ReasonTimeout, now.Sub(ss.lastHeard) >= s.cfg.IdleTimeout
	}
}

// outQueue holds the datagrams waiting for the writer: two fixed arrays
// of messages with their own buffers, one filled by the senders while the
// writer writes the other.
type outQueue struct {
	wake chan struct{} // capacity 1

	mu    sync.Mutex
	cur   []udpio.Message // cur[:n] are queued
	spare []udpio.Message // being written, or free
	n     int
	again repeatRing // FRAMEs to send a second time (repeat.go)
}

func (q *outQueue) init(n int) {
	q.wake = make(chan struct{}, 1)
	mk := func() []udpio.Message {
		ms := make([]udpio.Message, n)
		backing := make([]byte, n*roomudp.MaxDatagram)
		for i := range ms {
			ms[i].Buf = backing[i*roomudp.MaxDatagram : i*roomudp.MaxDatagram : (i+1)*roomudp.MaxDatagram]
		}
		return ms
	}
	q.cur, q.spare = mk(), mk()
	q.again.init(max(n/4, 1))
}

func (q *outQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// seal queues one SESSION datagram: channel ch and body, sealed in place
// by sl, to addr. A full queue drops it (counted).
func (q *outQueue) seal(s *Server, sl *sealed.Sealer, ch byte, body []byte, addr netip.AddrPort) {
	q.put(s, sl, ch, false, 0, body, addr, false)
}

// put is seal with, when pre, the 4 bytes of u32 pre32 before body (a
// FRAME's input acknowledgement); with twice, the sealed datagram is also
// kept to be sent again repeatDelay later.
func (q *outQueue) put(s *Server, sl *sealed.Sealer, ch byte, pre bool, pre32 uint32, body []byte, addr netip.AddrPort, twice bool) {
	q.mu.Lock()
	if q.n == len(q.cur) {
		q.mu.Unlock()
		s.m.drop[dropQueueFull].Inc()
		return
	}
	m := &q.cur[q.n]
	at := sealed.HeaderSize + 1
	if pre {
		binary.BigEndian.PutUint32(m.Buf[at:at+4], pre32)
		at += 4
	}
	buf := m.Buf[:at+len(body)]
	buf[sealed.HeaderSize] = ch
	copy(buf[at:], body)
	out, err := sl.Seal(buf[:0], buf[sealed.HeaderSize:])
	if err != nil {
		q.mu.Unlock()
		return
	}
	m.Buf, m.Addr = out, addr
	q.n++
	if twice && q.again.push(out, addr, time.Now().Add(repeatDelay)) {
		s.m.repeats.Inc()
	}
	q.mu.Unlock()
	q.signal()
}

// pushRaw queues datagram d to addr.
func (q *outQueue) pushRaw(s *Server, d []byte, addr netip.AddrPort) {
	q.mu.Lock()
	if q.n == len(q.cur) {
		q.mu.Unlock()
		s.m.drop[dropQueueFull].Inc()
		return
	}
	m := &q.cur[q.n]
	m.Buf, m.Addr = append(m.Buf[:0], d...), addr
	q.n++
	q.mu.Unlock()
	q.signal()
}

// take hands the writer what is queued; it gives it back with done.
func (q *outQueue) take() []udpio.Message {
	q.mu.Lock()
	defer q.mu.Unlock()
	batch := q.cur[:q.n]
	q.cur, q.spare = q.spare, q.cur
	q.n = 0
	return batch
}

// done makes a written batch's buffers reusable. The array is already
// q.spare; only the lengths are reset.
func (q *outQueue) done(batch []udpio.Message) {
	for i := range batch {
		batch[i].Buf = batch[i].Buf[:0]
	}
}
