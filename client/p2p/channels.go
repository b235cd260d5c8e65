package p2p

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboardgg/switchboard/internal/kcploop"
	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// segmentSender is what the channel layer needs from the datagram layer:
// send one RELIABLE datagram to peer to, whose fields after the routing
// header are body (the channel byte, then KCP segments), on whichever
// path the datagram layer picks (direct or through the hub). It runs
// with the conversation locked: it must not block for long, nor keep
// body, nor call back into the channel layer. A failure is a lost
// datagram, which KCP retransmits.
type segmentSender func(to string, body []byte)

// convKey names a conversation: the other peer and the channel.
type convKey struct {
	peer string
	ch   Channel
}

// rconv is one open conversation.
type rconv struct {
	// immutable after open
	key convKey
	inc uint32 // incarnation: the KCP conv is ch | inc<<8
	kc  *kcploop.Conv

	active atomic.Int64 // unix nanoseconds of the last segment in or out, or send

	// Messages sent after a quarter of the idle timeout of silence are
	// "at risk": the other peer may open the next incarnation before it
	// hears them (docs/protocol/p2p.md §13). A copy is kept until they
	// are all acknowledged, and sent again on the next incarnation if it
	// comes first.
	riskMu sync.Mutex // serializes kc.Send with the copies
	risky  atomic.Bool
	atRisk [][]byte // guarded by riskMu

	smu   sync.Mutex
	space chan struct{} // guarded by smu; closed when acknowledgements may have made room

	// sendMu is held for reading around kc.Send and for writing to
	// retire the conversation, so that a message is never queued on a
	// conversation being closed (a send that finds it retired takes the
	// next one).
	sendMu  sync.RWMutex
	retired bool // guarded by channels.mu and sendMu (written holding both): off the map and closed

	ready    bool     // guarded by channels.mu: in channels.ready
	leftover [][]byte // guarded by channels.mu: the messages it held unread when retired, to deliver

	// prev is the incarnation this one replaced while it still held
	// unread messages: they are delivered first. Set before the
	// conversation is published; then owned by the delivery goroutine.
	prev *rconv
}

// idleSince reports whether c carried nothing since t (unix nanoseconds).
func (c *rconv) idleSince(t int64) bool {
	return c.active.Load() < t && c.kc.Pending() == 0 && c.kc.PeekSize() < 0
}

func (c *rconv) touch() { c.active.Store(time.Now().UnixNano()) }

// spaceSignal returns a channel closed at the next acknowledgement.
func (c *rconv) spaceSignal() <-chan struct{} {
	c.smu.Lock()
	defer c.smu.Unlock()
	if c.space == nil {
		c.space = make(chan struct{})
	}
	return c.space
}

// wakeSenders wakes the sends waiting for room.
func (c *rconv) wakeSenders() {
	c.smu.Lock()
	if c.space != nil {
		close(c.space)
		c.space = nil
	}
	c.smu.Unlock()
}

// channels is a peer's reliable channel layer: one KCP conversation per
// (other peer, channel) on one kcploop.Loop, opened on the first send or
// segment, closed when idle or when the other peer leaves. Its two
// goroutines (the loop's Run, and the delivery goroutine that reads whole
// messages round-robin across conversations, fills Reliable and reaps
// idle conversations) are started by start and joined by close.
type channels struct {
	// immutable after newChannels
	cfg     ReliableConfig
	log     *slog.Logger
	send    segmentSender
	known   func(peer string) bool // nil: any; a send to a peer it refuses fails with ErrUnknownPeer
	loop    *kcploop.Loop
	out     chan *ReliableMessage
	wake    chan struct{} // capacity 1: a conversation became ready
	closing chan struct{}
	wg      sync.WaitGroup
	bufs    sync.Pool // *[]byte envelope encodings

	mu     sync.Mutex
	convs  map[convKey]*rconv // guarded by mu
	incs   map[convKey]uint32 // guarded by mu: the last incarnation of each key, kept after a reap
	ready  []*rconv           // guarded by mu: conversations that may hold a whole message
	closed bool               // guarded by mu

	opened, reaped, closedN, restarted, resent, lost, dropped atomic.Uint64

	closeOnce sync.Once
}

func newChannels(cfg ReliableConfig, log *slog.Logger, send segmentSender) *channels {
	cfg = cfg.resolve()
	loop, err := kcploop.New(kcploop.Config{Logger: log})
	if err != nil {
		panic("p2p: kcploop refused its default config: " + err.Error()) // a bug, not an input
	}
	return &channels{
		cfg: cfg, log: log, send: send, loop: loop,
		out:     make(chan *ReliableMessage, cfg.QueueLen),
		wake:    make(chan struct{}, 1),
		closing: make(chan struct{}),
		convs:   make(map[convKey]*rconv),
		incs:    make(map[convKey]uint32),
	}
}

// start starts the loop and the delivery goroutine.
func (l *channels) start() {
	l.wg.Add(2)
	go func() {
		defer l.wg.Done()
		_ = l.loop.Run(context.Background()) // ends with close
	}()
	go l.deliverLoop()
}

// close closes every conversation, stops both goroutines and closes out.
// Sends waiting for room fail with ErrClosed.
func (l *channels) close() {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		for k, c := range l.convs {
			_ = c.kc.Close()
			delete(l.convs, k)
		}
		l.mu.Unlock()
		close(l.closing)
		_ = l.loop.Close()
	})
	l.wg.Wait()
}

// convFor returns the conversation of key, opening one (the next
// incarnation) when there is none.
func (l *channels) convFor(key convKey) (*rconv, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, ErrClosed
	}
	c := l.convs[key]
	if c == nil {
		if l.known != nil && !l.known(key.peer) {
			return nil, fmt.Errorf("p2p: send reliable to %s: %w", key.peer, ErrUnknownPeer) // it left while the send waited
		}
		return l.openLocked(key, l.incs[key]+1, nil)
	}
	// Idle for half the timeout: the other peer may be about to close its
	// side, so start the next incarnation rather than send on one it may
	// have forgotten (docs/protocol/p2p.md §13).
	if l.retireIfIdle(c, time.Now().Add(-l.cfg.IdleTimeout/2).UnixNano()) {
		return l.openLocked(key, c.inc+1, nil)
	}
	return c, nil
}

// retireIfIdle retires c if it carried nothing since t, and reports
// whether it did. l.mu is held.
func (l *channels) retireIfIdle(c *rconv, t int64) bool {
	if c.ready {
		return false
	}
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	if !c.idleSince(t) {
		return false
	}
	l.retireSendLocked(c)
	return true
}

// openLocked opens incarnation inc of key. l.mu is held.
func (l *channels) openLocked(key convKey, inc uint32, prev *rconv) (*rconv, error) {
	if len(l.convs) >= l.cfg.MaxConversations {
		return nil, fmt.Errorf("p2p: reliable: %d conversations open already: %w", len(l.convs), ErrTooManyConversations)
	}
	c := &rconv{key: key, inc: inc, prev: prev}
	c.touch()
	body := make([]byte, 1, 1+ReliableMTU) // the conversation's: its output runs locked
	body[0] = byte(key.ch)
	kc, err := l.loop.Open(uint32(key.ch)|inc<<8, l.cfg.convConfig(key.ch), func(_ *kcploop.Conv, b []byte) {
		c.touch()
		body = append(body[:1], b...)
		l.send(key.peer, body)
	})
	if err != nil {
		return nil, fmt.Errorf("p2p: reliable: open %s with %s: %w", key.ch, key.peer, err)
	}
	c.kc = kc
	l.convs[key] = c
	l.incs[key] = inc
	l.opened.Add(1)
	return c, nil
}

// sendReliable queues env on channel ch to peer to, waiting while the
// conversation's send queue is full (see Peer.SendReliable).
func (l *channels) sendReliable(ctx context.Context, to string, ch Channel, env Envelope) error {
	if !ch.Valid() {
		return fmt.Errorf("p2p: send reliable: %w: %d", ErrBadChannel, uint8(ch))
	}
	e := p2pwire.Envelope{Header: env.Header, Pairs: env.Pairs, Payload: env.Payload}
	if !slices.IsSortedFunc(e.Pairs, comparePairs) {
		e.Pairs = slices.Clone(e.Pairs)
		slices.SortFunc(e.Pairs, comparePairs)
	}
	bp, _ := l.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	defer l.bufs.Put(bp)
	b, err := e.AppendTo((*bp)[:0])
	if err != nil {
		return fmt.Errorf("p2p: send reliable on %s: %w", ch, err)
	}
	if cap(b) <= l.cfg.MaxMessage {
		*bp = b
	}
	if len(b) > l.cfg.MaxMessage {
		return fmt.Errorf("p2p: send reliable on %s: envelope of %d bytes over %d: %w", ch, len(b), l.cfg.MaxMessage, ErrTooLarge)
	}
	key := convKey{peer: to, ch: ch}
	for {
		c, err := l.convFor(key)
		if err != nil {
			return err
		}
		room := c.spaceSignal() // before Send: an acknowledgement in between closes it
		c.sendMu.RLock()
		if c.retired {
			c.sendMu.RUnlock()
			continue // reaped, restarted or the peer left: take the current one
		}
		err = l.sendOn(c, b)
		c.sendMu.RUnlock()
		switch {
		case err == nil:
			c.touch()
			return nil
		case errors.Is(err, kcploop.ErrSendQueueFull):
			select {
			case <-room:
			case <-ctx.Done():
				return fmt.Errorf("p2p: send reliable on %s to %s: send queue full: %w", ch, to, ctx.Err())
			case <-l.closing:
				return ErrClosed
			}
		case errors.Is(err, kcploop.ErrClosed):
			return ErrClosed // only close closes a conversation that is not retired
		default:
			return fmt.Errorf("p2p: send reliable on %s: %w", ch, err)
		}
	}
}

// sendOn queues b on c, keeping a copy while c is at risk. c.sendMu is
// held for reading.
func (l *channels) sendOn(c *rconv, b []byte) error {
	c.riskMu.Lock()
	defer c.riskMu.Unlock()
	if !c.risky.Load() && c.active.Load() < time.Now().Add(-l.cfg.IdleTimeout/4).UnixNano() && c.kc.Pending() == 0 {
		c.risky.Store(true)
	}
	err := c.kc.Send(b)
	if err == nil && c.risky.Load() {
		c.atRisk = append(c.atRisk, bytes.Clone(b)) // bounded: all unacknowledged, within SendQueue
	}
	return err
}

// settleRisk forgets c's copies once everything is acknowledged.
func (c *rconv) settleRisk() {
	if !c.risky.Load() {
		return
	}
	c.riskMu.Lock()
	defer c.riskMu.Unlock()
	if c.kc.Pending() == 0 {
		c.atRisk = nil
		c.risky.Store(false)
	}
}

// input takes one RELIABLE body from peer from: KCP segments of channel
// ch. It never blocks on the application; seg is not kept.
func (l *channels) input(from string, ch Channel, seg []byte) {
	id, ok := kcploop.ConvID(seg)
	inc := id >> 8
	if !ok || !ch.Valid() || Channel(id&0xff) != ch || inc == 0 {
		l.dropped.Add(1)
		return
	}
	key := convKey{peer: from, ch: ch}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	c := l.convs[key]
	switch {
	case c != nil && c.inc == inc:
	case c != nil && inc > c.inc, c == nil && inc > l.incs[key]:
		// The other peer closed its conversation as idle and started the
		// next incarnation: follow it.
		var prev *rconv
		var resend [][]byte
		if c != nil {
			c.sendMu.Lock()
			if c.kc.Pending() > 0 {
				// Sent while the other peer was closing its side: it never
				// delivered them (§13); they go again on the new one.
				c.riskMu.Lock()
				if resend = c.atRisk; len(resend) == 0 {
					l.lost.Add(1)
					l.log.Debug("p2p: reliable conversation restarted by the other peer with messages unacknowledged", "peer", from, "channel", ch.String())
				}
				c.atRisk = nil
				c.riskMu.Unlock()
			}
			if l.retireSendLocked(c) {
				prev = c
			}
			c.sendMu.Unlock()
			l.restarted.Add(1)
		}
		var err error
		if c, err = l.openLocked(key, inc, prev); err != nil {
			l.mu.Unlock()
			l.dropped.Add(1)
			return
		}
		for _, m := range resend {
			if l.sendOn(c, m) != nil {
				l.lost.Add(1)
			}
		}
		if len(resend) > 0 {
			l.resent.Add(1)
		}
	default: // an old incarnation
		l.mu.Unlock()
		l.dropped.Add(1)
		return
	}
	l.mu.Unlock()
	if err := c.kc.Input(seg); err != nil {
		l.dropped.Add(1)
		return
	}
	c.touch()
	c.settleRisk()
	c.wakeSenders()
	if c.kc.PeekSize() >= 0 {
		l.markReady(c)
	}
}

// retireSendLocked takes c off the map (its incarnation stays in incs),
// takes out the messages it holds unread (to be delivered), and closes
// it; it reports whether there were unread messages. l.mu and c.sendMu
// are held. Sends waiting on c take the next incarnation.
func (l *channels) retireSendLocked(c *rconv) (unread bool) {
	if l.convs[c.key] == c {
		delete(l.convs, c.key)
	}
	for n := c.kc.PeekSize(); n >= 0; n = c.kc.PeekSize() {
		m := make([]byte, n) // rare: bounded by the receive window
		if _, err := c.kc.Recv(m); err != nil {
			break
		}
		c.leftover = append(c.leftover, m)
	}
	_ = c.kc.Close()
	c.retired = true
	if unread = len(c.leftover) > 0; unread {
		l.readyLocked(c)
	}
	c.wakeSenders()
	return unread
}

// retireLocked is retireSendLocked taking c.sendMu. l.mu is held.
func (l *channels) retireLocked(c *rconv) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	l.retireSendLocked(c)
}

// markReady queues c for the delivery goroutine.
func (l *channels) markReady(c *rconv) {
	l.mu.Lock()
	l.readyLocked(c)
	l.mu.Unlock()
}

func (l *channels) readyLocked(c *rconv) {
	if !c.ready && !l.closed {
		c.ready = true
		l.ready = append(l.ready, c)
	}
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// nextReady pops the first ready conversation, or nil.
func (l *channels) nextReady() *rconv {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ready) == 0 {
		return nil
	}
	c := l.ready[0]
	l.ready[0] = nil
	l.ready = l.ready[1:]
	c.ready = false
	return c
}

// peerLeft closes the conversations with peer and forgets their
// incarnations: peer ids are not reused.
func (l *channels) peerLeft(peer string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ch := range []Channel{Ch1, Ch2, Realtime} {
		key := convKey{peer: peer, ch: ch}
		if c := l.convs[key]; c != nil {
			l.retireLocked(c) // what arrived before it left is still delivered
			l.closedN.Add(1)
		}
		delete(l.incs, key)
	}
}

// deliverLoop reads whole messages, one per ready conversation in turn so
// that no channel's backlog holds up another's, and hands them to out; it
// also reaps idle conversations. It closes out when it stops.
func (l *channels) deliverLoop() {
	defer l.wg.Done()
	defer close(l.out)
	buf := make([]byte, maxReliableMessage)
	reap := time.NewTicker(max(l.cfg.IdleTimeout/4, 10*time.Millisecond))
	defer reap.Stop()
	for {
		select {
		case <-l.closing:
			return
		case <-reap.C:
			l.reapIdle()
			continue
		case <-l.wake:
		}
		for c := l.nextReady(); c != nil; c = l.nextReady() {
			src := c
			if p := c.prev; p != nil {
				if l.hasLeftover(p) {
					src = p // the replaced incarnation's messages first
				} else {
					c.prev = nil
				}
			}
			msg, ok := l.take(src, buf)
			if c.prev != nil || l.hasLeftover(c) || c.kc.PeekSize() >= 0 {
				l.markReady(c) // to the back: round-robin
			}
			if !ok {
				continue
			}
			var e p2pwire.Envelope
			if len(msg) > l.cfg.MaxMessage || e.Unmarshal(msg) != nil || e.MessageID != 0 {
				l.dropped.Add(1)
				continue
			}
			m := &ReliableMessage{From: c.key.peer, Channel: c.key.ch,
				Envelope: Envelope{Header: e.Header, Pairs: e.Pairs, Payload: bytes.Clone(e.Payload)}}
			select {
			case l.out <- m:
			case <-l.closing:
				return
			}
		}
	}
}

// hasLeftover reports whether retired c still has messages to deliver.
func (l *channels) hasLeftover(c *rconv) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(c.leftover) > 0
}

// take returns c's next whole message: one it held when retired, or one
// read into buf. ok is false when there is none (ErrShortBuffer cannot
// happen: buf holds what a receive window holds).
func (l *channels) take(c *rconv, buf []byte) (msg []byte, ok bool) {
	l.mu.Lock()
	if len(c.leftover) > 0 {
		msg = c.leftover[0]
		c.leftover[0] = nil
		c.leftover = c.leftover[1:]
		l.mu.Unlock()
		return msg, true
	}
	l.mu.Unlock()
	n, err := c.kc.Recv(buf)
	return buf[:n], err == nil
}

// reapIdle closes the conversations idle for IdleTimeout.
func (l *channels) reapIdle() {
	cutoff := time.Now().Add(-l.cfg.IdleTimeout).UnixNano()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.convs {
		if l.retireIfIdle(c, cutoff) {
			l.reaped.Add(1)
		}
	}
}

// stats returns the counters.
func (l *channels) stats() ReliableStats {
	l.mu.Lock()
	n := len(l.convs)
	l.mu.Unlock()
	return ReliableStats{Conversations: n, Opened: l.opened.Load(), Reaped: l.reaped.Load(), Closed: l.closedN.Load(),
		Restarted: l.restarted.Load(), Resent: l.resent.Load(), Lost: l.lost.Load(), Dropped: l.dropped.Load()}
}
