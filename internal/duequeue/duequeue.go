// Package duequeue is a queue of values by due time, for the test links
// that hold packets until they are due: internal/impair's UDP proxy and
// internal/netwire's TUN wire. Values due at the same time leave in the
// order they were pushed.
//
// It is a binary min-heap written out rather than built on container/heap,
// so that a push does not box its value in an interface: with the slice
// grown to its limit, pushing and popping allocate nothing. A Queue is not
// safe for concurrent use; its owner locks it.
package duequeue

import "time"

// Item is one value and when it is due.
type Item[T any] struct {
	Due   time.Time
	Value T
	order uint64
}

func (a *Item[T]) before(b *Item[T]) bool {
	if a.Due.Equal(b.Due) {
		return a.order < b.order
	}
	return a.Due.Before(b.Due)
}

// Queue holds Items, the earliest due first. The zero value is empty and
// ready; New sizes it.
type Queue[T any] struct {
	items []Item[T]
	order uint64 // pushes so far
}

// New returns a Queue with room for n Items before it grows.
func New[T any](n int) *Queue[T] { return &Queue[T]{items: make([]Item[T], 0, n)} }

// Len returns how many Items are queued.
func (q *Queue[T]) Len() int { return len(q.items) }

// Top returns the earliest due Item; the Queue must not be empty.
func (q *Queue[T]) Top() *Item[T] { return &q.items[0] }

// Push queues v until due.
func (q *Queue[T]) Push(due time.Time, v T) {
	q.order++
	q.items = append(q.items, Item[T]{Due: due, Value: v, order: q.order})
	i := len(q.items) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !q.items[i].before(&q.items[parent]) {
			break
		}
		q.items[i], q.items[parent] = q.items[parent], q.items[i]
		i = parent
	}
}

// Pop removes and returns the earliest due Item; the Queue must not be
// empty.
func (q *Queue[T]) Pop() Item[T] {
	top := q.items[0]
	last := len(q.items) - 1
	q.items[0] = q.items[last]
	q.items[last] = Item[T]{}
	q.items = q.items[:last]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(q.items) && q.items[l].before(&q.items[m]) {
			m = l
		}
		if r < len(q.items) && q.items[r].before(&q.items[m]) {
			m = r
		}
		if m == i {
			return top
		}
		q.items[i], q.items[m] = q.items[m], q.items[i]
		i = m
	}
}
