package kcploop

import (
	"fmt"
	"log/slog"
	"time"

	kcp "github.com/xtaci/kcp-go/v5"
)

// Defaults of [Config] and [ConvConfig], used where a field is zero.
const (
	DefaultTick            = 5 * time.Millisecond
	DefaultMTU             = 1200
	DefaultSendWindow      = 128
	DefaultRecvWindow      = 128
	DefaultSendQueue       = 1024
	DefaultMaxMessage      = 64 << 10
	DefaultInterval        = 20 * time.Millisecond
	DefaultNoDelayInterval = 10 * time.Millisecond
)

// Limits checked by [New] and [Loop.Open].
const (
	MinTick     = time.Millisecond
	MaxTick     = 100 * time.Millisecond
	MinMTU      = 256
	MaxMTU      = 9000
	MaxWindow   = 4096
	MaxInterval = 5 * time.Second
	// MinInterval is the shortest flush interval kcp-go accepts.
	MinInterval = 10 * time.Millisecond
	// Overhead is the size of a KCP segment header.
	Overhead = kcp.IKCP_OVERHEAD
)

// KCPSchedulerGoroutine is the top function of the two goroutines
// kcp-go starts when it is imported (see the package doc), for leak
// checks to ignore.
const KCPSchedulerGoroutine = "github.com/xtaci/kcp-go/v5.(*TimedSched).run"

// wheelSlots is the number of slots of the wheel. A conversation due
// further than wheelSlots ticks ahead (an Interval above the wheel's
// span) goes round the wheel and is put back when its slot comes up.
const wheelSlots = 256

// Config configures a [Loop]. Its zero value works. [New] copies it.
type Config struct {
	// Tick is the timer wheel's resolution: conversations are updated
	// at most this late. Zero means DefaultTick; MinTick to MaxTick.
	Tick time.Duration
	// Logger receives rare events (a conversation opened or closed) at
	// debug level, never per datagram. Nil means slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() (Config, error) {
	if c.Tick == 0 {
		c.Tick = DefaultTick
	}
	if c.Tick < MinTick || c.Tick > MaxTick {
		return c, fmt.Errorf("kcploop: Tick %v not in [%v, %v]: %w", c.Tick, MinTick, MaxTick, ErrInvalidConfig)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}

// ConvConfig configures one conversation. Its zero value works. Both
// peers of a conversation should use the same values.
type ConvConfig struct {
	// MTU is the largest KCP datagram handed to the OutputFunc, in bytes,
	// before the caller's own overhead. Zero means DefaultMTU; MinMTU to
	// MaxMTU.
	MTU int
	// SendWindow and RecvWindow are KCP's windows, in segments. Zero
	// means DefaultSendWindow and DefaultRecvWindow; at most MaxWindow.
	// RecvWindow also bounds the segments waiting for Recv.
	SendWindow, RecvWindow int
	// SendQueue is the most segments queued or unacknowledged before
	// Send refuses with ErrSendQueueFull. Zero means DefaultSendQueue.
	SendQueue int
	// MaxMessage is the largest message Send accepts, in bytes. It must
	// fit in min(255, RecvWindow) segments of MTU-24 bytes. Zero means
	// DefaultMaxMessage, or that bound if it is smaller.
	MaxMessage int
	// NoDelay selects KCP's no-delay mode, for latency over bandwidth
	// (p2p's Realtime channel, rooms' reliable messages): a 30 ms
	// minimum RTO instead of 100 ms and a shorter default Interval. In
	// both modes a segment is retransmitted fast after 2 later ones are
	// acknowledged, and KCP's congestion window is off: the windows
	// alone bound what is in flight, as in most kcp-go deployments (with
	// it on, 10 % loss throttles a transfer to a few segments per RTO).
	NoDelay bool
	// Interval is how often KCP flushes. Zero means DefaultInterval, or
	// DefaultNoDelayInterval with NoDelay; MinInterval to MaxInterval.
	Interval time.Duration
}

func (c ConvConfig) withDefaults() (ConvConfig, error) {
	if c.MTU == 0 {
		c.MTU = DefaultMTU
	}
	if c.SendWindow == 0 {
		c.SendWindow = DefaultSendWindow
	}
	if c.RecvWindow == 0 {
		c.RecvWindow = DefaultRecvWindow
	}
	if c.SendQueue == 0 {
		c.SendQueue = DefaultSendQueue
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
		if c.NoDelay {
			c.Interval = DefaultNoDelayInterval
		}
	}
	switch {
	case c.MTU < MinMTU || c.MTU > MaxMTU:
		return c, fmt.Errorf("kcploop: MTU %d not in [%d, %d]: %w", c.MTU, MinMTU, MaxMTU, ErrInvalidConfig)
	case c.SendWindow < 1 || c.SendWindow > MaxWindow || c.RecvWindow < 1 || c.RecvWindow > MaxWindow:
		return c, fmt.Errorf("kcploop: windows %d/%d not in [1, %d]: %w", c.SendWindow, c.RecvWindow, MaxWindow, ErrInvalidConfig)
	case c.SendQueue < 1:
		return c, fmt.Errorf("kcploop: negative SendQueue: %w", ErrInvalidConfig)
	case c.Interval < MinInterval || c.Interval > MaxInterval:
		return c, fmt.Errorf("kcploop: Interval %v not in [%v, %v]: %w", c.Interval, MinInterval, MaxInterval, ErrInvalidConfig)
	case c.MaxMessage < 0:
		return c, fmt.Errorf("kcploop: negative MaxMessage: %w", ErrInvalidConfig)
	}
	limit := min(255, c.RecvWindow) * (c.MTU - Overhead)
	if c.MaxMessage == 0 {
		c.MaxMessage = min(DefaultMaxMessage, limit)
	}
	if c.MaxMessage > limit {
		return c, fmt.Errorf("kcploop: MaxMessage %d over %d (min(255, RecvWindow) segments): %w", c.MaxMessage, limit, ErrInvalidConfig)
	}
	return c, nil
}
