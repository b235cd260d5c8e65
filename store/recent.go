package store

import "sync"

// maxRecent bounds the records a recent cache remembers.
const maxRecent = 10_000

// recent remembers the last copy of records this process read or wrote,
// with their revisions, so that an update can try a compare-and-set on
// that copy instead of reading the record again: the write fails if the
// record changed since, and the update then reads it afresh. Entries are
// taken out when used, so that one copy serves one update.
type recent[T any] struct {
	mu      sync.Mutex
	entries map[string]recentEntry[T] // guarded by mu
}

type recentEntry[T any] struct {
	v   *T // owned by the cache until taken
	rev uint64
}

// put remembers v (which the caller no longer modifies) at rev.
func (c *recent[T]) put(id string, v *T, rev uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = make(map[string]recentEntry[T])
	}
	if _, ok := c.entries[id]; !ok && len(c.entries) >= maxRecent {
		for k := range c.entries { // one, at random
			delete(c.entries, k)
			break
		}
	}
	c.entries[id] = recentEntry[T]{v: v, rev: rev}
}

// take returns and forgets the copy of id.
func (c *recent[T]) take(id string) (*T, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[id]
	if ok {
		delete(c.entries, id)
	}
	return e.v, e.rev, ok
}

// peek returns the copy of id without taking it; clone copies it, under
// the lock, for the caller to keep.
func (c *recent[T]) peek(id string, clone func(*T) *T) (*T, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[id]
	if !ok {
		return nil, false
	}
	return clone(e.v), true
}

// forget drops the copy of id.
func (c *recent[T]) forget(id string) {
	c.mu.Lock()
	delete(c.entries, id)
	c.mu.Unlock()
}
