package rooms

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// TestFrameLog appends frames of random sizes and checks every retained
// record against a model, through evictions, wraps and growth.
func TestFrameLog(t *testing.T) {
	for _, slots := range []int{1, 3, 7, 100} {
		rng := rand.New(rand.NewPCG(uint64(slots), 1))
		l := newFrameLog(slots)
		model := map[uint32][]byte{}
		for n := uint32(1); n <= 2000; n++ {
			size := 5 + rng.IntN(40)
			if rng.IntN(50) == 0 {
				size = 5 + rng.IntN(2000)
			}
			rec := make([]byte, size)
			binary.BigEndian.PutUint32(rec, n)
			for i := 4; i < size; i++ {
				rec[i] = byte(rng.Uint32())
			}
			copy(l.append(size), rec)
			model[n] = rec
			delete(model, n-uint32(slots))

			if got, want := l.count(), min(int(n), slots); got != want {
				t.Fatalf("slots %d frame %d: count %d, want %d", slots, n, got, want)
			}
			if l.last != n || l.first != n-uint32(l.count())+1 {
				t.Fatalf("slots %d frame %d: first %d last %d", slots, n, l.first, l.last)
			}
			if l.used > len(l.data) {
				t.Fatalf("slots %d frame %d: used %d > %d", slots, n, l.used, len(l.data))
			}
			for f := l.first; f <= l.last; f++ {
				if !bytes.Equal(l.record(f), model[f]) {
					t.Fatalf("slots %d frame %d: record %d differs", slots, n, f)
				}
			}
			if l.has(l.first-1) || l.has(n+1) {
				t.Fatalf("slots %d frame %d: has outside [%d,%d]", slots, n, l.first, l.last)
			}
		}
	}
}

// TestFrameLogSteadyStateAllocs checks that appending allocates nothing once
// the buffer has grown.
func TestFrameLogSteadyStateAllocs(t *testing.T) {
	l := newFrameLog(300)
	for range 1000 {
		l.append(45)
	}
	if a := testing.AllocsPerRun(1000, func() { l.append(45) }); a != 0 {
		t.Errorf("append: %v allocs, want 0", a)
	}
}
