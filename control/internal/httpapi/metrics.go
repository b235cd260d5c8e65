package httpapi

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the HTTP collectors of one control Server; a nil *Metrics
// observes nothing.
type Metrics struct {
	requests *prometheus.CounterVec   // route, code
	duration *prometheus.HistogramVec // route

	mu     sync.Mutex
	routes map[string]*RouteMetrics // guarded by mu
}

// RouteMetrics are the series of one route, resolved once so that a
// request does not hash its labels; a nil *RouteMetrics observes
// nothing.
type RouteMetrics struct {
	route    string
	requests *prometheus.CounterVec
	duration prometheus.Observer

	mu    sync.RWMutex
	codes map[int]prometheus.Counter // guarded by mu; at most one per status code
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
		routes: make(map[string]*RouteMetrics),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("control: register metrics: %w", err)
		}
	}
	for _, r := range routes {
		m.Route(r)
	}
	return m, nil
}

// Route returns the series of route, creating its duration series.
func (m *Metrics) Route(route string) *RouteMetrics {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	rm := m.routes[route]
	if rm == nil {
		rm = &RouteMetrics{route: route, requests: m.requests, duration: m.duration.WithLabelValues(route), codes: make(map[int]prometheus.Counter)}
		m.routes[route] = rm
	}
	return rm
}

// Observe counts one answered request of route.
func (m *Metrics) Observe(route string, code int, d time.Duration) {
	m.Route(route).Observe(code, d)
}

// Observe counts one answered request of the route.
func (rm *RouteMetrics) Observe(code int, d time.Duration) {
	if rm == nil {
		return
	}
	rm.counter(code).Inc()
	rm.duration.Observe(d.Seconds())
}

// counter returns the request counter of code. A handler answers a
// handful of status codes, so the map stays small.
func (rm *RouteMetrics) counter(code int) prometheus.Counter {
	rm.mu.RLock()
	c := rm.codes[code]
	rm.mu.RUnlock()
	if c != nil {
		return c
	}
	rm.mu.Lock()
	defer rm.mu.Unlock()
	if c = rm.codes[code]; c == nil {
		c = rm.requests.WithLabelValues(rm.route, strconv.Itoa(code))
		rm.codes[code] = c
	}
	return c
}
