package p2p

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the hub's Prometheus metrics. Children of the vectors are
// resolved once so that counting a routed message allocates nothing.
type metrics struct {
	conns      prometheus.Counter
	routed     prometheus.Counter
	routedB    prometheus.Counter
	broadcasts prometheus.Counter
	refused    map[string]prometheus.Counter // by ERROR code name
	dropped    map[string]prometheus.Counter // peers removed, by reason
	writes     prometheus.Counter
	punches    map[string]prometheus.Counter // by result

	// UDP port
	udpIn, udpOut, udpRouted, udpBroadcasts prometheus.Counter
	udpRegisters, udpRebinds, stunAnswered  prometheus.Counter
	udpDrop                                 map[string]prometheus.Counter // by reason
	pathChallenges                          prometheus.Counter
	pathChecks                              map[string]prometheus.Counter // by result
}

// Path check results, the label values of
// switchboard_hub_udp_path_checks_total (pathcheck.go).
const (
	pathValidated = "validated"
	pathAbandoned = "abandoned"
)

// refusal reasons and drop reasons counted.
var (
	refuseReasons = []string{"malformed", "unauthorized", "forbidden", "unknown_peer", "too_large", "rate_limited", "quota_exceeded", "network_full", "timeout", "unsupported_version", "not_registered"}
	punchResults  = []string{"offered", "refused", "up", "failed"}
	dropReasons   = []string{"goodbye", "resume_expired", "slow_consumer", "kicked", "shutting_down", "malformed", "too_large"}
	// UDPDropReasons are the reasons the hub drops a datagram, as
	// switchboard_hub_udp_dropped_total counts them (docs/metrics.md).
	UDPDropReasons = []string{"not_ours", "unknown_key", "unauthenticated", "replay", "malformed", "too_large",
		"unknown_peer", "not_registered", "rate_limited", "stun_refused", "stun_rate_limited", "seal_failed", "write_failed",
		"unvalidated", "stale"}
)

func newMetrics(h *Hub, reg prometheus.Registerer) *metrics {
	refused := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_hub_refused_total", Help: "Frames and connections the hub refused, by ERROR code.",
	}, []string{"code"})
	dropped := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_hub_peers_removed_total", Help: "Peers removed from their network, by reason.",
	}, []string{"reason"})
	m := &metrics{
		conns: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchboard_hub_connections_total", Help: "TLS connections accepted.",
		}),
		routed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchboard_hub_messages_routed_total", Help: "Routed messages delivered to a peer's send queue (a broadcast counts once per recipient).",
		}),
		routedB: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchboard_hub_bytes_routed_total", Help: "Bytes of routed frames queued to peers.",
		}),
		broadcasts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchboard_hub_broadcasts_total", Help: "Broadcasts received from peers.",
		}),
		writes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchboard_hub_writes_total", Help: "Coalesced writes to peer connections.",
		}),
		udpIn: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchboard_hub_udp_datagrams_in_total", Help: "Datagrams read on the hub's UDP port (all, before any check).",
		}),
		udpOut: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchboard_hub_udp_datagrams_out_total", Help: "Datagrams the hub's UDP port sent (routed, REGISTERED, PONG, STUN answers).",
		}),
		udpRouted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchboard_hub_udp_routed_total", Help: "Datagrams re-sealed for a recipient (a broadcast counts once per recipient).",
		}),
		udpBroadcasts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchboard_hub_udp_broadcasts_total", Help: "Broadcast datagrams received from peers.",
		}),
		udpRegisters: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchboard_hub_udp_registers_total", Help: "REGISTERs answered.",
		}),
		udpRebinds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchboard_hub_udp_rebinds_total", Help: "Peers whose authenticated datagrams came from a new endpoint (NAT rebinding).",
		}),
		pathChallenges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchboard_hub_udp_path_challenges_total", Help: "PATH_CHALLENGEs sent to peers' endpoints not yet validated.",
		}),
		pathChecks: map[string]prometheus.Counter{},
		stunAnswered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchboard_hub_stun_answered_total", Help: "STUN binding requests answered.",
		}),
		udpDrop: map[string]prometheus.Counter{},
		refused: map[string]prometheus.Counter{},
		dropped: map[string]prometheus.Counter{},
	}
	udpDrop := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_hub_udp_dropped_total", Help: "Datagrams the hub's UDP port dropped, by reason.",
	}, []string{"reason"})
	for _, r := range UDPDropReasons {
		m.udpDrop[r] = udpDrop.WithLabelValues(r)
	}
	pathChecks := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_hub_udp_path_checks_total",
		Help: "Checks of a peer's new UDP endpoint, by result (validated: its PATH_RESPONSE came; abandoned: the peer left the endpoint first, or 10 challenges got no answer).",
	}, []string{"result"})
	for _, r := range []string{pathValidated, pathAbandoned} {
		m.pathChecks[r] = pathChecks.WithLabelValues(r)
	}
	for _, r := range refuseReasons {
		m.refused[r] = refused.WithLabelValues(r)
	}
	for _, r := range dropReasons {
		m.dropped[r] = dropped.WithLabelValues(r)
	}
	punches := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_hub_punches_total",
		Help: "Hole punches: offered (both sides got a PUNCH_OFFER), refused (ERROR to the requester), and the PUNCH_RESULTs peers reported, up or failed (one per side).",
	}, []string{"result"})
	m.punches = map[string]prometheus.Counter{}
	for _, r := range punchResults {
		m.punches[r] = punches.WithLabelValues(r)
	}
	if reg != nil {
		reg.MustRegister(m.conns, m.routed, m.routedB, m.broadcasts, m.writes, refused, dropped, punches,
			m.udpIn, m.udpOut, m.udpRouted, m.udpBroadcasts, m.udpRegisters, m.udpRebinds, m.stunAnswered, udpDrop,
			m.pathChallenges, pathChecks,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "switchboard_hub_peers", Help: "Peers in a network, connected or within their resume window.",
			}, func() float64 { return float64(h.Load().Peers) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "switchboard_hub_networks", Help: "Networks with at least one peer.",
			}, func() float64 { return float64(h.Load().Networks) }),
		)
	}
	return m
}

func (m *metrics) refuse(code string) {
	if c, ok := m.refused[code]; ok {
		c.Inc()
	}
}

func (m *metrics) punch(result string) {
	if c, ok := m.punches[result]; ok {
		c.Inc()
	}
}

func (m *metrics) drop(reason string) {
	if c, ok := m.dropped[reason]; ok {
		c.Inc()
	}
}
