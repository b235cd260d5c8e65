package bench

// Count returns how many durations were recorded.
func (h *Histogram) Count() uint64 { return h.n.Load() }
