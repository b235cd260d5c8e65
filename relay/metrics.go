package relay

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// dropReason is the reason label of switchboard_relay_drops_total.
type dropReason int

// Drop reasons; every one is created at 0.
const (
	dropMalformed      dropReason = iota // not a valid relay message (size, header, fields)
	dropUnknownType                      // a well-formed header of an undefined type, or a server → client type
	dropTooLarge                         // over Config.MaxDatagram
	dropBadData                          // connection data that does not open
	dropBadHMAC                          // a BIND whose HMAC is wrong (no answer)
	dropWrongNode                        // a blob of another node or boot epoch (answered ERROR 4)
	dropExpired                          // a blob past its expiry or its bind deadline (answered ERROR 4)
	dropReleased                         // a message for a released allocation (answered ERROR 4)
	dropUnknownAlloc                     // a message for an allocation this node does not have (answered ERROR 4)
	dropAddrMismatch                     // a message from another address than the bound one (answered ERROR 3)
	dropNotConnected                     // RELAY or DISCONNECT between allocations that are not peers (answered ERROR 5)
	dropUnauthorized                     // CONNECT_REQUEST to another host than the blob's (answered ERROR 2)
	dropRejected                         // CONNECT_REQUEST to a full host (answered REJECTED)
	dropBandwidth                        // over the sender allocation's byte rate
	dropSourceRate                       // over the source address's message rate
	dropCapacity                         // MaxAllocations or MaxReleased reached, or a WebSocket connection over MaxWSConns or MaxWSConnsPerIP
	dropSendFailed                       // a socket write failed, or a WebSocket send queue was full
	dropNoRoute                          // the recipient has no live carrier
	dropDTLSNotHello                     // a datagram from a source with no DTLS connection that is not a ClientHello
	dropDTLSHandshakes                   // a ClientHello over MaxDTLSConns, MaxDTLSHandshakes or MaxDTLSHandshakesPerIP
	dropDTLSQueue                        // a datagram for a DTLS connection whose queue was full
	dropDTLSIdentity                     // a BIND over DTLS for another allocation than the PSK identity's
	dropSubscribe                        // PEERS_SUBSCRIBE from a joiner, or over the allocation's subscribe rate
	dropDTLSUnbound                      // a DTLS connection closed for binding nothing within DTLSHandshakeTimeout of its handshake
	numDropReasons
)

var dropNames = [numDropReasons]string{
	"malformed", "unknown_type", "too_large", "bad_connection_data", "bad_hmac",
	"wrong_node", "expired", "released", "unknown_allocation", "address_mismatch",
	"not_connected", "unauthorized", "rejected", "bandwidth", "source_rate",
	"capacity", "send_failed", "no_route", "dtls_not_hello", "dtls_handshakes", "dtls_queue",
	"dtls_identity", "subscribe", "dtls_unbound",
}

// dtlsHandshakeResult is the result label of
// switchboard_relay_dtls_handshakes_total.
type dtlsHandshakeResult int

const (
	dtlsHandshakeOK      dtlsHandshakeResult = iota // done: the peer knows its allocation's key
	dtlsHandshakeFailed                             // failed or timed out (a wrong key, an unknown key id, a spoofed source)
	dtlsHandshakeRefused                            // done, but its allocation had MaxDTLSConnsPerAllocation connections or was released: closed
	numDTLSHandshakeResults
)

var dtlsHandshakeNames = [numDTLSHandshakeResults]string{"ok", "failed", "refused"}

type metrics struct {
	packetsIn, packetsOut prometheus.Counter
	bytesIn, bytesOut     prometheus.Counter
	drops                 [numDropReasons]prometheus.Counter
	allocations           prometheus.Gauge
	binds                 prometheus.Counter
	releases              *prometheus.CounterVec
	qos                   prometheus.Counter
	wsConns               prometheus.Gauge
	dtlsConns             prometheus.Gauge
	dtlsHandshakes        [numDTLSHandshakeResults]prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	packets := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_relay_packets_total",
		Help: "Relay messages received (in) and sent (out), every carrier.",
	}, []string{"direction"})
	bytes := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_relay_bytes_total",
		Help: "Bytes of relay messages received (in) and sent (out), carrier framing excluded.",
	}, []string{"direction"})
	drops := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_relay_drops_total",
		Help: "Relay messages dropped, by reason (see docs/metrics.md).",
	}, []string{"reason"})
	handshakes := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_relay_dtls_handshakes_total",
		Help: "DTLS handshakes ended, by result.",
	}, []string{"result"})
	m := &metrics{
		packetsIn:  packets.WithLabelValues("in"),
		packetsOut: packets.WithLabelValues("out"),
		bytesIn:    bytes.WithLabelValues("in"),
		bytesOut:   bytes.WithLabelValues("out"),
		allocations: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchboard_relay_allocations",
			Help: "Live (bound) allocations on this relay node.",
		}),
		binds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchboard_relay_binds_total",
			Help: "BIND messages accepted (first binds, repeats and re-binds).",
		}),
		releases: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_relay_releases_total",
			Help: "Allocations released, by reason.",
		}, []string{"reason"}),
		qos: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchboard_relay_qos_probes_total",
			Help: "QoS probes answered.",
		}),
		wsConns: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchboard_relay_ws_connections",
			Help: "Open WebSocket connections of the relay carrier.",
		}),
		dtlsConns: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchboard_relay_dtls_connections",
			Help: "DTLS connections of the relay carrier, handshaking ones included.",
		}),
	}
	for i := range m.dtlsHandshakes {
		m.dtlsHandshakes[i] = handshakes.WithLabelValues(dtlsHandshakeNames[i])
	}
	for i := range m.drops {
		m.drops[i] = drops.WithLabelValues(dropNames[i])
	}
	for _, r := range []ReleaseReason{ReleaseClosed, ReleaseTimeout, ReleaseHostGone, ReleaseExpired} {
		m.releases.WithLabelValues(string(r))
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{packets, bytes, drops, m.allocations, m.binds, m.releases, m.qos, m.wsConns, m.dtlsConns, handshakes} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("relay: registering metrics: %w", err)
			}
		}
	}
	return m, nil
}
