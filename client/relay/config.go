package relay

import (
	"crypto/tls"
	"log/slog"
	"time"
)

// Defaults of [Config].
const (
	// DefaultTransport is the carrier when Config.Transport is empty.
	DefaultTransport = TransportUDP
	// DefaultDialTimeout bounds opening a carrier (a WebSocket's TCP
	// connect, TLS and upgrade).
	DefaultDialTimeout = 10 * time.Second
	// DefaultBindTimeout bounds BIND → BIND_RECEIVED and CONNECT_REQUEST
	// → ACCEPTED, each, when the ctx has no earlier deadline.
	DefaultBindTimeout = 15 * time.Second
	// DefaultRetransmit is the interval at which BIND, CONNECT_REQUEST and
	// an unacknowledged PEERS_SUBSCRIBE are sent again (Unity Transport:
	// 1 s).
	DefaultRetransmit = time.Second
	// DefaultKeepAlive is the interval of PINGs to the relay node (Unity
	// Transport: 3 s without traffic; the node's idle timeout is 10 s).
	DefaultKeepAlive = 3 * time.Second
	// DefaultDeadAfter is how long a silent relay node is tolerated
	// before the Conn re-dials its carrier and re-binds.
	DefaultDeadAfter = 10 * time.Second
	// DefaultReconnectTimeout bounds the re-dials and re-binds after the
	// carrier broke or went silent; then the Conn ends.
	DefaultReconnectTimeout = 30 * time.Second
	// DefaultWriteTimeout bounds one write to the carrier.
	DefaultWriteTimeout = 5 * time.Second
	// DefaultMaxPayload is the largest RELAY payload sent or accepted:
	// 1434 bytes, so that a message fits a 1500-byte Ethernet frame as
	// Unity Transport's largest UDP message does (the relay node's default
	// limit is the same 1472-byte message).
	DefaultMaxPayload = 1434
	// DefaultQueueLen is how many received messages wait for Recv; more
	// are dropped (and counted in Stats), as UDP would.
	DefaultQueueLen = 256
	// DefaultEventQueueLen is the capacity of Events.
	DefaultEventQueueLen = 64
	// DefaultSocketBuffer is the UDP socket's receive and send buffer.
	DefaultSocketBuffer = 1 << 20
	// DefaultQoSTimeout bounds QoS probing.
	DefaultQoSTimeout = time.Second
	// DefaultQoSProbes is the number of probes per QoS endpoint; the
	// fastest answer counts.
	DefaultQoSProbes = 3
	// DefaultMaxPeers bounds the peer set a host keeps (the protocol's
	// limit is 100 per allocation).
	DefaultMaxPeers = 1024
)

// Config configures a [Client] and the [Conn]s it dials. The zero value
// works: every zero field takes the default named in its comment. It is
// copied; changing it afterwards has no effect.
type Config struct {
	// Transport is the carrier to the relay node. Empty means
	// DefaultTransport (udp).
	Transport Transport
	// TLSConfig verifies a wss relay node (RootCAs, ServerName). Nil
	// means the system's roots.
	TLSConfig *tls.Config
	// DialTimeout: zero means DefaultDialTimeout.
	DialTimeout time.Duration
	// BindTimeout bounds binding and connecting. Zero means
	// DefaultBindTimeout.
	BindTimeout time.Duration
	// Retransmit: zero means DefaultRetransmit.
	Retransmit time.Duration
	// KeepAlive is the PING interval. Zero means DefaultKeepAlive.
	KeepAlive time.Duration
	// DeadAfter: silence from the relay node for this long makes the Conn
	// re-bind on a new carrier. Zero means DefaultDeadAfter.
	DeadAfter time.Duration
	// ReconnectTimeout: zero means DefaultReconnectTimeout.
	ReconnectTimeout time.Duration
	// WriteTimeout: zero means DefaultWriteTimeout.
	WriteTimeout time.Duration
	// MaxPayload is the largest payload Send takes and Recv returns, at
	// most 65,535. Zero means DefaultMaxPayload (1434).
	MaxPayload int
	// QueueLen: zero means DefaultQueueLen.
	QueueLen int
	// EventQueueLen: zero means DefaultEventQueueLen.
	EventQueueLen int
	// MaxPeers bounds a host's peer set. Zero means DefaultMaxPeers.
	MaxPeers int
	// SocketBuffer is the UDP socket buffer size in bytes. Zero means
	// DefaultSocketBuffer.
	SocketBuffer int
	// QoSTimeout bounds the QoS measurement of [Client.MeasureRegions]
	// and of an allocation without a region. Zero means
	// DefaultQoSTimeout.
	QoSTimeout time.Duration
	// QoSProbes is the number of probes per QoS endpoint. Zero means
	// DefaultQoSProbes.
	QoSProbes int
	// Logger receives rare events (a re-bind, a lost carrier), never keys,
	// connection data or payloads. Nil means slog.Default().
	Logger *slog.Logger

	// udpAddr replaces the address of UDP and DTLS endpoints (tests: a
	// proxy in front of the relay node); set through export_test.go.
	udpAddr string
	// wsAddr replaces the host:port of WebSocket endpoints (tests: a TCP
	// proxy); set through export_test.go.
	wsAddr string
	// noPeerEvents makes a host not subscribe to peer events, as with a
	// relay without them (tests of the fallback); set through
	// export_test.go.
	noPeerEvents bool
}

func (c *Config) resolve() Config {
	var r Config
	if c != nil {
		r = *c
	}
	if r.Transport == "" {
		r.Transport = DefaultTransport
	}
	set := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	set(&r.DialTimeout, DefaultDialTimeout)
	set(&r.BindTimeout, DefaultBindTimeout)
	set(&r.Retransmit, DefaultRetransmit)
	set(&r.KeepAlive, DefaultKeepAlive)
	set(&r.DeadAfter, DefaultDeadAfter)
	set(&r.ReconnectTimeout, DefaultReconnectTimeout)
	set(&r.WriteTimeout, DefaultWriteTimeout)
	set(&r.QoSTimeout, DefaultQoSTimeout)
	seti := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	seti(&r.MaxPayload, DefaultMaxPayload)
	r.MaxPayload = min(r.MaxPayload, 65535)
	seti(&r.QueueLen, DefaultQueueLen)
	seti(&r.EventQueueLen, DefaultEventQueueLen)
	seti(&r.MaxPeers, DefaultMaxPeers)
	seti(&r.SocketBuffer, DefaultSocketBuffer)
	seti(&r.QoSProbes, DefaultQoSProbes)
	if r.Logger == nil {
		r.Logger = slog.Default()
	}
	return r
}
