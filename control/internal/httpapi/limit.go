package httpapi

import (
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limiter is a token bucket per key (a client IP or a login session),
// remembering at most max keys. When full it forgets the eighth of the
// keys idle longest, so memory stays bounded whatever the traffic.
type Limiter struct {
	// immutable after NewLimiter
	limit rate.Limit
	burst int
	max   int

	mu   sync.Mutex
	keys map[string]*limiterEntry // guarded by mu
}

type limiterEntry struct {
	lim  *rate.Limiter
	seen time.Time
}

// NewLimiter returns a Limiter of perSecond tokens per second and key,
// buckets of burst tokens and at most max keys; nil (no limit) when
// perSecond is negative.
func NewLimiter(perSecond float64, burst, max int) *Limiter {
	if perSecond < 0 {
		return nil
	}
	return &Limiter{limit: rate.Limit(perSecond), burst: burst, max: max, keys: make(map[string]*limiterEntry)}
}

// Allow takes a token for key at now and reports whether there was one.
// A nil limiter allows everything.
func (l *Limiter) Allow(key string, now time.Time) bool {
	ok, _ := l.Take(key, now)
	return ok
}

// maxRetryAfter caps the wait Take reports, for a limiter that refills
// slowly or not at all.
const maxRetryAfter = time.Hour

// Take is Allow, and when there was no token it also returns how long
// until the key has one again (at most an hour): a 429's Retry-After.
func (l *Limiter) Take(key string, now time.Time) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.keys[key]
	if e == nil {
		if len(l.keys) >= l.max {
			l.evictLocked()
		}
		e = &limiterEntry{lim: rate.NewLimiter(l.limit, l.burst)}
		l.keys[key] = e
	}
	e.seen = now
	if e.lim.AllowN(now, 1) {
		return true, 0
	}
	if l.limit <= 0 {
		return false, maxRetryAfter
	}
	need := 1 - e.lim.TokensAt(now)
	return false, min(time.Duration(need/float64(l.limit)*float64(time.Second)), maxRetryAfter)
}

// evictLocked forgets the 1/8 of the keys idle longest (at least one),
// so that a burst of new keys never resets every bucket at once, and a
// full limiter evicts once per max/8 new keys.
func (l *Limiter) evictLocked() {
	type idle struct {
		key  string
		seen time.Time
	}
	all := make([]idle, 0, len(l.keys))
	for k, e := range l.keys {
		all = append(all, idle{k, e.seen})
	}
	slices.SortFunc(all, func(a, b idle) int { return a.seen.Compare(b.seen) })
	for _, e := range all[:max(1, len(all)/8)] {
		delete(l.keys, e.key)
	}
}
