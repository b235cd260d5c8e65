package rooms

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboardgg/switchboard/internal/kcploop"
	"github.com/switchboardgg/switchboard/internal/sealed"
	"github.com/switchboardgg/switchboard/protocol/roomudp"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// Limits of a UDP connection.
const (
	// udpMaxMessage is the largest reliable message either side sends
	// (docs/protocol/rooms-udp.md §7).
	udpMaxMessage = 73728
	// udpInboundQueue caps the unreliable messages waiting for the reader;
	// more are dropped (FRAME's redundancy and FRAME_REQ cover them).
	udpInboundQueue = 256
	// udpLeaveWait bounds how long LEAVE waits for KCP's acknowledgement.
	udpLeaveWait = time.Second
	// udpLeavePoll is how often it looks.
	udpLeavePoll = 10 * time.Millisecond
	// udpInputResend is how long unacknowledged inputs wait before a
	// received datagram sends them again without a new one
	// (docs/protocol/rooms-udp.md §7).
	udpInputResend = 20 * time.Millisecond
	// udpInputRepeat is how long after an INPUTS datagram the client sends
	// the unacknowledged inputs a second time while it has seen loss in the
	// last udpLossMemory (docs/protocol/rooms-udp.md §7): a lost datagram's
	// inputs then still make the node's next tick, instead of waiting a
	// tick for the next INPUT; a few ms apart, so that one short burst of
	// loss does not take both.
	udpInputRepeat = 4 * time.Millisecond
	// udpLossMemory is how long a gap in the node's datagram sequence
	// numbers keeps udpInputRepeat on.
	udpLossMemory = 5 * time.Second
)

// errUDPNoAnswer is the cause of a UDP handshake that got no reply in
// Config.UDPFallback: the path may block UDP.
var errUDPNoAnswer = errors.New("no answer over udp")

// udpTarget is what a C1 answer says about the node's UDP channel.
type udpTarget struct {
	addr  netip.AddrPort
	key   [roomudp.KeySize]byte
	keyID roomudp.KeyID
}

// parseUDPTarget reads connect.udp, session_key and key_id; ok is false
// when the node does not serve UDP.
func parseUDPTarget(ci *ConnectInfo) (t udpTarget, ok bool, err error) {
	if ci.UDP == "" || ci.SessionKey == "" || ci.KeyID == "" {
		return t, false, nil
	}
	if t.addr, err = resolveUDP(ci.UDP); err != nil {
		return t, false, fmt.Errorf("connect.udp: %w", err)
	}
	k, err := base64.StdEncoding.DecodeString(ci.SessionKey)
	if err != nil || len(k) != roomudp.KeySize {
		return t, false, errors.New("connect.session_key is not 32 bytes of base64")
	}
	copy(t.key[:], k)
	if t.keyID, err = roomudp.ParseKeyID(ci.KeyID); err != nil {
		return t, false, fmt.Errorf("connect.key_id: %w", err)
	}
	return t, true, nil
}

// udpConn is one session of the UDP channel after its WELCOME: sealed
// datagrams on a [UDPSocket], reliable messages on a KCP conversation of
// the socket's loop, unreliable ones in single datagrams. The socket's
// reader opens datagrams and feeds KCP; the connection's reader goroutine
// hands the messages to the Room.
type udpConn struct {
	// immutable after dialUDP
	sock    *UDPSocket
	own     bool // the socket is this connection's: closed by kill
	addr    netip.AddrPort
	conv    uint32
	sealer  *sealed.Sealer
	opener  *sealed.Opener
	kc      *kcploop.Conv
	mtu     int
	maxQ    int
	now     func() time.Time
	stats   *stats      // the Room's counters; nil in unit tests
	confirm atomic.Bool // a datagram of this session came from the node

	recvAt atomic.Int64 // Config.Now of the last authenticated datagram, Unix ns
	lossAt atomic.Int64 // Config.Now of the last gap in the node's sequence numbers, Unix ns; 0: none
	wake   chan struct{}
	doneCh chan struct{}
	wg     sync.WaitGroup

	// The highest sequence number of the node's datagrams opened so far
	// (rxAny: one was); owned by the socket's reader, the one caller of
	// input.
	rxSeq uint64
	rxAny bool

	inMu sync.Mutex // guards in and free
	in   [][]byte   // unreliable messages waiting for the reader
	free [][]byte

	closing atomic.Bool // LEAVE sent or dead: sends fail

	encMu   sync.Mutex // guards scratch and the inputs below
	scratch []byte     // encoding buffer of the send methods

	// The newest INPUTs sent on roomudp.ChannelInputs: input seq is in
	// inRing[seq % len] (an encoded INPUT, inLen bytes), until a FRAME
	// acknowledges it (inAck). Guarded by encMu, but inAck.
	inRing   [roomudp.MaxInputsPerDatagram][roomudp.MaxInputEntry]byte
	inLen    [roomudp.MaxInputsPerDatagram]uint8
	inNext   uint32    // the next input's sequence number (from 1)
	inSentAt time.Time // the last INPUTS datagram
	inBody   []byte    // an INPUTS body being built
	inAck    atomic.Uint32
	repeat   *time.Timer // runs repeatInputs udpInputRepeat after an INPUTS datagram under loss; nil until the first

	mu    sync.Mutex // guards the fields below
	dgram []byte     // sealing buffer
	dead  bool
	err   error
}

// dialUDP runs the UDP handshake hs with the node at t: HANDSHAKE every
// roomudp.Retransmit until a reply opens. It returns errUDPNoAnswer when
// none came within wait, a *NodeError for an ERROR, or the connection and
// its WELCOME. The connection counts into st.
func dialUDP(ctx context.Context, cfg *Config, st *stats, t *udpTarget, hs []byte, wait time.Duration) (*udpConn, *roomwire.Welcome, error) {
	sock, own := cfg.UDPSocket, false
	if sock == nil {
		var err error
		if sock, err = NewUDPSocket(UDPSocketConfig{Logger: cfg.Logger, Batch: 8}); err != nil {
			return nil, nil, err
		}
		own = true
	}
	c, w, err := handshakeUDP(ctx, cfg, st, sock, t, hs, wait)
	if err != nil {
		if own {
			sock.Close()
		}
		return nil, nil, err
	}
	c.own = own
	return c, w, nil
}

func handshakeUDP(ctx context.Context, cfg *Config, st *stats, sock *UDPSocket, t *udpTarget, hs []byte, wait time.Duration) (*udpConn, *roomwire.Welcome, error) {
	var nonce [roomudp.NonceSize]byte
	_, _ = rand.Read(nonce[:])
	keys, err := roomudp.HandshakeKeys(&t.key, &nonce)
	if err != nil {
		return nil, nil, fmt.Errorf("udp handshake: %w", err)
	}
	hsSealer, err := sealed.NewSealer(keys.I2R[:], roomudp.HandshakeKeyID)
	if err != nil {
		return nil, nil, fmt.Errorf("udp handshake: %w", err)
	}
	hsOpener, err := sealed.NewOpener(keys.R2I[:], roomudp.HandshakeKeyID)
	if err != nil {
		return nil, nil, fmt.Errorf("udp handshake: %w", err)
	}
	addr := sock.target(t.addr)
	w := &hsWait{opener: hsOpener, reply: make(chan []byte, 1)}
	unwait, err := sock.waitReply(addr, w)
	if err != nil {
		return nil, nil, fmt.Errorf("udp handshake: %w", err)
	}
	defer unwait()

	tick := time.NewTicker(roomudp.Retransmit)
	defer tick.Stop()
	giveUp := time.NewTimer(wait)
	defer giveUp.Stop()
	var dg []byte
	var reply []byte
	for reply == nil {
		if dg, err = roomudp.AppendHandshake(dg[:0], hsSealer, t.keyID, &nonce, hs); err != nil {
			return nil, nil, fmt.Errorf("udp handshake: %w", err)
		}
		sock.queue(addr, dg)
		select {
		case reply = <-w.reply:
		case <-tick.C:
		case <-giveUp.C:
			return nil, nil, fmt.Errorf("udp handshake with %s: %w after %v", t.addr, errUDPNoAnswer, wait)
		case <-ctx.Done(): // say so: a bare "context deadline exceeded" hides that UDP got no answer
			return nil, nil, fmt.Errorf("udp handshake with %s: no answer before the context ended: %w", t.addr, ctx.Err())
		}
	}
	serverNonce, msg, err := roomudp.ParseReply(reply)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: udp reply: %w", ErrHandshake, err)
	}
	typ, err := roomwire.Peek(msg)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrHandshake, err)
	}
	switch typ {
	case roomwire.TypeError:
		var e roomwire.Error
		if err := e.Unmarshal(msg); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrHandshake, err)
		}
		return nil, nil, newNodeError(&e)
	case roomwire.TypeWelcome:
	default:
		return nil, nil, fmt.Errorf("%w: udp reply is %s", ErrHandshake, typ)
	}
	wel := new(roomwire.Welcome)
	if err := wel.Unmarshal(msg); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrHandshake, err)
	}
	wel.ResumeToken = append([]byte(nil), wel.ResumeToken...)
	if wel.Conv == 0 {
		return nil, nil, fmt.Errorf("%w: WELCOME without conv over udp", ErrHandshake)
	}
	sk, err := roomudp.SessionKeys(&t.key, &nonce, &serverNonce)
	if err != nil {
		return nil, nil, fmt.Errorf("udp session: %w", err)
	}
	c := &udpConn{
		sock: sock, addr: addr, conv: wel.Conv, mtu: cfg.UDPMTU, maxQ: cfg.MaxSendQueueBytes, now: cfg.Now, stats: st,
		wake: make(chan struct{}, 1), doneCh: make(chan struct{}),
	}
	if c.sealer, err = sealed.NewSealer(sk.I2R[:], wel.Conv); err != nil {
		return nil, nil, fmt.Errorf("udp session: %w", err)
	}
	if c.opener, err = sealed.NewOpener(sk.R2I[:], wel.Conv); err != nil {
		return nil, nil, fmt.Errorf("udp session: %w", err)
	}
	c.kc, err = sock.loop.Open(wel.Conv, kcploop.ConvConfig{
		MTU: cfg.UDPMTU - roomudp.SessionOverhead, SendWindow: roomudp.KCPWindow, RecvWindow: roomudp.KCPWindow,
		NoDelay: true, Interval: roomudp.KCPInterval, MaxMessage: udpMaxMessage,
	}, c.kcpOutput)
	if err != nil {
		return nil, nil, fmt.Errorf("udp session: %w", err)
	}
	if !sock.addRoute(addr, wel.Conv, c) {
		c.kc.Close()
		return nil, nil, fmt.Errorf("%w: conv %d already in use on this socket", ErrHandshake, wel.Conv)
	}
	c.recvAt.Store(cfg.Now().UnixNano())
	return c, wel, nil
}

// kcpOutput seals one KCP datagram; it runs with the conversation locked.
func (c *udpConn) kcpOutput(_ *kcploop.Conv, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sealLocked(roomudp.ChannelKCP, b)
}

// sealLocked seals channel and body into one SESSION datagram, in place
// in the sealing buffer, and queues it. c.mu is held.
func (c *udpConn) sealLocked(channel byte, body []byte) {
	n := sealed.HeaderSize + 1 + len(body)
	if cap(c.dgram) < n+sealed.TagSize {
		c.dgram = make([]byte, 0, max(n+sealed.TagSize, c.mtu))
	}
	buf := c.dgram[:n]
	buf[sealed.HeaderSize] = channel
	copy(buf[sealed.HeaderSize+1:], body)
	out, err := c.sealer.Seal(buf[:0], buf[sealed.HeaderSize:])
	if err != nil {
		return // sequence numbers exhausted: never in practice
	}
	c.sock.queue(c.addr, out)
}

// input takes one datagram of this session from the socket's reader. It
// reports whether the datagram was accepted.
func (c *udpConn) input(b []byte) bool {
	p, seq, err := c.opener.Open(b[sealed.HeaderSize:sealed.HeaderSize], b)
	if errors.Is(err, sealed.ErrReplay) {
		// A second copy: the node sends each FRAME twice while it sees
		// this client's datagrams lost (rooms-udp.md §7). The copy of a
		// FRAME that was lost arrives in order and shows no gap, so the
		// copies are how this client learns that its own datagrams are
		// being lost, and that its INPUTS should go twice too.
		c.lossAt.Store(c.now().UnixNano())
	}
	if err != nil {
		return false
	}
	ch, body, err := roomudp.ParseSession(p)
	if err != nil || roomudp.CheckDirection(ch, true) != nil {
		return false
	}
	now := c.now().UnixNano()
	c.confirm.Store(true)
	c.recvAt.Store(now)
	// The node numbers its datagrams 1, 2, 3 … (sealed): a number skipped
	// is a datagram lost (or late) on the way here.
	if c.rxAny && seq > c.rxSeq+1 {
		c.lossAt.Store(now)
	}
	if !c.rxAny || seq > c.rxSeq {
		c.rxSeq, c.rxAny = seq, true
	}
	switch ch {
	case roomudp.ChannelPathChallenge:
		// The node checks that this client receives at the address its
		// datagrams come from (rooms-udp.md §8): answer each challenge at
		// once, from this socket, with its bytes. Until the answer
		// arrives the node sends here at most 3 times what it gets.
		d, err := roomudp.ParsePath(body)
		if err != nil {
			return false
		}
		c.mu.Lock()
		if !c.dead {
			c.sealLocked(roomudp.ChannelPathResponse, d[:])
		}
		c.mu.Unlock()
		if c.stats != nil {
			c.stats.paths.Add(1)
		}
		return true
	case roomudp.ChannelKCP:
		if c.kc.Input(body) != nil {
			return false
		}
	case roomudp.ChannelMessage, roomudp.ChannelFrame:
		if ch == roomudp.ChannelFrame {
			seq, fr, err := roomudp.ParseFrame(body)
			if err != nil {
				return false
			}
			for a := c.inAck.Load(); seq > a && !c.inAck.CompareAndSwap(a, seq); a = c.inAck.Load() {
			}
			body = fr
		}
		c.inMu.Lock()
		if len(c.in) >= udpInboundQueue {
			c.inMu.Unlock()
			return false
		}
		var m []byte
		if n := len(c.free); n > 0 {
			m, c.free = c.free[n-1], c.free[:n-1]
		}
		c.in = append(c.in, append(m[:0], body...))
		c.inMu.Unlock()
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return true
}

// start starts the reader.
func (c *udpConn) start(handle func(msg []byte) error) {
	c.wg.Add(1)
	go c.readLoop(handle)
}

// readLoop is the reader goroutine: it hands unreliable messages and then
// every whole KCP message to handle.
func (c *udpConn) readLoop(handle func(msg []byte) error) {
	defer c.wg.Done()
	buf := make([]byte, udpMaxMessage)
	var batch [][]byte
	for {
		select {
		case <-c.wake:
		case <-c.doneCh:
			return
		}
		c.inMu.Lock()
		batch, c.in = c.in, batch[:0]
		c.inMu.Unlock()
		for _, m := range batch {
			if err := handle(m); err != nil {
				c.kill(err)
				return
			}
		}
		c.inMu.Lock()
		c.free = append(c.free, batch...)
		c.inMu.Unlock()
		clear(batch)
		c.resendInputs()
		for {
			n, err := c.kc.Recv(buf)
			if errors.Is(err, kcploop.ErrNoMessage) {
				break
			}
			if err != nil {
				c.kill(fmt.Errorf("read: %w", err))
				return
			}
			if err := handle(buf[:n]); err != nil {
				c.kill(err)
				return
			}
		}
	}
}

// wait joins the reader and closes the socket when it is the connection's
// own (not in kill, which may run on the socket's reader that Close joins).
func (c *udpConn) wait() {
	c.wg.Wait()
	if c.own {
		c.sock.Close()
	}
}

func (c *udpConn) done() <-chan struct{} { return c.doneCh }
func (c *udpConn) lastRecv() int64       { return c.recvAt.Load() }
func (c *udpConn) transport() string     { return TransportUDP }

// kill ends the session: the conversation and the route go, and the
// socket too when it is the connection's own.
func (c *udpConn) kill(err error) {
	c.mu.Lock()
	if c.dead {
		c.mu.Unlock()
		return
	}
	c.dead, c.err = true, err
	c.closing.Store(true)
	close(c.doneCh)
	c.mu.Unlock()
	c.kc.Close()
	c.sock.removeRoute(c.addr, c.conv, c)
}

func (c *udpConn) cause() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// reliable sends msg on KCP, at once: an INPUT that waited for KCP's next
// flush (up to its 10 ms interval) could miss the node's next tick.
func (c *udpConn) reliable(msg []byte) error {
	switch err := c.kc.SendFlush(msg); {
	case err == nil:
		return nil
	case errors.Is(err, kcploop.ErrSendQueueFull):
		return ErrSendQueueFull
	case errors.Is(err, kcploop.ErrClosed):
		return ErrNotConnected
	default:
		return fmt.Errorf("send: %w", err)
	}
}

// sendMsg sends m: unreliable when the protocol allows it, it fits in one
// datagram and the node has been heard on this session (so the first
// message, which the node waits for, is reliable); on KCP otherwise. Lock
// order: encMu, then the conversation's (Send), then mu (KCP's output).
func (c *udpConn) sendMsg(m roomwire.Message) error {
	c.encMu.Lock()
	defer c.encMu.Unlock()
	if c.closing.Load() {
		return ErrNotConnected
	}
	b, err := m.AppendTo(c.scratch[:0])
	if err != nil {
		return fmt.Errorf("%s: %w", m.Type(), err)
	}
	return c.sendEncodedLocked(b)
}

// sendEncodedLocked sends the message encoded in b (the scratch buffer)
// as sendMsg says. encMu is held.
func (c *udpConn) sendEncodedLocked(b []byte) error {
	c.scratch = b
	if cap(c.scratch) > keepBuffer {
		c.scratch = nil
	}
	if c.confirm.Load() && roomudp.Unreliable(b, false) && len(b) <= c.mtu-roomudp.SessionOverhead {
		c.mu.Lock()
		c.sealLocked(roomudp.ChannelMessage, b)
		c.mu.Unlock()
		return nil
	}
	return c.reliable(b)
}

// sendInput, sendPing and sendFrameReq encode their concrete message
// without an interface, so that nothing escapes: no allocation of ours.
//
// Once the node has been heard, an INPUT goes on roomudp.ChannelInputs
// with the inputs before it that no FRAME has acknowledged yet; before,
// on KCP.
func (c *udpConn) sendInput(ack uint32, data []byte) error {
	c.encMu.Lock()
	defer c.encMu.Unlock()
	if c.closing.Load() {
		return ErrNotConnected
	}
	m := roomwire.Input{AckFrame: ack, Data: data}
	if !c.confirm.Load() {
		b, err := m.AppendTo(c.scratch[:0])
		if err != nil {
			return fmt.Errorf("input: %w", err)
		}
		return c.sendEncodedLocked(b)
	}
	if c.inNext == 0 {
		c.inNext = 1
	}
	i := c.inNext % roomudp.MaxInputsPerDatagram
	b, err := m.AppendTo(c.inRing[i][:0])
	if err != nil {
		return fmt.Errorf("input: %w", err)
	}
	c.inLen[i] = uint8(len(b))
	c.inNext++
	c.sendInputsLocked()
	if at := c.lossAt.Load(); at != 0 && c.now().UnixNano()-at < int64(udpLossMemory) {
		if c.repeat == nil {
			c.repeat = time.AfterFunc(udpInputRepeat, c.repeatInputs)
		} else {
			c.repeat.Reset(udpInputRepeat)
		}
	}
	return nil
}

// repeatInputs sends the unacknowledged inputs a second time,
// udpInputRepeat after sendInput sent them while the path was losing
// datagrams. It does nothing once they are acknowledged or the session
// ends (a timer that fires after kill finds closing set).
func (c *udpConn) repeatInputs() {
	c.encMu.Lock()
	defer c.encMu.Unlock()
	if c.closing.Load() || c.inNext == 0 || c.inAck.Load() >= c.inNext-1 {
		return
	}
	c.sendInputsLocked()
}

// sendInputsLocked sends one INPUTS datagram with the newest inputs not
// acknowledged: at most roomudp.MaxInputsPerDatagram, and as many as fit
// in the MTU. It sends nothing when every input is acknowledged. encMu
// is held.
func (c *udpConn) sendInputsLocked() {
	last := c.inNext - 1
	acked := c.inAck.Load()
	if c.inNext == 0 || acked >= last {
		return
	}
	budget := c.mtu - roomudp.SessionOverhead - roomudp.InputsHeaderSize
	first := last + 1
	for first > acked+1 && last-first+1 < roomudp.MaxInputsPerDatagram {
		n := 1 + int(c.inLen[(first-1)%roomudp.MaxInputsPerDatagram])
		if n > budget {
			break
		}
		budget -= n
		first--
	}
	if first > last {
		return // the newest input alone does not fit: never with MinMTU
	}
	b := roomudp.AppendInputsHeader(c.inBody[:0], first, int(last-first+1))
	for seq := first; seq <= last; seq++ {
		i := seq % roomudp.MaxInputsPerDatagram
		b = roomudp.AppendInputEntry(b, c.inRing[i][:c.inLen[i]])
	}
	c.inBody = b
	c.mu.Lock()
	c.sealLocked(roomudp.ChannelInputs, b)
	c.mu.Unlock()
	c.inSentAt = c.now()
}

// resendInputs sends the unacknowledged inputs again when nothing has
// carried them for udpInputResend: the reader calls it after each batch
// of received messages, so a game that stops sending INPUT still gets its
// last inputs through, at most once per FRAME it receives.
func (c *udpConn) resendInputs() {
	c.encMu.Lock()
	defer c.encMu.Unlock()
	if c.closing.Load() || c.inNext == 0 || c.inAck.Load() >= c.inNext-1 || c.now().Sub(c.inSentAt) < udpInputResend {
		return
	}
	c.sendInputsLocked()
}

func (c *udpConn) sendPing(clientMS uint64, rttMS uint32) error {
	c.encMu.Lock()
	defer c.encMu.Unlock()
	if c.closing.Load() {
		return ErrNotConnected
	}
	m := roomwire.Ping{ClientMS: clientMS, RTTMS: rttMS}
	b, _ := m.AppendTo(c.scratch[:0]) // a PING has no capped field
	return c.sendEncodedLocked(b)
}

func (c *udpConn) sendFrameReq(req roomwire.FrameReq) error {
	c.encMu.Lock()
	defer c.encMu.Unlock()
	if c.closing.Load() {
		return ErrNotConnected
	}
	b, _ := req.AppendTo(c.scratch[:0]) // no capped field
	return c.sendEncodedLocked(b)
}

func (c *udpConn) send(m roomwire.Message) error { return c.sendMsg(m) }

// sendLeave sends LEAVE on KCP and ends the connection once KCP has it
// acknowledged, or after udpLeaveWait.
func (c *udpConn) sendLeave() error {
	if err := c.sendMsg(&roomwire.Leave{}); err != nil {
		return err
	}
	c.closing.Store(true)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		t := time.NewTicker(udpLeavePoll)
		defer t.Stop()
		limit := time.NewTimer(udpLeaveWait)
		defer limit.Stop()
		for c.kc.Pending() > 0 {
			select {
			case <-t.C:
			case <-limit.C:
				c.kill(errLeaving)
				return
			case <-c.doneCh:
				return
			}
		}
		c.kill(errLeaving)
	}()
	return nil
}
