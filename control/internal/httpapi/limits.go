package httpapi

import (
	"time"

	"github.com/switchboardgg/switchboard/store"
)

// Defaults of [Limits], shared by the rooms and P2P APIs (and control's
// Config, which names them again for its callers).
const (
	// DefaultMaxBodyBytes bounds every request body.
	DefaultMaxBodyBytes = 64 << 10
	// DefaultCommandTimeout is how long an API waits for a node (a game
	// node or a hub) to answer a command before it counts the node as
	// unavailable.
	DefaultCommandTimeout = store.DefaultCommandTimeout
	// DefaultJoinRate and DefaultJoinBurst limit joins per login session;
	// they also bound join-code guessing.
	DefaultJoinRate  = 2.0
	DefaultJoinBurst = 10
	// DefaultMaxRateLimitKeys bounds the keys (sessions, addresses) a
	// [Limiter] remembers at once.
	DefaultMaxRateLimitKeys = 10000
)

// Limits are the limits an API under control shares with the others:
// request bodies, the wait for a node's answer and the join limiter.
// The zero value works: [Limits.WithDefaults] fills each zero field with
// its Default.
type Limits struct {
	// MaxBodyBytes bounds request bodies, in bytes; larger ones get 400.
	// Zero means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// CommandTimeout bounds the wait for a node's answer. Zero means
	// DefaultCommandTimeout.
	CommandTimeout time.Duration
	// JoinRate is the refill rate, per second and login session, of the
	// join limiter. Zero means DefaultJoinRate; negative turns it off.
	JoinRate float64
	// JoinBurst is the join limiter's bucket size. Zero means
	// DefaultJoinBurst.
	JoinBurst int
	// MaxRateLimitKeys bounds the sessions the join limiter remembers;
	// when full, it forgets the keys idle longest. Zero means
	// DefaultMaxRateLimitKeys.
	MaxRateLimitKeys int
}

// WithDefaults returns a copy of l with the zero (or, for sizes and
// durations, negative) fields set to their Defaults.
func (l Limits) WithDefaults() Limits {
	if l.MaxBodyBytes <= 0 {
		l.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if l.CommandTimeout <= 0 {
		l.CommandTimeout = DefaultCommandTimeout
	}
	if l.JoinRate == 0 {
		l.JoinRate = DefaultJoinRate
	}
	if l.JoinBurst <= 0 {
		l.JoinBurst = DefaultJoinBurst
	}
	if l.MaxRateLimitKeys <= 0 {
		l.MaxRateLimitKeys = DefaultMaxRateLimitKeys
	}
	return l
}

// JoinLimiter returns the per-session join limiter of l (nil, no limit,
// when JoinRate is negative). Call it on l.WithDefaults().
func (l Limits) JoinLimiter() *Limiter {
	return NewLimiter(l.JoinRate, l.JoinBurst, l.MaxRateLimitKeys)
}
