package udp

import (
	"hash/maphash"
	"net/netip"
	"time"
)

// sourceWays is the number of entries of one set of a [sourceLimiter]: a
// source can only live in the set its hash names, and a new source evicts
// one of that set's entries.
const sourceWays = 8

// sourceLimiter limits the new HANDSHAKEs per source (Config.SourceHandshakeRate
// and SourceHandshakeBurst), in front of the node-wide limit, so that one
// address flooding HANDSHAKEs spends its own budget and not everyone's.
//
// A source is an IPv4 address (IPv4-mapped IPv6 addresses count as IPv4)
// or an IPv6 /64, the prefix one subscriber or host gets (RFC 6177), as
// the node's WebSocket admission and the relay count them. Its budget is a
// token bucket.
//
// The table is fixed at New: Config.MaxHandshakeSources entries (rounded
// up to a multiple of sourceWays), in sets of sourceWays chosen by a hash
// of the source keyed with a random seed, so that nobody can aim sources
// at one set. Nothing is allocated afterwards. A source not in the table
// takes the entry of its set with the most tokens now, the least recently
// used among equals. A bucket that has refilled to its burst is worth
// nothing (a source that comes back starts full anyway), so a flood of
// spoofed random sources, each charged once, evicts its own entries (one
// token short of full, and full again within 1/rate) long before it
// evicts a source that spends its budget: to push a flooding source out,
// all the other entries of its set must hold fewer tokens than it does,
// that is, come from sources that flood as hard. Only then does a source
// regain its burst early, once per eviction.
//
// It is owned by the reader goroutine: no lock.
type sourceLimiter struct {
	rate  int64 // tokens per second: nano-tokens per nanosecond
	burst int64 // in nano-tokens
	seed  maphash.Seed
	epoch time.Time
	sets  [][sourceWays]sourceEntry
}

// nanoToken is one token in a bucket's fixed-point count: integers keep
// the refill exact however often a flooding source is looked at.
const nanoToken = 1e9

// sourceEntry is one source's token bucket, 32 bytes.
type sourceEntry struct {
	key    [16]byte // sourceKey
	last   int64    // the limiter's clock at the last refill; 0: a free entry
	tokens int64    // nano-tokens
}

// newSourceLimiter returns a table of at least n sources, each allowed
// perSecond new HANDSHAKEs a second and burst at once.
func newSourceLimiter(perSecond, burst, n int) *sourceLimiter {
	return &sourceLimiter{
		rate:  int64(perSecond),
		burst: int64(burst) * nanoToken,
		seed:  maphash.MakeSeed(),
		epoch: time.Now(),
		sets:  make([][sourceWays]sourceEntry, max(1, (n+sourceWays-1)/sourceWays)),
	}
}

// now is the limiter's clock: monotonic nanoseconds since New, from 1 (0
// marks a free entry).
func (l *sourceLimiter) now() int64 { return int64(time.Since(l.epoch)) + 1 }

// sourceKey is what a source is counted by: the IPv4 address (as its
// IPv4-mapped form), or the IPv6 address with its last 64 bits cleared.
// The two never collide: a mapped address has 0xffff in bytes 10 and 11.
func sourceKey(ap netip.AddrPort) [16]byte {
	a := ap.Addr().Unmap()
	k := a.As16()
	if !a.Is4() {
		clear(k[8:])
	}
	return k
}

// check refills ap's bucket to now and reports whether it holds a token,
// with the entry to charge ([sourceEntry.spend]) once the HANDSHAKE is
// taken; it charges nothing itself. A source not in the table gets an
// entry, full.
func (l *sourceLimiter) check(ap netip.AddrPort, now int64) (*sourceEntry, bool) {
	k := sourceKey(ap)
	set := &l.sets[maphash.Comparable(l.seed, k)%uint64(len(l.sets))]
	var victim *sourceEntry
	most := int64(-1)
	for i := range set {
		e := &set[i]
		if e.last == 0 {
			if victim == nil || victim.last != 0 {
				victim, most = e, l.burst+1 // a free entry beats any used one
			}
			continue
		}
		if e.key == k {
			l.refill(e, now)
			return e, e.tokens >= nanoToken
		}
		if t := l.tokensAt(e, now); t > most || (t == most && victim.last != 0 && e.last < victim.last) {
			victim, most = e, t
		}
	}
	*victim = sourceEntry{key: k, last: now, tokens: l.burst}
	return victim, true
}

// tokensAt is what e holds at now, in nano-tokens.
func (l *sourceLimiter) tokensAt(e *sourceEntry, now int64) int64 {
	d := now - e.last
	if d <= 0 {
		return e.tokens
	}
	if need := l.burst - e.tokens; d >= need/l.rate+1 { // also keeps d*rate from overflowing
		return l.burst
	}
	return min(l.burst, e.tokens+d*l.rate)
}

func (l *sourceLimiter) refill(e *sourceEntry, now int64) {
	e.tokens = l.tokensAt(e, now)
	if now > e.last {
		e.last = now
	}
}

// spend charges one token, after [sourceLimiter.check] found one.
func (e *sourceEntry) spend() { e.tokens -= nanoToken }
