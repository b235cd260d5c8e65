package bench

import (
	"sync/atomic"
	"time"
)

// histBucket is the resolution of [Histogram]; histMax is the largest
// latency it tells apart (larger ones count in the last bucket).
const (
	histBucket = 50 * time.Microsecond
	histMax    = 2 * time.Second
	histSize   = int(histMax/histBucket) + 1
)

// Histogram counts durations in fixed 50 µs buckets up to 2 s. Record is
// safe for concurrent use and allocates nothing.
type Histogram struct {
	counts [histSize]atomic.Uint64
	n      atomic.Uint64
}

// Record counts d.
func (h *Histogram) Record(d time.Duration) {
	i := int(d / histBucket)
	if i < 0 {
		i = 0
	}
	if i >= histSize {
		i = histSize - 1
	}
	h.counts[i].Add(1)
	h.n.Add(1)
}

// Quantile returns the duration below which a fraction q of the recorded
// ones fall, to the bucket's upper edge; 0 when nothing was recorded.
func (h *Histogram) Quantile(q float64) time.Duration {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	rank := uint64(q*float64(n) + 0.5)
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			if i == histSize-1 {
				return histMax // at least this much
			}
			return time.Duration(i+1) * histBucket
		}
	}
	return histMax
}

// FractionAbove returns the fraction of the recorded durations in buckets
// wholly above d; 0 when nothing was recorded.
func (h *Histogram) FractionAbove(d time.Duration) float64 {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	var above uint64
	for i := max(0, int(d/histBucket)+1); i < histSize; i++ {
		above += h.counts[i].Load()
	}
	return float64(above) / float64(n)
}

// Reset forgets every recorded duration. Durations recorded while it runs
// may or may not be kept.
func (h *Histogram) Reset() {
	for i := range h.counts {
		h.counts[i].Store(0)
	}
	h.n.Store(0)
}
