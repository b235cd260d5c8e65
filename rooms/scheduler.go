package rooms

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// tickSlack lets a worker run a room's tick this much before its time, so
// that rooms due within the same millisecond share one wake-up. The cadence
// does not drift: the next tick is due one period after the previous due
// time, not after the tick ran.
const tickSlack = 500 * time.Microsecond

// tickPhases is how many phases the rooms of one tick rate are spread over.
// Every room's ticks fall on one of tickPhases evenly spaced offsets of its
// period, counted from the scheduler's start, so that rooms wake together in
// a few bursts per period instead of each at its own moment: one wake-up of
// the worker ticks a whole phase group, and a transport that batches writes
// (node/udp) sends the group's frames in a few system calls. More phases
// spread the work more evenly (a tick runs at most one group's work late);
// fewer wake the node less often.
var tickPhases = 4

// yieldEvery is how many rooms a worker ticks in one burst before it lets
// other goroutines run: a room's tick only queues its frames, and the
// transport's writer (node/udp's, which sends what every room queued in
// batches) must get to drain them during a burst of a phase's rooms, or
// a large phase would fill its queue before the first batch left.
const yieldEvery = 32

// scheduler ticks rooms on a few worker goroutines instead of one goroutine
// (and one timer) per room. Each worker owns a min-heap of its rooms by due
// time and sleeps until the earliest; a room is assigned to one worker
// round-robin for its whole life.
type scheduler struct {
	e       *Engine
	workers []*worker
	next    atomic.Uint32
	seq     atomic.Uint64 // rooms added: a room's phase and its place among rooms due together
	base    time.Time     // phases count from here, set before the workers start
}

type worker struct {
	e    *Engine
	wake chan struct{}

	mu    sync.Mutex
	added []added // guarded by mu: rooms not yet in the heap

	heap []entry // owned by the worker goroutine
}

type entry struct {
	at  time.Duration // due, since the scheduler's start
	seq uint64        // orders rooms due at the same time: the order they were added
	r   *Room
}

type added struct {
	seq uint64
	r   *Room
}

// firstDue is when a room added at now (since the scheduler's start) with
// the given sequence number ticks first: the next time after now on its
// phase, which is seq modulo tickPhases.
func firstDue(now, period time.Duration, seq uint64) time.Duration {
	phase := time.Duration(seq%uint64(tickPhases)) * (period / time.Duration(tickPhases))
	return now + period - (now-phase%period+period)%period
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
	seq := s.seq.Add(1)
	w.mu.Lock()
	w.added = append(w.added, added{seq: seq, r: r})
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (s *scheduler) run(ctx context.Context) {
	var wg sync.WaitGroup
	s.base = time.Now()
	for _, w := range s.workers {
		wg.Go(func() { w.run(ctx, s.base) })
	}
	wg.Wait()
}

func (w *worker) run(ctx context.Context, base time.Time) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	observe := w.e.cfg.ObserveTick
	for {
		now := time.Since(base)
		w.mu.Lock()
		for _, a := range w.added {
			w.push(entry{at: firstDue(now, a.r.period, a.seq), seq: a.seq, r: a.r})
		}
		clear(w.added)
		w.added = w.added[:0]
		w.mu.Unlock()

		for ticked := 0; len(w.heap) > 0 && w.heap[0].at <= now+tickSlack; ticked++ {
			if ticked > 0 && ticked%yieldEvery == 0 {
				runtime.Gosched()
			}
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
				// Fell behind: skip the periods already missed, tick once
				// more at once, and stay on the room's phase.
				e.at += (now - e.at) / e.r.period * e.r.period
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
		if !w.heap[i].before(w.heap[p]) {
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
		if r := l + 1; r < len(h) && h[r].before(h[l]) {
			m = r
		}
		if !h[m].before(h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// before orders the heap: by due time, then by the order rooms were added,
// so rooms due together tick in the same order every period and each
// player's frame leaves at the same point of the burst.
func (e entry) before(o entry) bool {
	return e.at < o.at || e.at == o.at && e.seq < o.seq
}
