package netwire

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/switchboardgg/switchboard/internal/duequeue"
	"io"
	mrand "math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Wire moves packets between two TUN devices after a delay. Create it with
// [New], run it with [Wire.Serve], stop it with [Wire.Close].
type Wire struct {
	// immutable after New
	cfg    Config
	seed   uint64
	ab, ba *direction // counters are atomic; the rest is their goroutine's

	mu      sync.Mutex // guards the fields below
	serving bool
	closed  bool
	files   []*os.File    // the devices Serve was given
	done    chan struct{} // closed when Serve's goroutines have returned
}

// New checks cfg, fills its defaults and returns a wire that is not yet
// serving. It starts no goroutines.
func New(cfg Config) (*Wire, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	seed := cfg.Seed
	for seed == 0 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		seed = binary.LittleEndian.Uint64(b[:])
	}
	return &Wire{
		cfg:  cfg,
		seed: seed,
		ab:   newDirection(cfg, cfg.AB, seed, 1),
		ba:   newDirection(cfg, cfg.BA, seed, 2),
	}, nil
}

// Seed returns the seed of the loss and jitter draws: Config.Seed, or the
// random one New picked.
func (w *Wire) Seed() uint64 { return w.seed }

// Stats returns a snapshot of the counters. It is safe to call at any time.
func (w *Wire) Stats() Stats { return Stats{AB: w.ab.stats(), BA: w.ba.stats()} }

// Serve moves packets from a to b and from b to a until [Wire.Close] or
// until a device fails, then closes both and returns: ErrClosed after
// Close, else the error that stopped it. a and b are TUN devices opened
// with [OpenTUN] (or any file of whole packets that supports read
// deadlines).
func (w *Wire) Serve(a, b *os.File) error {
	w.mu.Lock()
	switch {
	case w.closed:
		w.mu.Unlock()
		_ = errors.Join(a.Close(), b.Close())
		return ErrClosed
	case w.serving:
		w.mu.Unlock()
		return ErrServing
	}
	w.serving = true
	w.files = []*os.File{a, b}
	w.done = make(chan struct{})
	w.mu.Unlock()

	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, d := range []struct {
		dir     *direction
		in, out *os.File
	}{{w.ab, a, b}, {w.ba, b, a}} {
		wg.Go(func() {
			errs[i] = d.dir.run(d.in, d.out)
			// A failed device stops the other direction too.
			_ = errors.Join(a.Close(), b.Close())
		})
	}
	wg.Wait()
	close(w.done)
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return ErrClosed
	}
	return errors.Join(errs...)
}

// Close stops Serve, closes the devices it was given and waits for its
// goroutines. It is idempotent.
func (w *Wire) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	files, done := w.files, w.done
	w.mu.Unlock()
	var err error
	for _, f := range files {
		if e := f.Close(); e != nil && !errors.Is(e, os.ErrClosed) {
			err = errors.Join(err, e)
		}
	}
	if done != nil {
		<-done
	}
	return err
}

// deadliner is what a direction reads: an *os.File in the wire, anything
// that reads whole packets with deadlines in tests.
type deadliner interface {
	io.Reader
	SetReadDeadline(time.Time) error
}

// direction is one way through the wire.
type direction struct {
	// immutable after newDirection
	cfg Config
	f   Faults // this direction's

	// owned by the direction's goroutine
	q        *duequeue.Queue[[]byte]
	free     [][]byte  // buffers of MaxPacket+1 bytes not in use
	cur      []byte    // the buffer the next read goes into
	buffers  int       // buffers allocated so far, at most Limit+1
	lastDue  time.Time // the newest packet's due time (order kept unless Reorder)
	deadline time.Time // the read deadline set on the device
	rng      *mrand.Rand

	// counters, atomic
	received, forwarded, lost, overflowed, oversized, writeErrors atomic.Uint64
}

func newDirection(cfg Config, f Faults, seed, stream uint64) *direction {
	return &direction{
		cfg:  cfg,
		f:    f,
		q:    duequeue.New[[]byte](cfg.Limit),
		free: make([][]byte, 0, cfg.Limit+1),
		rng:  mrand.New(mrand.NewPCG(seed, stream)),
	}
}

func (d *direction) stats() DirStats {
	return DirStats{
		Received:    d.received.Load(),
		Forwarded:   d.forwarded.Load(),
		Lost:        d.lost.Load(),
		Overflowed:  d.overflowed.Load(),
		Oversized:   d.oversized.Load(),
		WriteErrors: d.writeErrors.Load(),
	}
}

// run reads packets from in and writes them to out when due, until in or
// out is closed (nil) or fails (the error).
func (d *direction) run(in deadliner, out io.Writer) error {
	for {
		if err := d.setDeadline(in); err != nil {
			return closedIsNil(err)
		}
		n, err := in.Read(d.buffer())
		now := time.Now()
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
		case err != nil:
			return closedIsNil(err)
		default:
			d.accept(n, now)
		}
		if err := d.release(out, now); err != nil {
			return closedIsNil(err)
		}
	}
}

func closedIsNil(err error) error {
	if errors.Is(err, os.ErrClosed) {
		return nil
	}
	return fmt.Errorf("netwire: %w", err)
}

// setDeadline makes the next read return when the first waiting packet is
// due, or wait for a packet when none is.
func (d *direction) setDeadline(in deadliner) error {
	var want time.Time
	if d.q.Len() > 0 {
		want = d.q.Top().Due
	}
	if want.Equal(d.deadline) {
		return nil
	}
	d.deadline = want
	return in.SetReadDeadline(want)
}

// buffer returns the buffer the next read goes into: one byte longer than
// MaxPacket, so that a longer packet shows as one.
func (d *direction) buffer() []byte {
	if d.cur == nil {
		if n := len(d.free); n > 0 {
			d.cur, d.free = d.free[n-1], d.free[:n-1]
		} else {
			// At most Limit buffers wait in the queue, plus this one.
			d.cur = make([]byte, d.cfg.MaxPacket+1)
			d.buffers++
		}
	}
	return d.cur
}

// accept decides the fate of the n-byte packet read into d.cur at now.
func (d *direction) accept(n int, now time.Time) {
	d.received.Add(1)
	switch {
	case n > d.cfg.MaxPacket:
		d.oversized.Add(1)
		return
	case n == 0:
		return
	case d.q.Len() >= d.cfg.Limit:
		d.overflowed.Add(1)
		return
	case d.f.Loss > 0 && d.rng.Float64() < d.f.Loss:
		d.lost.Add(1)
		return
	}
	due := now.Add(d.f.Delay)
	if d.f.Jitter > 0 {
		due = due.Add(time.Duration(d.rng.Int64N(int64(d.f.Jitter))))
	}
	if !d.f.Reorder && due.Before(d.lastDue) {
		due = d.lastDue
	}
	d.lastDue = due
	d.q.Push(due, d.cur[:n])
	d.cur = nil
}

// release writes every packet due by now to out.
func (d *direction) release(out io.Writer, now time.Time) error {
	for d.q.Len() > 0 && !d.q.Top().Due.After(now) {
		it := d.q.Pop()
		_, err := out.Write(it.Value)
		d.free = append(d.free, it.Value[:cap(it.Value)])
		switch {
		case err == nil:
			d.forwarded.Add(1)
		case errors.Is(err, os.ErrClosed):
			return err
		default:
			// A device that is down refuses writes (EIO); the packet is
			// lost, as on a cut wire, and the wire goes on.
			d.writeErrors.Add(1)
		}
	}
	return nil
}
