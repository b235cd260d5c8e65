package relayapi

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metricsTimeout bounds the store reads of one scrape.
const metricsTimeout = 2 * time.Second

var (
	descCodes = prometheus.NewDesc("switchboard_control_relay_join_codes",
		"Live relay join codes in the store (deployment-wide).", nil, nil)
	descAllocs = prometheus.NewDesc("switchboard_control_relay_allocation_records",
		"Relay allocation records in the store, bound or not (deployment-wide).", nil, nil)
)

// collector reads the relay records' counts from the store at each
// scrape.
type collector struct{ s *Server }

// Collector returns the collector of the deployment-wide relay gauges
// (join codes live, allocation records); control registers it. Each
// scrape lists the keys of two store buckets.
func (s *Server) Collector() prometheus.Collector { return collector{s} }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descCodes
	ch <- descAllocs
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), metricsTimeout)
	defer cancel()
	allocs, codes, err := c.s.db.CountRelayRecords(ctx)
	if err != nil {
		c.s.log.Warn("relay metrics: store read failed", "err", err)
		ch <- prometheus.NewInvalidMetric(descCodes, err)
		ch <- prometheus.NewInvalidMetric(descAllocs, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(descCodes, prometheus.GaugeValue, float64(codes))
	ch <- prometheus.MustNewConstMetric(descAllocs, prometheus.GaugeValue, float64(allocs))
}
