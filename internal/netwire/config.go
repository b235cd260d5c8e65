package netwire

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Defaults of [Config], used where a field is zero.
const (
	// DefaultLimit is the most packets waiting in one direction: 1.3 s of
	// a 100-player benchmark's traffic at a 100 ms delay.
	DefaultLimit = 4096
	// DefaultMaxPacket is the largest packet carried, in bytes; the TUN
	// devices' MTU must not exceed it (scripts/netem sets 1500).
	DefaultMaxPacket = 2048
)

// Limits on [Config] fields, checked by [New].
const (
	MaxLimit     = 1 << 16
	MaxMaxPacket = 65535
	MaxDelay     = 10 * time.Second // Delay and Jitter each
)

// Config configures a [Wire]. The zero value forwards every packet at
// once; [New] copies it.
type Config struct {
	// AB and BA are the faults of each direction: AB what [Wire.Serve]'s
	// first device sends toward the second, BA the reverse. The zero
	// value injects none.
	AB, BA Faults
	// Limit is the most packets waiting in each direction; more are
	// dropped and counted. Zero means DefaultLimit; at most MaxLimit.
	// Memory is at most 2 × (Limit+1) × MaxPacket.
	Limit int
	// MaxPacket is the largest packet carried, in bytes; a longer one is
	// dropped and counted. Zero means DefaultMaxPacket; at most
	// MaxMaxPacket.
	MaxPacket int
	// Seed seeds the loss and jitter draws (each direction its own
	// generator from Seed and the direction). Zero picks a random seed;
	// [Wire.Seed] reports it.
	Seed uint64
}

// Faults are the impairments of one direction. The zero value injects
// nothing.
type Faults struct {
	// Delay is the one-way delay each packet waits. Zero means none; at
	// most MaxDelay.
	Delay time.Duration
	// Jitter is the width of a uniform extra delay in [0, Jitter) drawn
	// per packet. Zero means none; at most MaxDelay.
	Jitter time.Duration
	// Reorder lets jittered packets overtake each other. False (the
	// default) keeps the direction's order: a packet never leaves before
	// the one read before it.
	Reorder bool
	// Loss is the probability, in [0, 1], that a packet is dropped. Zero
	// means none.
	Loss float64
}

// Both returns a Config with the same faults f in both directions.
func Both(f Faults) Config { return Config{AB: f, BA: f} }

func (f Faults) check() error {
	switch {
	case f.Delay < 0 || f.Delay > MaxDelay:
		return fmt.Errorf("netwire: Delay %v not in [0, %v]: %w", f.Delay, MaxDelay, ErrInvalidConfig)
	case f.Jitter < 0 || f.Jitter > MaxDelay:
		return fmt.Errorf("netwire: Jitter %v not in [0, %v]: %w", f.Jitter, MaxDelay, ErrInvalidConfig)
	case math.IsNaN(f.Loss) || f.Loss < 0 || f.Loss > 1:
		return fmt.Errorf("netwire: Loss %v is not a probability: %w", f.Loss, ErrInvalidConfig)
	}
	return nil
}

func (c Config) withDefaults() (Config, error) {
	if err := errors.Join(c.AB.check(), c.BA.check()); err != nil {
		return c, err
	}
	switch {
	case c.Limit < 0 || c.Limit > MaxLimit:
		return c, fmt.Errorf("netwire: Limit %d not in [0, %d]: %w", c.Limit, MaxLimit, ErrInvalidConfig)
	case c.MaxPacket < 0 || c.MaxPacket > MaxMaxPacket:
		return c, fmt.Errorf("netwire: MaxPacket %d not in [0, %d]: %w", c.MaxPacket, MaxMaxPacket, ErrInvalidConfig)
	}
	if c.Limit == 0 {
		c.Limit = DefaultLimit
	}
	if c.MaxPacket == 0 {
		c.MaxPacket = DefaultMaxPacket
	}
	return c, nil
}

// DirStats counts what happened to the packets of one direction.
type DirStats struct {
	Received    uint64 // read from the device
	Forwarded   uint64 // written to the other device
	Lost        uint64 // dropped by Loss
	Overflowed  uint64 // dropped because Limit packets were waiting
	Oversized   uint64 // longer than MaxPacket
	WriteErrors uint64 // the other device refused the write
}

// Stats are a snapshot of a [Wire]'s counters: AB is what [Wire.Serve]'s
// first device sent toward the second, BA the reverse.
type Stats struct {
	AB, BA DirStats
}
