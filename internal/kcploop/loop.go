package kcploop

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	kcp "github.com/xtaci/kcp-go/v5"
)

// OutputFunc sends one KCP datagram for conversation c. It runs with c
// locked (see the package doc); b is valid only until it returns.
type OutputFunc func(c *Conv, b []byte)

// ConvID returns the conversation id of a KCP datagram, so that a read
// loop can find the [Conv] to hand it to. ok is false when b is shorter
// than a KCP header.
func ConvID(b []byte) (id uint32, ok bool) {
	if len(b) < Overhead {
		return 0, false
	}
	return binary.LittleEndian.Uint32(b), true
}

// A Loop schedules the KCP updates of many conversations on one timer
// wheel. Its methods are safe for concurrent use.
type Loop struct {
	// immutable after New
	cfg   Config
	log   *slog.Logger
	clock *kcp.KCP // never updated: its Check reads kcp-go's clock
	stop  chan struct{}
	done  atomic.Bool // set by Close

	mu       sync.Mutex
	slots    [wheelSlots]*Conv // guarded by mu: heads of doubly-linked lists
	cursor   int               // guarded by mu: the slot that fires next
	convs    int               // guarded by mu: open conversations
	closed   bool              // guarded by mu
	running  bool              // guarded by mu
	stopOnce sync.Once

	scratch []*Conv // owned by Run: the conversations of the slot firing
}

// New checks cfg and returns a Loop. It starts nothing; see [Loop.Run].
// Errors wrap [ErrInvalidConfig].
func New(cfg Config) (*Loop, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Loop{
		cfg:   cfg,
		log:   cfg.Logger,
		clock: kcp.NewKCP(0, func([]byte, int) {}),
		stop:  make(chan struct{}),
	}, nil
}

// now returns kcp-go's millisecond clock: a KCP that was never updated
// answers Check with the current time, and reads nothing it writes.
func (l *Loop) now() uint32 { return l.clock.Check() }

// Open starts conversation id with the given configuration; out receives
// every datagram it sends. The conversation is updated by [Loop.Run]
// until [Conv.Close]. Errors wrap [ErrInvalidConfig], or are [ErrClosed].
func (l *Loop) Open(id uint32, cfg ConvConfig, out OutputFunc) (*Conv, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, fmt.Errorf("kcploop: nil OutputFunc: %w", ErrInvalidConfig)
	}
	c := &Conv{loop: l, id: id, cfg: cfg, out: out, slot: -1, due: l.now()}
	c.kcp = kcp.NewKCP(id, c.output)
	c.kcp.SetMtu(cfg.MTU)
	c.kcp.WndSize(cfg.SendWindow, cfg.RecvWindow)
	nd := 0
	if cfg.NoDelay {
		nd = 1
	}
	c.kcp.NoDelay(nd, int(cfg.Interval/time.Millisecond), 2, 1)

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, ErrClosed
	}
	l.convs++
	l.insertLocked(c, 1)
	l.log.Debug("kcploop: conversation opened", "conv", id)
	return c, nil
}

// Conversations returns the number of open conversations.
func (l *Loop) Conversations() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.convs
}

// insertLocked puts c ticks slots after the cursor (1 ≤ ticks <
// wheelSlots).
func (l *Loop) insertLocked(c *Conv, ticks int) {
	ticks = max(1, min(ticks, wheelSlots-1))
	s := (l.cursor + ticks) % wheelSlots
	c.slot = s
	c.prev = nil
	c.next = l.slots[s]
	if c.next != nil {
		c.next.prev = c
	}
	l.slots[s] = c
}

// removeLocked takes c off the wheel if it is on it.
func (l *Loop) removeLocked(c *Conv) {
	if c.slot < 0 {
		return
	}
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		l.slots[c.slot] = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	}
	c.prev, c.next, c.slot = nil, nil, -1
}

// schedule puts c back on the wheel for kcp time due.
func (l *Loop) schedule(c *Conv, due uint32) {
	delay := time.Duration(int32(due-l.now())) * time.Millisecond
	ticks := int((delay + l.cfg.Tick - 1) / l.cfg.Tick)
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.closed || l.closed {
		return
	}
	l.removeLocked(c)
	c.due = due
	l.insertLocked(c, ticks)
}

// Run drives the timer wheel until ctx ends (it returns ctx.Err()) or
// [Loop.Close] (it returns [ErrClosed]). It is the only goroutine the
// package needs; run it once per Loop.
func (l *Loop) Run(ctx context.Context) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	if l.running {
		l.mu.Unlock()
		return fmt.Errorf("kcploop: Run called twice: %w", ErrInvalidConfig)
	}
	l.running = true
	l.mu.Unlock()

	ticker := time.NewTicker(l.cfg.Tick)
	defer ticker.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-l.stop:
			return ErrClosed
		case now := <-ticker.C:
			// Fire every slot that elapsed, at most a whole wheel.
			n := int(now.Sub(last) / l.cfg.Tick)
			n = max(1, min(n, wheelSlots))
			last = last.Add(time.Duration(n) * l.cfg.Tick)
			if now.Sub(last) > l.cfg.Tick {
				last = now
			}
			for range n {
				l.step()
			}
		}
	}
}

// step fires the next slot of the wheel.
func (l *Loop) step() {
	l.scratch = l.advance(l.scratch[:0])
	l.update(l.scratch)
	clear(l.scratch)
}

// advance moves the cursor one slot and detaches the conversations in
// it.
func (l *Loop) advance(due []*Conv) []*Conv {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cursor = (l.cursor + 1) % wheelSlots
	for c := l.slots[l.cursor]; c != nil; {
		next := c.next
		c.prev, c.next, c.slot = nil, nil, -1
		due = append(due, c)
		c = next
	}
	l.slots[l.cursor] = nil
	return due
}

// update runs KCP's Update for each conversation that is due, after a
// flush when it is dirty, and puts it back on the wheel; those not yet due
// (a long Interval) go back unchanged. A conversation with nothing
// unacknowledged and nothing new to send leaves the wheel (idle) until
// Input, Send or Recv wakes it: KCP has no timer of its own then, and a
// node's conversations are idle most of the time (its inputs arrive a
// tick apart and need one acknowledgement each), so the wheel costs in
// proportion to the traffic rather than to the conversations.
func (l *Loop) update(due []*Conv) {
	now := l.now()
	for _, c := range due {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			continue
		}
		if c.dirty {
			kcpFlush(c.kcp, kcp.IKCP_FLUSH_FULL)
			c.dirty = false
		}
		if c.kcp.WaitSnd() == 0 {
			// Nothing in flight: no retransmission or window probe is
			// due, and the flush above sent any acknowledgement.
			l.park(c)
			c.mu.Unlock()
			continue
		}
		next := c.due
		if int32(now-c.due) >= 0 {
			c.kcp.Update()
			next = c.kcp.Check()
		}
		l.schedule(c, next)
		c.mu.Unlock()
	}
}

// park takes c off the wheel until it is woken; c.mu is held.
func (l *Loop) park(c *Conv) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.closed || l.closed {
		return
	}
	l.removeLocked(c)
	c.idle = true
}

// Close stops [Loop.Run] and closes every conversation's use of the
// loop: their methods then return [ErrClosed]. It is idempotent.
func (l *Loop) Close() error {
	l.mu.Lock()
	l.closed = true
	l.done.Store(true)
	l.mu.Unlock()
	l.stopOnce.Do(func() { close(l.stop) })
	return nil
}
