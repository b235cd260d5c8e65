package impair

import (
	"fmt"
	"log/slog"
	"math"
	"time"
)

// Defaults of [Config] and [Faults], used where a field is zero.
const (
	DefaultMaxDatagram  = 2048
	DefaultQueueDepth   = 4096
	DefaultMaxClients   = 64
	DefaultReorderDelay = 20 * time.Millisecond
)

// Limits on [Config] fields, checked by [New].
const (
	MaxMaxDatagram = 65535
	MaxQueueDepth  = 1 << 16
)

// Direction names one way through the proxy.
type Direction int

const (
	// Up is client→target.
	Up Direction = iota
	// Down is target→client.
	Down
)

func (d Direction) String() string {
	if d == Up {
		return "up"
	}
	return "down"
}

// Config configures a [Proxy]. Only Target is required; every other zero
// field takes its documented default. [New] copies it.
type Config struct {
	// Target is the host:port of the UDP server behind the proxy.
	// Required.
	Target string
	// Seed seeds every random decision (see the package doc). Zero picks
	// a random seed; [Proxy.Seed] reports it.
	Seed uint64
	// Up and Down are the faults injected from the start in each
	// direction. The zero value injects none.
	Up, Down Faults
	// Logger receives client and rebind events at debug level, never per
	// datagram. Nil means slog.Default().
	Logger *slog.Logger

	// MaxDatagram is the largest datagram forwarded, in bytes; longer
	// ones are dropped and counted. Zero means DefaultMaxDatagram; at
	// most MaxMaxDatagram.
	MaxDatagram int
	// QueueDepth is the most datagrams waiting for their delay, both
	// directions together. Memory is at most QueueDepth × MaxDatagram.
	// Zero means DefaultQueueDepth; at most MaxQueueDepth.
	QueueDepth int
	// MaxClients is the most client addresses given an upstream socket.
	// Zero means DefaultMaxClients.
	MaxClients int
}

// Faults are the impairments of one direction. The zero value injects
// nothing.
type Faults struct {
	// Loss is the probability, in [0, 1], that a datagram is dropped.
	Loss float64
	// Duplicate is the probability, in [0, 1], that a datagram that is
	// not lost is sent twice.
	Duplicate float64
	// Reorder is the probability, in [0, 1], that a copy is held back a
	// further ReorderDelay.
	Reorder float64
	// ReorderDelay is how long a reordered copy is held back beyond its
	// delay. Zero means DefaultReorderDelay.
	ReorderDelay time.Duration
	// Delay is added to every datagram. Zero means none.
	Delay time.Duration
	// Jitter is the width of a uniform extra delay in [0, Jitter) drawn
	// per copy. Zero means none.
	Jitter time.Duration
}

func (f Faults) withDefaults() (Faults, error) {
	for _, p := range []struct {
		name string
		v    float64
	}{{"Loss", f.Loss}, {"Duplicate", f.Duplicate}, {"Reorder", f.Reorder}} {
		if math.IsNaN(p.v) || p.v < 0 || p.v > 1 {
			return f, fmt.Errorf("impair: %s %v is not a probability: %w", p.name, p.v, ErrInvalidConfig)
		}
	}
	if f.ReorderDelay < 0 || f.Delay < 0 || f.Jitter < 0 {
		return f, fmt.Errorf("impair: negative duration in %+v: %w", f, ErrInvalidConfig)
	}
	if f.ReorderDelay == 0 {
		f.ReorderDelay = DefaultReorderDelay
	}
	return f, nil
}

func (c Config) withDefaults() (Config, error) {
	if c.Target == "" {
		return c, fmt.Errorf("impair: no Target: %w", ErrInvalidConfig)
	}
	var err error
	if c.Up, err = c.Up.withDefaults(); err != nil {
		return c, err
	}
	if c.Down, err = c.Down.withDefaults(); err != nil {
		return c, err
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	switch {
	case c.MaxDatagram < 0 || c.MaxDatagram > MaxMaxDatagram:
		return c, fmt.Errorf("impair: MaxDatagram %d not in [0, %d]: %w", c.MaxDatagram, MaxMaxDatagram, ErrInvalidConfig)
	case c.QueueDepth < 0 || c.QueueDepth > MaxQueueDepth:
		return c, fmt.Errorf("impair: QueueDepth %d not in [0, %d]: %w", c.QueueDepth, MaxQueueDepth, ErrInvalidConfig)
	case c.MaxClients < 0:
		return c, fmt.Errorf("impair: negative MaxClients: %w", ErrInvalidConfig)
	}
	if c.MaxDatagram == 0 {
		c.MaxDatagram = DefaultMaxDatagram
	}
	if c.QueueDepth == 0 {
		c.QueueDepth = DefaultQueueDepth
	}
	if c.MaxClients == 0 {
		c.MaxClients = DefaultMaxClients
	}
	return c, nil
}

// DirStats counts what happened to the datagrams of one direction.
type DirStats struct {
	Received   uint64 // read from a socket
	Forwarded  uint64 // written, duplicates included
	Lost       uint64 // dropped by Loss
	Duplicated uint64 // sent a second time
	Reordered  uint64 // held back by Reorder
	Blackholed uint64 // dropped by a blackout
	Overflowed uint64 // dropped because QueueDepth datagrams were waiting
	Oversized  uint64 // longer than MaxDatagram
	Refused    uint64 // from a client beyond MaxClients (Up only)
	SendErrors uint64 // a write failed (e.g. the upstream socket was rebound)
}

// Stats are a snapshot of a [Proxy]'s counters.
type Stats struct {
	Up, Down DirStats
	Clients  int    // client addresses with an upstream socket
	Rebinds  uint64 // calls of Rebind that replaced sockets
}
