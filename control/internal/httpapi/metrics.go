package httpapi

import (
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the HTTP collectors of one control Server; a nil *Metrics
// observes nothing.
type Metrics struct {
	requests *prometheus.CounterVec   // route, code
	duration *prometheus.HistogramVec // route
}

// NewMetrics registers the collectors with reg, with a duration series
// for each of routes from the start. A nil reg gives nil Metrics.
func NewMetrics(reg prometheus.Registerer, routes []string) (*Metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_control_requests_total",
			Help: "HTTP requests answered by the control plane, by route and status code.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "switchboard_control_request_duration_seconds",
			Help:    "Time to answer an HTTP request of the control plane, by route.",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5},
		}, []string{"route"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("control: register metrics: %w", err)
		}
	}
	for _, r := range routes {
		m.duration.WithLabelValues(r)
	}
	return m, nil
}

// Observe counts one answered request of route.
func (m *Metrics) Observe(route string, code int, d time.Duration) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
	m.duration.WithLabelValues(route).Observe(d.Seconds())
}
