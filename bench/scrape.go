package bench

import (
	"context"
	"fmt"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// serverMetrics is what the load generator reads from the server's admin
// /metrics before and after a run.
type serverMetrics struct {
	CPUSeconds float64 // process_cpu_seconds_total
	RSSBytes   float64 // process_resident_memory_bytes
	HubRouted  float64 // switchboard_hub_messages_routed_total
	// Tick lateness histogram of the node, summed over its series.
	Lateness histogramSnapshot
	// Tick duration histogram of the node.
	TickDuration histogramSnapshot
}

// histogramSnapshot is a cumulative Prometheus histogram.
type histogramSnapshot struct {
	Count   uint64
	Bounds  []float64 // upper bounds, seconds
	Buckets []uint64  // cumulative counts per bound
}

// sub returns h − old, bucket by bucket (same bounds).
func (h histogramSnapshot) sub(old histogramSnapshot) histogramSnapshot {
	out := histogramSnapshot{Count: h.Count - old.Count, Bounds: h.Bounds, Buckets: make([]uint64, len(h.Buckets))}
	for i := range h.Buckets {
		out.Buckets[i] = h.Buckets[i]
		if i < len(old.Buckets) {
			out.Buckets[i] -= old.Buckets[i]
		}
	}
	return out
}

// quantile returns the upper bound of the bucket holding quantile q, or 0
// when the histogram is empty; +Inf rounds to the largest finite bound.
func (h histogramSnapshot) quantile(q float64) float64 {
	if h.Count == 0 {
		return 0
	}
	rank := uint64(q*float64(h.Count) + 0.5)
	if rank < 1 {
		rank = 1
	}
	for i, c := range h.Buckets {
		if c >= rank {
			return h.Bounds[i]
		}
	}
	if len(h.Bounds) > 0 {
		return h.Bounds[len(h.Bounds)-1]
	}
	return 0
}

func scrape(ctx context.Context, url string) (serverMetrics, error) {
	var m serverMetrics
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return m, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return m, fmt.Errorf("bench: scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return m, fmt.Errorf("bench: scrape %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return m, fmt.Errorf("bench: parse metrics: %w", err)
	}
	if f := fams["process_cpu_seconds_total"]; f != nil && len(f.Metric) > 0 {
		m.CPUSeconds = f.Metric[0].GetCounter().GetValue()
	}
	if f := fams["process_resident_memory_bytes"]; f != nil && len(f.Metric) > 0 {
		m.RSSBytes = f.Metric[0].GetGauge().GetValue()
	}
	if f := fams["switchboard_hub_messages_routed_total"]; f != nil && len(f.Metric) > 0 {
		m.HubRouted = f.Metric[0].GetCounter().GetValue()
	}
	m.Lateness = sumHistogram(fams["switchboard_node_tick_lateness_seconds"])
	m.TickDuration = sumHistogram(fams["switchboard_node_tick_duration_seconds"])
	return m, nil
}

func sumHistogram(f *dto.MetricFamily) histogramSnapshot {
	var h histogramSnapshot
	if f == nil {
		return h
	}
	for _, met := range f.Metric {
		hist := met.GetHistogram()
		if hist == nil {
			continue
		}
		h.Count += hist.GetSampleCount()
		for i, b := range hist.Bucket {
			if i >= len(h.Bounds) {
				h.Bounds = append(h.Bounds, b.GetUpperBound())
				h.Buckets = append(h.Buckets, 0)
			}
			h.Buckets[i] += b.GetCumulativeCount()
		}
	}
	return h
}
