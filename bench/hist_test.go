package bench

import (
	"testing"
	"time"
)

func TestHistogramQuantiles(t *testing.T) {
	var h Histogram
	if got := h.Quantile(0.5); got != 0 {
		t.Fatalf("empty: got %v, want 0", got)
	}
	for i := 1; i <= 100; i++ {
		h.Record(time.Duration(i) * time.Millisecond)
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{
		{0.5, 50*time.Millisecond + histBucket},
		{0.99, 99*time.Millisecond + histBucket},
		{1, 100*time.Millisecond + histBucket},
	} {
		if got := h.Quantile(tc.q); got != tc.want {
			t.Errorf("Quantile(%v): got %v, want %v", tc.q, got, tc.want)
		}
	}
	h.Record(time.Hour)
	h.Record(-time.Second)
	if got := h.Count(); got != 102 {
		t.Errorf("Count: got %d, want 102", got)
	}
	if got := h.Quantile(1); got != histMax {
		t.Errorf("overflow: got %v, want %v", got, histMax)
	}
}

func TestHistogramFractionAbove(t *testing.T) {
	var h Histogram
	if got := h.FractionAbove(0); got != 0 {
		t.Fatalf("empty: got %v, want 0", got)
	}
	for i := 1; i <= 100; i++ {
		h.Record(time.Duration(i) * time.Millisecond)
	}
	for _, tc := range []struct {
		d    time.Duration
		want float64
	}{
		{0, 1},
		{90 * time.Millisecond, 0.10}, // 91–100 ms: their buckets start above 90 ms
		{100 * time.Millisecond, 0},
		{time.Hour, 0},
	} {
		if got := h.FractionAbove(tc.d); got != tc.want {
			t.Errorf("FractionAbove(%v): got %v, want %v", tc.d, got, tc.want)
		}
	}
}

func TestUnseenInputs(t *testing.T) {
	var u unseen
	for _, st := range []time.Duration{1, 2, 3, 4} {
		u.add(st)
	}
	if sup, found := u.seen(1); sup != 0 || !found {
		t.Errorf("seen(1) = %d, %v; want 0 superseded, found", sup, found)
	}
	// 2 never comes back: 3 took its tick.
	if sup, found := u.seen(3); sup != 1 || !found {
		t.Errorf("seen(3) = %d, %v; want 1 superseded (2), found", sup, found)
	}
	if sup, found := u.seen(9); sup != 1 || found {
		t.Errorf("seen(9) = %d, %v; want 1 superseded (4), not found", sup, found)
	}
	for i := range maxUnseenInputs + 10 {
		u.add(time.Duration(100 + i))
	}
	if len(u) != maxUnseenInputs {
		t.Errorf("%d remembered, want the bound %d", len(u), maxUnseenInputs)
	}
}
