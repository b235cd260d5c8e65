package netwire

import "time"

// item is one packet waiting for its due time.
type item struct {
	due   time.Time
	order uint64 // read order: equal due times leave in order
	buf   []byte // len is the packet's length
}

func (a *item) before(b *item) bool {
	if a.due.Equal(b.due) {
		return a.order < b.order
	}
	return a.due.Before(b.due)
}

// queue is a binary min-heap of items by (due, order), written out rather
// than built on container/heap so that a push does not box an item in an
// interface (as internal/impair's queue).
type queue struct{ items []item }

func (q *queue) len() int { return len(q.items) }

func (q *queue) top() *item { return &q.items[0] }

func (q *queue) push(it item) {
	q.items = append(q.items, it)
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

func (q *queue) pop() item {
	top := q.items[0]
	last := len(q.items) - 1
	q.items[0] = q.items[last]
	q.items[last] = item{}
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
