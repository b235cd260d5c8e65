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
	// DefaultUDPAddr is the local address of the UDP socket: any
	// address, a port the system picks.
	DefaultUDPAddr = ":0"
	// DefaultUDPBuffer is the UDP socket's receive and send buffer asked
	// for (the kernel caps it at net.core.rmem_max and wmem_max).
	DefaultUDPBuffer = 4 << 20
	// DefaultRegisterRetry is how often REGISTER is repeated until the
	// hub answers.
	DefaultRegisterRetry = 250 * time.Millisecond
	// DefaultAddrCheckInterval is how often the local addresses are
	// checked; a change registers again at once.
	DefaultAddrCheckInterval = 2 * time.Second
	// DefaultJumboRate paces jumbo chunks: 8 MiB/s, about 8,200
	// datagrams a second (a 16 MB message takes 2 s).
	DefaultJumboRate = 8 << 20
	// DefaultJumboTimeout drops an incomplete jumbo message that got no
	// new chunk for this long.
	DefaultJumboTimeout = 3 * time.Second
	// DefaultJumboMemory bounds the incomplete jumbo messages of one
	// sender, in bytes: two of the largest.
	DefaultJumboMemory = 2 * MaxJumboSize
	// DefaultJumboTotalMemory bounds the incomplete jumbo messages of
	// all senders, in bytes.
	DefaultJumboTotalMemory = 128 << 20
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
	// DisableUDP leaves the UDP side off: no socket, SendUDP fails with
	// ErrNoUDP.
	DisableUDP bool
	// UDPAddr is the UDP socket's local address. Empty means
	// DefaultUDPAddr.
	UDPAddr string
	// HubUDPAddr is where datagrams to the hub go, HOST:PORT. Empty
	// means the hub's TLS address (the hub serves UDP on the same port
	// number); set it for a UDP proxy in front of the hub.
	HubUDPAddr string
	// UDPBuffer is the UDP socket buffer size asked for. Zero means
	// DefaultUDPBuffer.
	UDPBuffer int
	// RegisterRetry: zero means DefaultRegisterRetry.
	RegisterRetry time.Duration
	// AddrCheckInterval: zero means DefaultAddrCheckInterval.
	AddrCheckInterval time.Duration
	// JumboRate paces jumbo sends, in bytes per second. Zero means
	// DefaultJumboRate.
	JumboRate int
	// JumboTimeout: zero means DefaultJumboTimeout.
	JumboTimeout time.Duration
	// JumboMemory bounds one sender's incomplete jumbo messages, in
	// bytes (at least MaxJumboSize). Zero means DefaultJumboMemory.
	JumboMemory int
	// JumboTotalMemory bounds all senders' incomplete jumbo messages, in
	// bytes. Zero means DefaultJumboTotalMemory.
	JumboTotalMemory int
	// PunchTimeout bounds a Punch whose ctx has no deadline. Zero means
	// DefaultPunchTimeout.
	PunchTimeout time.Duration
	// ProbeInterval: zero means DefaultProbeInterval.
	ProbeInterval time.Duration
	// KeepAlive is how often an up direct path is probed. Zero means
	// DefaultKeepAlive.
	KeepAlive time.Duration
	// DirectTimeout: a direct path unanswered this long goes back to the
	// hub. Zero means DefaultDirectTimeout.
	DirectTimeout time.Duration
	// Reliable configures the reliable channels (SendReliable); its zero
	// value works.
	Reliable ReliableConfig
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
	if r.UDPAddr == "" {
		r.UDPAddr = DefaultUDPAddr
	}
	if r.UDPBuffer <= 0 {
		r.UDPBuffer = DefaultUDPBuffer
	}
	set(&r.RegisterRetry, DefaultRegisterRetry)
	set(&r.AddrCheckInterval, DefaultAddrCheckInterval)
	set(&r.JumboTimeout, DefaultJumboTimeout)
	set(&r.PunchTimeout, DefaultPunchTimeout)
	set(&r.ProbeInterval, DefaultProbeInterval)
	set(&r.KeepAlive, DefaultKeepAlive)
	set(&r.DirectTimeout, DefaultDirectTimeout)
	if r.JumboRate <= 0 {
		r.JumboRate = DefaultJumboRate
	}
	if r.JumboMemory <= 0 {
		r.JumboMemory = DefaultJumboMemory
	}
	if r.JumboTotalMemory <= 0 {
		r.JumboTotalMemory = DefaultJumboTotalMemory
	}
	if r.Logger == nil {
		r.Logger = slog.Default()
	}
	return r
}
