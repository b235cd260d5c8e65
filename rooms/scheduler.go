package rooms

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// tickSlack lets a worker run a room's tick this much before its time, so
// that rooms due within the same millisecond share one wake-up. The cadence
// does not drift: the next tick is due one period after the previous due
// time, not after the tick ran.
const tickSlack = 500 * time.Microsecond

// scheduler ticks rooms on a few worker goroutines instead of one goroutine
// (and one timer) per room. Each worker owns a min-heap of its rooms by due
// time and sleeps until the earliest; a room is assigned to one worker
// round-robin for its whole life.
type scheduler struct {
	e       *Engine
	workers []*worker
	next    atomic.Uint32
}

type worker struct {
	e    *Engine
	wake chan struct{}

	mu    sync.Mutex
	added []*Room // guarded by mu: rooms not yet in the heap

	heap []entry // owned by the worker goroutine
}

type entry struct {
	at time.Duration // due, since the worker's start
	r  *Room
}

func newScheduler(e *Engine, n int) *scheduler {
	s := &scheduler{e: e, workers: make([]*worker, n)}
	for i := range s.workers {
		s.workers[i] = &worker{e: e, wake: make(chan struct{}, 1)}
	}
	return s
}

func (s *scheduler) add(r *Room) {
	w := s.workers[int(s.next.Add(1))%len(s.workers)]
	w.mu.Lock()
	w.added = append(w.added, r)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (s *scheduler) run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, w := range s.workers {
		wg.Go(func() { w.run(ctx) })
	}
	wg.Wait()
}

func (w *worker) run(ctx context.Context) {
	base := time.Now()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	observe := w.e.cfg.ObserveTick
	for {
		now := time.Since(base)
		w.mu.Lock()
		for _, r := range w.added {
			w.push(entry{at: now + r.period, r: r})
		}
		clear(w.added)
		w.added = w.added[:0]
		w.mu.Unlock()

		for len(w.heap) > 0 && w.heap[0].at <= now+tickSlack {
			e := &w.heap[0]
			start := time.Since(base)
			alive := e.r.Tick(w.e.cfg.Now())
			now = time.Since(base)
			if observe != nil {
				observe(max(start-e.at, 0), now-start)
			}
			if !alive {
				w.pop()
				continue
			}
			e.at += e.r.period
			if e.at < now {
				e.at = now // fell behind: tick again at once, then keep the new phase
			}
			w.down(0)
		}

		if len(w.heap) == 0 {
			select {
			case <-ctx.Done():
				return
			case <-w.wake:
			}
			continue
		}
		timer.Reset(w.heap[0].at - now)
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		case <-timer.C:
		}
	}
}

func (w *worker) push(e entry) {
	w.heap = append(w.heap, e)
	i := len(w.heap) - 1
	for i > 0 {
		p := (i - 1) / 2
		if w.heap[p].at <= w.heap[i].at {
			break
		}
		w.heap[p], w.heap[i] = w.heap[i], w.heap[p]
		i = p
	}
}

func (w *worker) pop() {
	n := len(w.heap) - 1
	w.heap[0] = w.heap[n]
	w.heap[n] = entry{}
	w.heap = w.heap[:n]
	if n > 0 {
		w.down(0)
	}
}

func (w *worker) down(i int) {
	h := w.heap
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h[r].at < h[l].at {
			m = r
		}
		if h[i].at <= h[m].at {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
