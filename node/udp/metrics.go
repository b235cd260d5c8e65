package udp

import "github.com/prometheus/client_golang/prometheus"

// Drop reasons, the label values of switchboard_node_udp_dropped_total.
const (
	dropShort      = "short"
	dropKind       = "kind"
	dropSize       = "size"
	dropUnknownKey = "unknown_key"
	dropAuth       = "auth"
	dropReplay     = "replay"
	dropInvalid    = "invalid"
	dropBusy       = "busy"
	dropQueueFull  = "queue_full"
	dropRate       = "rate"
	dropSourceRate = "source_rate" // a new HANDSHAKE over its source's rate
	// dropUnvalidated (outgoing): beyond the budget of an address not
	// validated, or of a session not yet established (pathcheck.go).
	dropUnvalidated = "unvalidated"
	// dropStale: a PATH_RESPONSE that answers no check under way.
	dropStale = "stale"
)

var dropReasons = []string{dropShort, dropKind, dropSize, dropUnknownKey, dropAuth, dropReplay, dropInvalid, dropBusy, dropQueueFull, dropRate, dropSourceRate, dropUnvalidated, dropStale}

// Path check results, the label values of switchboard_node_udp_path_checks_total.
const (
	pathValidated = "validated"
	pathAbandoned = "abandoned"
)

// Handshake results, the label values of switchboard_node_udp_handshakes_total.
const (
	hsWelcome = "welcome"
	hsError   = "error"
	hsResent  = "resent"
)

// Results of an INPUT in an INPUTS datagram, the label values of
// switchboard_node_udp_inputs_total.
const (
	inputTaken  = "taken"
	inputRepeat = "repeat"
)

type metrics struct {
	sessions prometheus.Gauge
	in, out  prometheus.Counter
	writes   prometheus.Counter
	repeats  prometheus.Counter
	drop     map[string]prometheus.Counter
	hs       map[string]prometheus.Counter
	inputs   map[string]prometheus.Counter
	paths    map[string]prometheus.Counter
	all      []prometheus.Collector
}

func newMetrics() *metrics {
	m := &metrics{
		sessions: prometheus.NewGauge(prometheus.GaugeOpts{Name: "switchboard_node_udp_sessions", Help: "UDP sessions, handshakes awaiting their first SESSION datagram included."}),
		in:       prometheus.NewCounter(prometheus.CounterOpts{Name: "switchboard_node_udp_datagrams_in_total", Help: "UDP datagrams received, before any check."}),
		out:      prometheus.NewCounter(prometheus.CounterOpts{Name: "switchboard_node_udp_datagrams_out_total", Help: "UDP datagrams written."}),
		writes:   prometheus.NewCounter(prometheus.CounterOpts{Name: "switchboard_node_udp_write_batches_total", Help: "Batches the writer handed to the socket (datagrams out / batches = the average batch; each batch is one sendmmsg per udpio batch size)."}),
		repeats:  prometheus.NewCounter(prometheus.CounterOpts{Name: "switchboard_node_udp_frame_repeats_total", Help: "FRAME datagrams sent a second time, 2 ms after the first, to sessions whose datagrams showed loss in the last 5 s (rooms-udp.md §7)."}),
		drop:     map[string]prometheus.Counter{},
		hs:       map[string]prometheus.Counter{},
		inputs:   map[string]prometheus.Counter{},
		paths:    map[string]prometheus.Counter{},
	}
	dv := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_node_udp_dropped_total", Help: "UDP datagrams dropped without an answer, by reason."}, []string{"reason"})
	for _, r := range dropReasons {
		m.drop[r] = dv.WithLabelValues(r)
	}
	hv := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_node_udp_handshakes_total", Help: "UDP handshakes answered, by result (resent: a retransmitted HANDSHAKE got the same reply)."}, []string{"result"})
	for _, r := range []string{hsWelcome, hsError, hsResent} {
		m.hs[r] = hv.WithLabelValues(r)
	}
	iv := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_node_udp_inputs_total", Help: "INPUTs received in INPUTS datagrams, by result (taken: handed to the room; repeat: already taken, dropped)."}, []string{"result"})
	for _, r := range []string{inputTaken, inputRepeat} {
		m.inputs[r] = iv.WithLabelValues(r)
	}
	pv := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_node_udp_path_checks_total", Help: "Checks of a session's new address, by result (validated: its PATH_RESPONSE came; abandoned: the session left the address, or 10 challenges got no answer)."}, []string{"result"})
	for _, r := range []string{pathValidated, pathAbandoned} {
		m.paths[r] = pv.WithLabelValues(r)
	}
	m.all = []prometheus.Collector{m.sessions, m.in, m.out, m.writes, m.repeats, dv, hv, iv, pv}
	return m
}
