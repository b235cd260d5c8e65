package kcploop

import (
	"sync"

	kcp "github.com/xtaci/kcp-go/v5"
)

// A Conv is one KCP conversation on a [Loop]. Its methods are safe for
// concurrent use.
type Conv struct {
	// immutable after Open
	loop *Loop
	id   uint32
	cfg  ConvConfig
	out  OutputFunc

	mu     sync.Mutex
	kcp    *kcp.KCP // guarded by mu
	closed bool     // guarded by mu and loop.mu (set holding both)
	// dirty says KCP may have something to send that no timer of its
	// own will bring out: acknowledgements or a window answer after
	// Input, a window update after Recv, a message after Send. The next
	// wheel step flushes it. Guarded by mu.
	dirty bool

	// guarded by loop.mu: the wheel's list
	slot       int // -1 when off the wheel
	prev, next *Conv
	// guarded by loop.mu and mu (written holding both)
	due  uint32 // kcp time the conversation is due
	idle bool   // off the wheel with nothing to do until Input, Send or Recv
}

// ID returns the conversation id.
func (c *Conv) ID() uint32 { return c.id }

// Config returns the conversation's configuration, defaults filled in.
func (c *Conv) Config() ConvConfig { return c.cfg }

// output is KCP's output callback; c.mu is held.
func (c *Conv) output(b []byte, n int) { c.out(c, b[:n]) }

func (c *Conv) lock() error {
	c.mu.Lock()
	if c.closed || c.loop.done.Load() {
		c.mu.Unlock()
		return ErrClosed
	}
	return nil
}

// Input hands the conversation one KCP datagram received from the peer.
// Acknowledgements and window updates it triggers are sent through the
// OutputFunc before Input returns. It returns [ErrMalformed] for a
// datagram that is not KCP for this conversation and [ErrClosed].
func (c *Conv) Input(b []byte) error {
	if id, ok := ConvID(b); !ok || id != c.id {
		return ErrMalformed
	}
	if err := c.lock(); err != nil {
		return err
	}
	defer c.mu.Unlock()
	if c.kcp.Input(b, kcp.IKCP_PACKET_REGULAR, false) < 0 {
		return ErrMalformed
	}
	c.wakeLocked()
	return nil
}

// wakeLocked marks c dirty and puts it back on the wheel, one tick
// ahead, if it was idle. c.mu is held.
func (c *Conv) wakeLocked() {
	c.dirty = true
	l := c.loop
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.idle && !c.closed && !l.closed {
		c.idle = false
		c.due = l.now()
		l.insertLocked(c, 1)
	}
}

// Send queues msg (copied) as one message; it leaves on the next flush.
// It returns [ErrTooLarge], [ErrSendQueueFull] (nothing was queued) or
// [ErrClosed].
func (c *Conv) Send(msg []byte) error {
	if len(msg) == 0 || len(msg) > c.cfg.MaxMessage {
		return ErrTooLarge
	}
	if err := c.lock(); err != nil {
		return err
	}
	defer c.mu.Unlock()
	segs := (len(msg) + c.cfg.MTU - Overhead - 1) / (c.cfg.MTU - Overhead)
	if c.kcp.WaitSnd()+segs > c.cfg.SendQueue {
		return ErrSendQueueFull
	}
	if c.kcp.Send(msg) < 0 {
		return ErrTooLarge
	}
	c.wakeLocked()
	return nil
}

// SendFlush is Send followed by [Conv.Flush]: msg leaves at once, in
// this call, as far as KCP's windows allow, rather than on the
// conversation's next flush (up to Interval later). Use it for a message
// whose latency matters (a game's input); several messages sent with
// Send and then one Flush share datagrams instead.
func (c *Conv) SendFlush(msg []byte) error {
	if err := c.Send(msg); err != nil {
		return err
	}
	return c.Flush()
}

// Flush sends at once, through the OutputFunc and before it returns,
// what KCP holds: pending acknowledgements, queued messages as far as
// the windows allow and retransmissions that are due. It returns
// [ErrClosed] on a closed conversation.
func (c *Conv) Flush() error {
	if err := c.lock(); err != nil {
		return err
	}
	defer c.mu.Unlock()
	kcpFlush(c.kcp, kcp.IKCP_FLUSH_FULL)
	c.dirty = false
	return nil
}

// SetSendWindow changes the send window to n segments (1 to MaxWindow)
// and flushes at once, so that what a larger window lets out leaves now.
// A transport opens a conversation with a small window while its peer's
// address is unproven and widens it once the peer has answered. It
// returns [ErrInvalidConfig] for n out of range and [ErrClosed].
func (c *Conv) SetSendWindow(n int) error {
	if n < 1 || n > MaxWindow {
		return ErrInvalidConfig
	}
	if err := c.lock(); err != nil {
		return err
	}
	defer c.mu.Unlock()
	c.kcp.WndSize(n, 0) // 0: the receive window stays
	kcpFlush(c.kcp, kcp.IKCP_FLUSH_FULL)
	c.dirty = false
	return nil
}

// Recv copies the next whole message into buf and returns its length.
// It does not block: it returns [ErrNoMessage] when none is waiting,
// [ErrShortBuffer] when buf is too short (the message stays), or
// [ErrClosed]. Messages come in the order they were sent.
func (c *Conv) Recv(buf []byte) (int, error) {
	if err := c.lock(); err != nil {
		return 0, err
	}
	defer c.mu.Unlock()
	switch n := c.kcp.Recv(buf); n {
	case -1:
		return 0, ErrNoMessage
	case -2:
		return 0, ErrShortBuffer
	default:
		c.wakeLocked() // the receive window may have reopened
		return n, nil
	}
}

// PeekSize returns the size of the next whole message, or -1 if none
// is waiting (or the conversation is closed).
func (c *Conv) PeekSize() int {
	if c.lock() != nil {
		return -1
	}
	defer c.mu.Unlock()
	return c.kcp.PeekSize()
}

// Pending returns the number of segments queued or unacknowledged.
func (c *Conv) Pending() int {
	if c.lock() != nil {
		return 0
	}
	defer c.mu.Unlock()
	return c.kcp.WaitSnd()
}

// Close takes the conversation off the loop; unacknowledged data is
// dropped and later calls return [ErrClosed]. It is idempotent.
func (c *Conv) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.loop
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	l.removeLocked(c)
	l.convs--
	l.log.Debug("kcploop: conversation closed", "conv", c.id)
	return nil
}
