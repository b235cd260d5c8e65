package p2p

import (
	"crypto/x509"
	"log/slog"
	"time"
)

// Defaults of [Config].
const (
	// DefaultDialTimeout bounds the TCP connect and TLS handshake.
	DefaultDialTimeout = 10 * time.Second
	// DefaultHandshakeTimeout bounds HELLO → WELCOME.
	DefaultHandshakeTimeout = 10 * time.Second
	// DefaultRequestTimeout bounds a request whose ctx has no deadline.
	DefaultRequestTimeout = 10 * time.Second
	// DefaultWriteTimeout bounds one write to the hub; a write that takes
	// longer closes the connection.
	DefaultWriteTimeout = 10 * time.Second
	// DefaultPingInterval is how often the client pings the hub; a hub
	// silent for three intervals is taken for dead.
	DefaultPingInterval = 15 * time.Second
	// DefaultQueueLen is the capacity of Messages and Events.
	DefaultQueueLen = 256
	// DefaultMaxFrameSize is the largest frame accepted from the hub: the
	// protocol's hard cap, 16 MiB.
	DefaultMaxFrameSize = 16 << 20
	// DefaultMaxPendingRequests bounds the requests in flight at once.
	DefaultMaxPendingRequests = 4096
)

// Config configures [Join]. The zero value works: every zero field takes
// the default named in its comment. It is copied.
type Config struct {
	// RootCAs verifies the hub's certificate (by its host name) when set;
	// nil means the certificate is pinned to the SHA-256 fingerprint the
	// API returned with the ticket (a self-signed hub).
	RootCAs *x509.CertPool
	// DialTimeout: zero means DefaultDialTimeout.
	DialTimeout time.Duration
	// HandshakeTimeout: zero means DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// RequestTimeout bounds a request whose ctx has no deadline. Zero
	// means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// WriteTimeout bounds one write. Zero means DefaultWriteTimeout.
	WriteTimeout time.Duration
	// PingInterval: zero means DefaultPingInterval.
	PingInterval time.Duration
	// QueueLen is the capacity of the Messages and Events channels. Zero
	// means DefaultQueueLen.
	QueueLen int
	// MaxFrameSize is the largest frame read from the hub. Zero means
	// DefaultMaxFrameSize.
	MaxFrameSize int
	// MaxPendingRequests bounds requests in flight. Zero means
	// DefaultMaxPendingRequests.
	MaxPendingRequests int
	// Logger receives rare events; never tickets, tokens or payloads. Nil
	// means slog.Default().
	Logger *slog.Logger
}

func (c *Config) resolve() Config {
	var r Config
	if c != nil {
		r = *c
	}
	set := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	set(&r.DialTimeout, DefaultDialTimeout)
	set(&r.HandshakeTimeout, DefaultHandshakeTimeout)
	set(&r.RequestTimeout, DefaultRequestTimeout)
	set(&r.WriteTimeout, DefaultWriteTimeout)
	set(&r.PingInterval, DefaultPingInterval)
	if r.QueueLen <= 0 {
		r.QueueLen = DefaultQueueLen
	}
	if r.MaxFrameSize <= 0 {
		r.MaxFrameSize = DefaultMaxFrameSize
	}
	if r.MaxPendingRequests <= 0 {
		r.MaxPendingRequests = DefaultMaxPendingRequests
	}
	if r.Logger == nil {
		r.Logger = slog.Default()
	}
	return r
}
