package faultproxy

import (
	"fmt"
	"log/slog"
	"math"
	"time"
)

// Defaults of [Config] and [Faults], used where a field is zero.
const (
	DefaultDialTimeout   = 5 * time.Second
	DefaultMaxConns      = 1024
	DefaultChunkSize     = 16 << 10
	DefaultQueueDepth    = 4
	DefaultFaultInterval = 50 * time.Millisecond
	DefaultStallMax      = 500 * time.Millisecond
)

// Limits on [Config] fields, checked by [New].
const (
	MaxChunkSize  = 1 << 20
	MaxQueueDepth = 64
)

// Config configures a [Proxy]. Only Target is required; every other zero
// field takes its documented default. [New] copies it.
type Config struct {
	// Target is the host:port every accepted connection is forwarded to.
	// Required.
	Target string
	// Seed seeds every random choice of the proxy: connection n uses a
	// generator derived from (Seed, n), the fault scheduler one derived
	// from (Seed, 0). Zero picks a random seed; [Proxy.Seed] reports it.
	Seed int64
	// Faults are the faults injected from the start. The zero value
	// injects none. [Proxy.SetFaults] replaces them at runtime.
	Faults Faults
	// Logger receives connection and fault events at debug level, never
	// per chunk. Nil means slog.Default().
	Logger *slog.Logger

	// DialTimeout bounds dialing Target. Zero means DefaultDialTimeout.
	DialTimeout time.Duration
	// MaxConns is the most live proxied connections; more are closed on
	// accept and counted in Stats.Rejected. Zero means DefaultMaxConns.
	MaxConns int
	// ChunkSize is the largest read, in bytes, forwarded as one unit (and
	// delayed as one unit). Zero means DefaultChunkSize; at most
	// MaxChunkSize.
	ChunkSize int
	// QueueDepth is how many chunks, per direction, may wait for their
	// delay or for a stall to end before the proxy stops reading and TCP
	// back-pressure takes over. Memory per connection is about
	// 2 × (QueueDepth+1) × ChunkSize. Zero means DefaultQueueDepth; at
	// most MaxQueueDepth.
	QueueDepth int
	// FaultInterval is how often the scheduler draws severs and stalls
	// for every live connection. Zero means DefaultFaultInterval.
	FaultInterval time.Duration
}

// Faults are the random faults a [Proxy] injects. Faults only cut, pause or
// delay a connection: bytes are never altered, dropped from the middle or
// reordered. The zero value injects nothing.
type Faults struct {
	// SeverRate is the mean number of severs per connection per second
	// (a Poisson rate): the proxy closes both sides of the connection.
	// Zero means never.
	SeverRate float64
	// StallRate is the mean number of stalls per connection per second.
	// A stall stops forwarding client→target, target→client or both
	// (chosen at random) for a duration in [StallMin, StallMax], without
	// closing anything. Zero means never.
	StallRate float64
	// StallMin and StallMax bound a stall's duration, drawn uniformly.
	// StallMax zero means max(StallMin, DefaultStallMax).
	StallMin, StallMax time.Duration
	// DelayMin and DelayMax bound the latency added to every chunk,
	// drawn uniformly per chunk; order is kept, so a chunk never leaves
	// before the one read before it. DelayMax zero means no delay.
	DelayMin, DelayMax time.Duration
}

func (c *Config) fill() error {
	if c.Target == "" {
		return fmt.Errorf("faultproxy: empty Target: %w", ErrInvalidConfig)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.MaxConns == 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.ChunkSize == 0 {
		c.ChunkSize = DefaultChunkSize
	}
	if c.QueueDepth == 0 {
		c.QueueDepth = DefaultQueueDepth
	}
	if c.FaultInterval == 0 {
		c.FaultInterval = DefaultFaultInterval
	}
	switch {
	case c.DialTimeout < 0, c.MaxConns < 0, c.FaultInterval < 0:
		return fmt.Errorf("faultproxy: negative DialTimeout, MaxConns or FaultInterval: %w", ErrInvalidConfig)
	case c.ChunkSize < 0 || c.ChunkSize > MaxChunkSize:
		return fmt.Errorf("faultproxy: ChunkSize %d not in [1, %d]: %w", c.ChunkSize, MaxChunkSize, ErrInvalidConfig)
	case c.QueueDepth < 0 || c.QueueDepth > MaxQueueDepth:
		return fmt.Errorf("faultproxy: QueueDepth %d not in [1, %d]: %w", c.QueueDepth, MaxQueueDepth, ErrInvalidConfig)
	}
	return c.Faults.fill()
}

func (f *Faults) fill() error {
	for _, r := range []float64{f.SeverRate, f.StallRate} {
		if r < 0 || math.IsNaN(r) || math.IsInf(r, 0) {
			return fmt.Errorf("faultproxy: rate %v not finite and >= 0: %w", r, ErrInvalidConfig)
		}
	}
	if f.StallMin < 0 || f.StallMax < 0 || f.DelayMin < 0 || f.DelayMax < 0 {
		return fmt.Errorf("faultproxy: negative fault duration: %w", ErrInvalidConfig)
	}
	if f.StallMax == 0 {
		f.StallMax = max(f.StallMin, DefaultStallMax)
	}
	if f.StallMin > f.StallMax || (f.DelayMax > 0 && f.DelayMin > f.DelayMax) {
		return fmt.Errorf("faultproxy: fault minimum above maximum: %w", ErrInvalidConfig)
	}
	return nil
}
