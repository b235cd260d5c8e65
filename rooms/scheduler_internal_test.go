package rooms

import (
	"slices"
	"testing"
	"time"
)

func TestFirstDue(t *testing.T) {
	const p = 40 * time.Millisecond // four phases of 10 ms
	if tickPhases != 4 {
		t.Fatalf("tickPhases = %d; the table assumes 4", tickPhases)
	}
	for _, c := range []struct {
		now  time.Duration
		seq  uint64
		want time.Duration
	}{
		{0, 0, 40 * time.Millisecond}, // phase 0: strictly after now
		{0, 1, 10 * time.Millisecond}, // phase 10 ms
		{0, 3, 30 * time.Millisecond}, // phase 30 ms
		{0, 4, 40 * time.Millisecond}, // seq 4 wraps to phase 0
		{5 * time.Millisecond, 0, 40 * time.Millisecond},
		{5 * time.Millisecond, 1, 10 * time.Millisecond},
		{10 * time.Millisecond, 1, 50 * time.Millisecond}, // on its phase now: the next one
		{95 * time.Millisecond, 2, 100 * time.Millisecond},
		{101 * time.Millisecond, 2, 140 * time.Millisecond},
		{1234567 * time.Microsecond, 3, 1270 * time.Millisecond},
	} {
		got := firstDue(c.now, p, c.seq)
		if got != c.want {
			t.Errorf("firstDue(%v, %v, %d) = %v, want %v", c.now, p, c.seq, got, c.want)
		}
		if got <= c.now || got > c.now+p {
			t.Errorf("firstDue(%v, %v, %d) = %v: not within one period after now", c.now, p, c.seq, got)
		}
	}
}

// TestSchedulerPhases runs the real scheduler over rooms added at scattered
// moments and checks that their ticks fall on tickPhases phases in a stable
// order: every period, rooms due together tick in the order they were added.
func TestSchedulerPhases(t *testing.T) {
	const period = 20 * time.Millisecond
	s := &scheduler{}
	w := &worker{}
	s.base = time.Unix(0, 0)
	for i := range 12 {
		now := time.Duration(i*7) * time.Millisecond // scattered adds
		seq := uint64(i + 1)
		w.push(entry{at: firstDue(now, period, seq), seq: seq, r: &Room{period: period}})
	}
	phases := map[time.Duration]bool{}
	perPeriod := map[time.Duration][]uint64{} // period index → rooms in tick order
	var last entry
	for range 12 * 20 { // twenty periods of 12 rooms
		e := w.heap[0]
		if last.r != nil && e.before(last) {
			t.Fatalf("tick order went back: %+v after %+v", e, last)
		}
		phases[e.at%period] = true
		perPeriod[e.at/period] = append(perPeriod[e.at/period], e.seq)
		last = e
		w.heap[0].at += period
		w.down(0)
	}
	if len(phases) != tickPhases {
		t.Errorf("ticks fell on %d phases, want %d: %v", len(phases), tickPhases, phases)
	}
	// Once every room is in (the last was added at 77 ms), the same rooms
	// tick in the same order every period.
	want := perPeriod[5]
	if len(want) != 12 {
		t.Fatalf("period 5 ticked %v, want all 12 rooms", want)
	}
	for k := time.Duration(6); k < 15; k++ {
		if got := perPeriod[k]; !slices.Equal(got, want) {
			t.Fatalf("period %d ticked %v, period 5 %v", k, got, want)
		}
	}
}
