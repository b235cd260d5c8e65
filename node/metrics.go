package node

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// Disconnect reasons, the label values of
// switchboard_node_disconnects_total.
const (
	discClient          = "client_closed"     // the client closed (close frame or EOF)
	discNetwork         = "network"           // read or write error
	discIdle            = "idle_timeout"      // no message for IdleTimeout
	discSlow            = "slow_consumer"     // send queue full
	discProtocol        = "protocol_error"    // WebSocket framing error
	discTooBig          = "message_too_big"   // over ReadLimit
	discInvalid         = "invalid_messages"  // three invalid messages in a row (ERROR 6)
	discHandshake       = "handshake_failed"  // ERROR in answer to the handshake
	discHandshakeTimout = "handshake_timeout" // no handshake in time
	discServer          = "server_closed"     // the node closed it after a final ERROR (kick, close, replaced, drain, rate limit)
	discShutdown        = "shutdown"          // Close of the node
)

var discReasons = []string{discClient, discNetwork, discIdle, discSlow, discProtocol, discTooBig,
	discInvalid, discHandshake, discHandshakeTimout, discServer, discShutdown}

// metrics are the node's collectors, with the label children of the hot
// paths resolved up front so that counting allocates nothing.
type metrics struct {
	in          [256]prometheus.Counter // by message type; unknown types under "unknown"
	out         [256]prometheus.Counter
	errs        [256]prometheus.Counter // by ERROR code
	disc        map[string]prometheus.Counter
	refused     map[string]prometheus.Counter
	tick        prometheus.Histogram
	late        prometheus.Histogram
	collectors  []prometheus.Collector
	invalidMsgs prometheus.Counter
}

func newMetrics(s *Server) *metrics {
	m := &metrics{disc: map[string]prometheus.Counter{}, refused: map[string]prometheus.Counter{}}
	refused := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_node_connections_refused_total",
		Help: "Connections refused, by reason: pending_per_source and pending_total (closed at the accept: too many waiting for their handshake), max_connections (HTTP 503).",
	}, []string{"reason"})
	for _, r := range refusedReasons {
		m.refused[r] = refused.WithLabelValues(r)
	}
	in := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_node_messages_in_total",
		Help: "im.game.v1 messages received from clients, by type (unknown: a type version 1 does not define; invalid: undecodable).",
	}, []string{"type"})
	out := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_node_messages_out_total",
		Help: "im.game.v1 messages written to clients, by type.",
	}, []string{"type"})
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_node_errors_total",
		Help: "ERROR messages sent to clients, by code name.",
	}, []string{"code"})
	disc := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_node_disconnects_total",
		Help: "WebSocket connections ended, by reason.",
	}, []string{"reason"})
	m.tick = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "switchboard_node_tick_duration_seconds",
		Help:    "Time one room tick takes (timers, frame encoding, queueing to every connection).",
		Buckets: []float64{1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 5e-3},
	})
	m.late = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "switchboard_node_tick_lateness_seconds",
		Help:    "How long after its due time a room tick started.",
		Buckets: []float64{1e-4, 2.5e-4, 5e-4, 1e-3, 2e-3, 5e-3, 1e-2, 2e-2, 5e-2, 0.1},
	})
	unknownIn := in.WithLabelValues("unknown")
	m.invalidMsgs = in.WithLabelValues("invalid")
	for t := range 256 {
		typ := roomwire.Type(t)
		if typ.Known() {
			m.in[t] = in.WithLabelValues(typ.String())
			m.out[t] = out.WithLabelValues(typ.String())
		} else {
			m.in[t] = unknownIn
			m.out[t] = out.WithLabelValues("unknown") // never written by the node
		}
		m.errs[t] = errs.WithLabelValues(roomwire.CodeName(uint8(t)))
	}
	for _, r := range discReasons {
		m.disc[r] = disc.WithLabelValues(r)
	}
	rooms := func(state string, fn func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "switchboard_node_rooms",
			Help:        "Rooms the node runs, by state.",
			ConstLabels: prometheus.Labels{"state": state},
		}, fn)
	}
	m.collectors = []prometheus.Collector{in, out, errs, disc, refused, m.tick, m.late,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "switchboard_node_connections_pending",
			Help: "Connections accepted and still waiting for their im.game.v1 handshake.",
		}, func() float64 { return float64(s.adm.pending()) }),
		rooms("waiting", func() float64 { return float64(s.engine.Stats().Waiting) }),
		rooms("playing", func() float64 { return float64(s.engine.Stats().Playing) }),
		rooms("ending", func() float64 { return float64(s.engine.Stats().Ending) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "switchboard_node_frame_reqs_refused_total",
			Help: "FRAME_REQ messages ignored because they were over their seat's budget of frames.",
		}, func() float64 { return float64(s.engine.Stats().FrameReqsRefused) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "switchboard_node_connections",
			Help: "WebSocket connections open, handshaking ones included.",
		}, func() float64 { return float64(s.nconns.Load()) }),
	}
	return m
}

func (m *metrics) register(r prometheus.Registerer) error {
	if r == nil {
		return nil
	}
	var errs []error
	for _, c := range m.collectors {
		if err := r.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (m *metrics) unregister(r prometheus.Registerer) {
	if r == nil {
		return
	}
	for _, c := range m.collectors {
		r.Unregister(c)
	}
}

func (m *metrics) observeTick(late, d time.Duration) {
	m.late.Observe(late.Seconds())
	m.tick.Observe(d.Seconds())
}
