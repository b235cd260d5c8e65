package relay

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchboardgg/switchboard/tokens"
)

// Defaults of [Config]: Unity Relay's values where Unity publishes one
// (reference unity-relay.md §4).
const (
	// DefaultIdleTimeout releases an allocation that sent and received
	// nothing for this long (Unity: 10 s).
	DefaultIdleTimeout = 10 * time.Second
	// DefaultHostAloneTimeout is the idle timeout of a bound host with no
	// connected peer (Unity: 60 s).
	DefaultHostAloneTimeout = 60 * time.Second
	// DefaultBindTimeout is the time from allocating (the blob's issue
	// time) to the first BIND; a later first BIND gets ERROR 4 (the seed's
	// step 4: 60 s).
	DefaultBindTimeout = 60 * time.Second
	// DefaultMaxDatagram is the largest relay message accepted, in bytes
	// (UTP's absolute maximum over UDP; its default is 1400).
	DefaultMaxDatagram = 1472
	// DefaultMaxAllocations bounds the live allocations of one node; a
	// first BIND beyond it is dropped (counted as "capacity").
	DefaultMaxAllocations = 100_000
	// DefaultMaxReleased bounds the released allocation ids remembered
	// until their blobs expire; when full, first BINDs are dropped
	// (counted as "capacity") until ids expire.
	DefaultMaxReleased = 1 << 20
	// DefaultMaxPeers caps a host's connected peers whatever its blob
	// says (Unity: 100 players per session).
	DefaultMaxPeers = 100
	// DefaultAllocationRate is the bytes per second of RELAY messages one
	// allocation may send on average; more is dropped ("bandwidth").
	DefaultAllocationRate = 4 << 20
	// DefaultAllocationBurst is the bytes one allocation may send at once
	// above DefaultAllocationRate.
	DefaultAllocationBurst = 1 << 20
	// DefaultSourceRate is the messages per second one source address may
	// send that cost the node work or get an answer without being a relayed
	// RELAY (BIND, CONNECT_REQUEST, PING, QoS probes, messages answered with
	// an ERROR); more are dropped ("source_rate").
	DefaultSourceRate = 50
	// DefaultSourceBurst is the burst above DefaultSourceRate.
	DefaultSourceBurst = 100
	// DefaultSweepInterval is how often timeouts are checked.
	DefaultSweepInterval = 250 * time.Millisecond
	// DefaultWSHandshakeTimeout bounds a WebSocket upgrade.
	DefaultWSHandshakeTimeout = 10 * time.Second
	// DefaultWSIdleTimeout closes a WebSocket connection that sent nothing
	// for this long (the host-alone timeout: longer than any allocation's
	// idle timeout but the per-allocation override).
	DefaultWSIdleTimeout = 60 * time.Second
	// DefaultWSWriteTimeout bounds one write to a WebSocket connection.
	DefaultWSWriteTimeout = 10 * time.Second
	// DefaultWSSendQueue is the messages queued for one WebSocket
	// connection; more are dropped ("send_failed"), as UDP would.
	DefaultWSSendQueue = 256
	// DefaultMaxWSConns bounds the WebSocket connections of one node,
	// handshaking ones included; more are closed at once.
	DefaultMaxWSConns = 20_000
	// DefaultMaxWSConnsPerIP bounds the WebSocket connections from one
	// IPv4 address or IPv6 /64, handshaking ones included, so that one
	// host cannot hold DefaultMaxWSConns; more are closed at once. It
	// leaves room for many players behind one NAT.
	DefaultMaxWSConnsPerIP = 1_000
	// DefaultDTLSHandshakeTimeout bounds a DTLS handshake, from the first
	// ClientHello.
	DefaultDTLSHandshakeTimeout = 10 * time.Second
	// DefaultDTLSCookieTimeout ends a DTLS handshake whose source has not
	// echoed the HelloVerifyRequest's cookie within it (a spoofed source
	// never does), so that spoofed ClientHellos hold handshake slots for
	// this long, not DefaultDTLSHandshakeTimeout. A client answers at once;
	// one whose answer is lost retransmits its ClientHello and starts over.
	DefaultDTLSCookieTimeout = 2 * time.Second
	// DefaultDTLSIdleTimeout closes a DTLS connection that sent nothing
	// for this long, or for its allocation's own idle timeout when that is
	// longer (as DefaultWSIdleTimeout).
	DefaultDTLSIdleTimeout = 60 * time.Second
	// DefaultMaxDTLSConns bounds the DTLS connections of one node,
	// handshaking ones included; a ClientHello beyond it is dropped.
	DefaultMaxDTLSConns = 20_000
	// DefaultMaxDTLSHandshakes bounds the DTLS handshakes under way on one
	// node; a ClientHello beyond it is dropped.
	DefaultMaxDTLSHandshakes = 1024
	// DefaultMaxDTLSHandshakesPerIP bounds the DTLS handshakes under way
	// from one IPv4 address or IPv6 /64.
	DefaultMaxDTLSHandshakesPerIP = 8
	// DefaultMaxDTLSConnsPerAllocation bounds the DTLS connections past
	// the handshake of one allocation (its PSK identity): one, and one
	// more while it re-binds from a new address. A connection beyond it
	// is closed after the handshake.
	DefaultMaxDTLSConnsPerAllocation = 4
	// DefaultDTLSQueue is the datagrams queued for one DTLS connection
	// between the socket's reader and the connection's goroutine; more
	// are dropped.
	DefaultDTLSQueue = 64
	// DefaultBatch is the most datagrams read or written in one system
	// call.
	DefaultBatch = 32
	// DefaultReadBuffer and DefaultWriteBuffer are the UDP socket buffer
	// sizes ServePacket and ServeDTLS ask for, in bytes (the kernel caps them at
	// net.core.rmem_max / wmem_max; see docs/configuration.md).
	DefaultReadBuffer  = 8 << 20
	DefaultWriteBuffer = 8 << 20
	// DefaultSubscribeRate is the PEERS_SUBSCRIBE messages per second one
	// host allocation may send on average; more are dropped ("subscribe").
	// Each is answered with up to 1 + MaxPeers PEER_EVENTs.
	DefaultSubscribeRate = 1
	// DefaultSubscribeBurst is the PEERS_SUBSCRIBE messages one host may
	// send at once (a client retries an unanswered one).
	DefaultSubscribeBurst = 4
)

// Release is what a [Server] reports when an allocation is released.
type Release struct {
	// AllocationID is the released allocation.
	AllocationID [16]byte
	// Host reports whether it was a host's allocation (its join code must
	// die with it).
	Host bool
	// Reason says why.
	Reason ReleaseReason
}

// ReleaseReason says why an allocation was released.
type ReleaseReason string

// Release reasons.
const (
	ReleaseClosed   ReleaseReason = "closed"    // the client sent CLOSE
	ReleaseTimeout  ReleaseReason = "timeout"   // idle timeout
	ReleaseHostGone ReleaseReason = "host_gone" // a joiner whose host was released
	ReleaseExpired  ReleaseReason = "expired"   // the blob expired
)

// Config configures a [Server]. Keys, NodeID and BootEpoch are required;
// the zero value of every other field works.
type Config struct {
	// Keys opens the sealed connection data and derives allocation keys.
	// Required.
	Keys *tokens.RelayKeyring
	// NodeID is this node's id; blobs naming another node are refused.
	// Required.
	NodeID string
	// BootEpoch is this node's boot epoch (a new one at every start);
	// blobs of another epoch are refused with ERROR 4. Required (not 0).
	BootEpoch uint64
	// Region is this node's region, reported in logs only.
	Region string

	// IdleTimeout, zero: DefaultIdleTimeout.
	IdleTimeout time.Duration
	// HostAloneTimeout, zero: DefaultHostAloneTimeout.
	HostAloneTimeout time.Duration
	// BindTimeout, zero: DefaultBindTimeout.
	BindTimeout time.Duration
	// MaxDatagram in bytes, zero: DefaultMaxDatagram.
	MaxDatagram int
	// MaxAllocations, zero: DefaultMaxAllocations.
	MaxAllocations int
	// MaxReleased, zero: DefaultMaxReleased.
	MaxReleased int
	// MaxPeers, zero: DefaultMaxPeers.
	MaxPeers int
	// AllocationRate in bytes per second, zero: DefaultAllocationRate.
	AllocationRate int
	// AllocationBurst in bytes, zero: DefaultAllocationBurst.
	AllocationBurst int
	// SourceRate in messages per second, zero: DefaultSourceRate.
	SourceRate int
	// SourceBurst in messages, zero: DefaultSourceBurst.
	SourceBurst int
	// SweepInterval, zero: DefaultSweepInterval.
	SweepInterval time.Duration
	// WSHandshakeTimeout, zero: DefaultWSHandshakeTimeout.
	WSHandshakeTimeout time.Duration
	// WSIdleTimeout, zero: DefaultWSIdleTimeout. A connection over which
	// an allocation with a longer idle timeout of its own was bound
	// tolerates that much silence instead.
	WSIdleTimeout time.Duration
	// WSWriteTimeout, zero: DefaultWSWriteTimeout.
	WSWriteTimeout time.Duration
	// WSSendQueue in messages, zero: DefaultWSSendQueue.
	WSSendQueue int
	// MaxWSConns, zero: DefaultMaxWSConns.
	MaxWSConns int
	// MaxWSConnsPerIP, zero: DefaultMaxWSConnsPerIP.
	MaxWSConnsPerIP int
	// DTLSHandshakeTimeout, zero: DefaultDTLSHandshakeTimeout.
	DTLSHandshakeTimeout time.Duration
	// DTLSCookieTimeout, zero: DefaultDTLSCookieTimeout.
	DTLSCookieTimeout time.Duration
	// DTLSIdleTimeout, zero: DefaultDTLSIdleTimeout.
	DTLSIdleTimeout time.Duration
	// MaxDTLSConns, zero: DefaultMaxDTLSConns.
	MaxDTLSConns int
	// MaxDTLSHandshakes, zero: DefaultMaxDTLSHandshakes.
	MaxDTLSHandshakes int
	// MaxDTLSHandshakesPerIP, zero: DefaultMaxDTLSHandshakesPerIP.
	MaxDTLSHandshakesPerIP int
	// MaxDTLSConnsPerAllocation, zero: DefaultMaxDTLSConnsPerAllocation.
	MaxDTLSConnsPerAllocation int
	// DTLSQueue in datagrams, zero: DefaultDTLSQueue.
	DTLSQueue int
	// Batch in datagrams, zero: DefaultBatch.
	Batch int
	// ReadBuffer and WriteBuffer in bytes, zero: DefaultReadBuffer and
	// DefaultWriteBuffer; negative: leave the socket's as they are.
	ReadBuffer, WriteBuffer int
	// SubscribeRate in PEERS_SUBSCRIBE messages per second per host,
	// zero: DefaultSubscribeRate.
	SubscribeRate int
	// SubscribeBurst in messages, zero: DefaultSubscribeBurst.
	SubscribeBurst int

	// OnRelease, if not nil, is called once for every released allocation,
	// synchronously from the goroutine that released it and outside every
	// lock of the server: it must not block (the control plane kills the
	// host's join code from it).
	OnRelease func(Release)
	// Logger, nil: slog.Default().
	Logger *slog.Logger
	// Registerer receives the server's metrics; nil: none are registered.
	Registerer prometheus.Registerer
	// Now is the clock, nil: time.Now. Tests inject one.
	Now func() time.Time
}

func orDefault[T int | time.Duration](v *T, d T) {
	if *v == 0 {
		*v = d
	}
}

func (c *Config) fill() {
	orDefault(&c.IdleTimeout, DefaultIdleTimeout)
	orDefault(&c.HostAloneTimeout, DefaultHostAloneTimeout)
	orDefault(&c.BindTimeout, DefaultBindTimeout)
	orDefault(&c.MaxDatagram, DefaultMaxDatagram)
	orDefault(&c.MaxAllocations, DefaultMaxAllocations)
	orDefault(&c.MaxReleased, DefaultMaxReleased)
	orDefault(&c.MaxPeers, DefaultMaxPeers)
	orDefault(&c.AllocationRate, DefaultAllocationRate)
	orDefault(&c.AllocationBurst, DefaultAllocationBurst)
	orDefault(&c.SourceRate, DefaultSourceRate)
	orDefault(&c.SourceBurst, DefaultSourceBurst)
	orDefault(&c.SweepInterval, DefaultSweepInterval)
	orDefault(&c.WSHandshakeTimeout, DefaultWSHandshakeTimeout)
	orDefault(&c.WSIdleTimeout, DefaultWSIdleTimeout)
	orDefault(&c.WSWriteTimeout, DefaultWSWriteTimeout)
	orDefault(&c.WSSendQueue, DefaultWSSendQueue)
	orDefault(&c.MaxWSConns, DefaultMaxWSConns)
	orDefault(&c.MaxWSConnsPerIP, DefaultMaxWSConnsPerIP)
	orDefault(&c.DTLSHandshakeTimeout, DefaultDTLSHandshakeTimeout)
	orDefault(&c.DTLSCookieTimeout, DefaultDTLSCookieTimeout)
	orDefault(&c.DTLSIdleTimeout, DefaultDTLSIdleTimeout)
	orDefault(&c.MaxDTLSConns, DefaultMaxDTLSConns)
	orDefault(&c.MaxDTLSHandshakes, DefaultMaxDTLSHandshakes)
	orDefault(&c.MaxDTLSHandshakesPerIP, DefaultMaxDTLSHandshakesPerIP)
	orDefault(&c.MaxDTLSConnsPerAllocation, DefaultMaxDTLSConnsPerAllocation)
	orDefault(&c.DTLSQueue, DefaultDTLSQueue)
	orDefault(&c.Batch, DefaultBatch)
	orDefault(&c.ReadBuffer, DefaultReadBuffer)
	orDefault(&c.WriteBuffer, DefaultWriteBuffer)
	orDefault(&c.SubscribeRate, DefaultSubscribeRate)
	orDefault(&c.SubscribeBurst, DefaultSubscribeBurst)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}
