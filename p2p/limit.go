package p2p

import "sync"

// bucket is a token bucket: rate tokens a second, up to burst. A bucket with
// a negative rate never refuses. Not safe for concurrent use; see sharedBucket.
type bucket struct {
	rate, burst float64
	tokens      float64
	last        int64 // Unix nanoseconds of the last refill
}

func newBucket(rate float64) bucket {
	return bucket{rate: rate, burst: rate, tokens: rate}
}

// take takes n tokens at now (Unix nanoseconds) and reports whether there
// were enough; when not, it takes none.
func (b *bucket) take(now int64, n float64) bool {
	if b.rate < 0 {
		return true
	}
	if now > b.last {
		b.tokens = min(b.burst, b.tokens+float64(now-b.last)*b.rate/1e9)
		b.last = now
	}
	if b.tokens < n {
		return false
	}
	b.tokens -= n
	return true
}

// sharedBucket is a bucket behind a mutex, for a network's quota.
type sharedBucket struct {
	mu sync.Mutex
	b  bucket
}

func (s *sharedBucket) take(now int64, n float64) bool {
	if s.b.rate < 0 {
		return true
	}
	s.mu.Lock()
	ok := s.b.take(now, n)
	s.mu.Unlock()
	return ok
}
