package udp

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchboardgg/switchboard/node"
	"github.com/switchboardgg/switchboard/protocol/roomudp"
	"github.com/switchboardgg/switchboard/tokens"
)

// Defaults of [Config], used where a field is zero.
const (
	DefaultMTU              = roomudp.DefaultMTU
	DefaultIdleTimeout      = 10 * time.Second
	DefaultHandshakeTimeout = 10 * time.Second
	DefaultLinger           = 2 * time.Second
	DefaultMaxSessions      = 16384
	DefaultMaxPending       = 4096
	DefaultSendQueue        = 1024
	DefaultOutQueue         = 4096
	DefaultHandshakeRate    = 5000
	DefaultHandshakeBurst   = 500
	// DefaultSourceHandshakeRate and DefaultSourceHandshakeBurst are the
	// new HANDSHAKEs a second one source may send, and at once. A client
	// costs one per connection attempt (its retransmissions are free), so
	// 20 a second is 1,200 joins and resumes a minute from one address:
	// far more than a NAT of a few hundred players makes in play, and a
	// burst of 40 seats a LAN party of 40 at once (the rest within 2 s at
	// 20 a second, or over WebSocket after the 2 s fallback). One source
	// at it takes 0.4 % of DefaultHandshakeRate: it takes 250 addresses
	// flooding at once to use up the node's.
	DefaultSourceHandshakeRate  = 20
	DefaultSourceHandshakeBurst = 40
	// DefaultMaxHandshakeSources is the size of the per-source table:
	// 32 bytes each, 512 KiB. A bucket that refilled is worth nothing, so
	// the table needs to hold only the sources that sent a HANDSHAKE in
	// the last burst/rate = 2 s.
	DefaultMaxHandshakeSources = 16384
	// maxSourceLimit bounds SourceHandshakeRate and SourceHandshakeBurst:
	// far above any use (the node-wide default is 5,000), and low enough
	// that the per-source buckets' nano-token arithmetic cannot overflow
	// (a burst of 10^10 did, and turned every known source away).
	maxSourceLimit = 1_000_000
	// DefaultReadRate and DefaultReadBurst are a WebSocket connection's
	// read budget (node.DefaultReadRate, node.DefaultReadBurst).
	DefaultReadRate  = node.DefaultReadRate
	DefaultReadBurst = node.DefaultReadBurst
)

// Config configures a [Server]. Node and Signer are required; every other
// zero field takes its default.
type Config struct {
	// Node is the game node whose rooms this transport serves.
	Node *node.Server
	// Signer holds the deployment's signing key, from which the session
	// keys are derived (roomudp.SecretLabel).
	Signer *tokens.Signer
	// MTU is the largest datagram sent (the HANDSHAKE REPLY excepted),
	// roomudp.MinMTU to roomudp.MaxDatagram bytes.
	MTU int
	// IdleTimeout ends a session without an authenticated datagram.
	IdleTimeout time.Duration
	// HandshakeTimeout ends a seated session that sent no SESSION
	// datagram after its WELCOME, and forgets a refused handshake.
	HandshakeTimeout time.Duration
	// Linger is how long a session the room closed stays, for KCP to
	// deliver the final message.
	Linger time.Duration
	// MaxSessions and MaxPending bound the sessions and the handshakes
	// not yet followed by a SESSION datagram. MaxPending also bounds the
	// refused handshakes remembered so that their retransmissions get the
	// same ERROR; they never keep a new HANDSHAKE out, and beyond it a
	// refused one is answered but not remembered.
	MaxSessions, MaxPending int
	// SendQueue is the most KCP segments queued or unacknowledged per
	// session; a room message that finds it full drops the session.
	SendQueue int
	// OutQueue is the most datagrams waiting for the writer.
	OutQueue int
	// HandshakeRate and HandshakeBurst bound the new HANDSHAKEs a second
	// whose keys the node derives (retransmissions of a known attempt do
	// not count); beyond them HANDSHAKEs are dropped (busy). Deriving a
	// bogus one's keys and failing to open it costs about 7 µs
	// (BenchmarkDropHandshake, a shared 2-core machine), so the default
	// caps what a flood of them takes at a few percent of a core.
	HandshakeRate, HandshakeBurst int
	// SourceHandshakeRate and SourceHandshakeBurst bound the same
	// HANDSHAKEs per source, an IPv4 address or an IPv6 /64, checked
	// first: beyond them a HANDSHAKE is dropped (source_rate) before it
	// costs a key derivation or the node-wide budget, so that one address
	// flooding HANDSHAKEs keeps nobody else out. A HANDSHAKE the node-wide
	// limit drops is not charged to its source. Zero means
	// DefaultSourceHandshakeRate and DefaultSourceHandshakeBurst; a
	// negative SourceHandshakeRate turns the per-source limit off (a load
	// test whose players all share one address).
	SourceHandshakeRate, SourceHandshakeBurst int
	// MaxHandshakeSources is how many sources the per-source limit
	// tracks (rounded up to a multiple of 8), allocated by New; a new
	// source takes the place of the one whose bucket is fullest.
	MaxHandshakeSources int
	// ReadRate and ReadBurst are the bytes per second a session may send
	// on average, and at once, as a WebSocket connection's read budget:
	// authenticated datagrams beyond them are dropped (reason rate), so
	// that one client cannot make the node answer it at line rate (a
	// PONG per PING, a KCP acknowledgement per segment) into the
	// outgoing queue all sessions share.
	ReadRate, ReadBurst int
	// Batch is the most datagrams per read or write system call; zero
	// means udpio.DefaultBatch.
	Batch int
	// Logger receives rare events, never per datagram; nil means
	// slog.Default(). Keys and tickets are never logged.
	Logger *slog.Logger
	// Registerer, when set, registers the metrics.
	Registerer prometheus.Registerer
}

func (c Config) withDefaults() (Config, error) {
	set := func(p *int, d int) {
		if *p == 0 {
			*p = d
		}
	}
	setD := func(p *time.Duration, d time.Duration) {
		if *p == 0 {
			*p = d
		}
	}
	set(&c.MTU, DefaultMTU)
	set(&c.MaxSessions, DefaultMaxSessions)
	set(&c.MaxPending, DefaultMaxPending)
	set(&c.SendQueue, DefaultSendQueue)
	set(&c.OutQueue, DefaultOutQueue)
	set(&c.HandshakeRate, DefaultHandshakeRate)
	set(&c.HandshakeBurst, DefaultHandshakeBurst)
	set(&c.SourceHandshakeRate, DefaultSourceHandshakeRate)
	set(&c.SourceHandshakeBurst, DefaultSourceHandshakeBurst)
	set(&c.MaxHandshakeSources, DefaultMaxHandshakeSources)
	set(&c.ReadRate, DefaultReadRate)
	set(&c.ReadBurst, DefaultReadBurst)
	setD(&c.IdleTimeout, DefaultIdleTimeout)
	setD(&c.HandshakeTimeout, DefaultHandshakeTimeout)
	setD(&c.Linger, DefaultLinger)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	switch {
	case c.Node == nil || c.Signer == nil:
		return c, fmt.Errorf("udp: Node and Signer are required: %w", ErrConfig)
	case c.MTU < roomudp.MinMTU || c.MTU > roomudp.MaxDatagram:
		return c, fmt.Errorf("udp: MTU %d not in [%d, %d]: %w", c.MTU, roomudp.MinMTU, roomudp.MaxDatagram, ErrConfig)
	case c.IdleTimeout < 0 || c.HandshakeTimeout < 0 || c.Linger < 0:
		return c, fmt.Errorf("udp: negative timeout: %w", ErrConfig)
	case c.MaxSessions < 1 || c.MaxPending < 1 || c.SendQueue < 1 || c.OutQueue < 1 || c.Batch < 0 ||
		c.HandshakeRate < 1 || c.HandshakeBurst < 1 || c.ReadRate < 1 ||
		c.SourceHandshakeBurst < 1 || c.MaxHandshakeSources < 1:
		return c, fmt.Errorf("udp: a limit below 1: %w", ErrConfig)
	case c.SourceHandshakeRate > maxSourceLimit || c.SourceHandshakeBurst > maxSourceLimit:
		return c, fmt.Errorf("udp: SourceHandshakeRate or SourceHandshakeBurst above %d: %w", maxSourceLimit, ErrConfig)
	case c.ReadBurst < roomudp.MaxDatagram:
		return c, fmt.Errorf("udp: ReadBurst %d below the largest datagram (%d): %w", c.ReadBurst, roomudp.MaxDatagram, ErrConfig)
	}
	return c, nil
}
