package p2p

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchboardgg/switchboard/protocol/p2pwire"
	"github.com/switchboardgg/switchboard/tokens"
)

// Defaults of [Config]. A limit set to a negative value is off (the bench
// does that); zero means the default.
const (
	// DefaultMaxFrameSize is the largest frame body the hub accepts
	// (announced in WELCOME).
	DefaultMaxFrameSize = 256 << 10
	// DefaultSendQueueBytes bounds what waits to be written to one peer;
	// a peer whose queue would grow past it is dropped (slow_consumer).
	DefaultSendQueueBytes = 4 << 20
	// DefaultResumeWindow is how long a peer id outlives its connection.
	DefaultResumeWindow = 30 * time.Second
	// DefaultHelloTimeout bounds the TLS handshake and the HELLO.
	DefaultHelloTimeout = 10 * time.Second
	// DefaultIdleTimeout closes a connection that sent nothing (not even
	// a PING) for this long.
	DefaultIdleTimeout = 60 * time.Second
	// DefaultWriteTimeout closes a connection whose write has not
	// finished in this long.
	DefaultWriteTimeout = 10 * time.Second
	// DefaultPeerMessageRate is the routed messages per second a peer may
	// send (MESSAGE, REQUEST, RESPONSE); the burst is one second's worth.
	DefaultPeerMessageRate = 1000
	// DefaultPeerBandwidth is the routed bytes per second a peer may send
	// (a broadcast counts once per recipient); burst one second's worth.
	DefaultPeerBandwidth = 4 << 20
	// DefaultNetworkBandwidth is the routed bytes per second all peers of
	// one network may send together.
	DefaultNetworkBandwidth = 64 << 20
	// DefaultMaxPeersPerNetwork caps a network; the protocol's hard cap is
	// p2pwire.MaxPeersInSet (4,096).
	DefaultMaxPeersPerNetwork = 256
	// DefaultMaxConns caps the hub's connections, authenticated or not.
	DefaultMaxConns = 10000
	// DefaultPunchRate is the PUNCH_REQUESTs per second a peer may send,
	// with a burst of DefaultPunchBurst.
	DefaultPunchRate  = 1
	DefaultPunchBurst = 4
	// DefaultMaxPunchesPerPeer caps a peer's punches in flight (offered,
	// before their deadline and both results).
	DefaultMaxPunchesPerPeer = 4
	// DefaultPeerDatagramRate is the datagrams per second the hub's UDP
	// port takes from one peer, whatever their kind (a broadcast counts
	// once per recipient); the burst is one second's worth. It leaves room for a
	// jumbo message at the SDK's default pace (8 MiB/s, about 8,200
	// datagrams a second).
	DefaultPeerDatagramRate = 20000
	// DefaultUDPBatch is how many datagrams one system call moves.
	DefaultUDPBatch = 64
	// DefaultSTUNRatePerSource is the STUN answers per second per source
	// address (burst one second's worth).
	DefaultSTUNRatePerSource = 5
	// DefaultSTUNRate is the STUN answers per second in all.
	DefaultSTUNRate = 2000
	// DefaultSTUNMaxSources bounds the source addresses whose STUN rate
	// is tracked.
	DefaultSTUNMaxSources = 4096
)

// AnonymousPrefix starts the HELLO ticket of an anonymous peer: the rest
// is the network's name. A hub admits it only with Config.AllowAnonymous;
// the peer's username is "anonymous".
const AnonymousPrefix = "anonymous:"

// Config configures a [Hub]. Keyring, ID and TLS are required; the zero
// value of every other field means its Default.
type Config struct {
	// ID is the hub's node id; it admits only tickets naming it.
	ID string
	// Keyring opens hub tickets (tokens.HubKeyring, from the deployment's
	// signing key).
	Keyring *tokens.HubKeyring
	// TLS is the server TLS configuration (TLS 1.3 is required; the hub
	// sets MinVersion). The hub never speaks in clear.
	TLS *tls.Config
	// AllowAnonymous admits HELLOs whose ticket is AnonymousPrefix +
	// network, with no login. Development only.
	AllowAnonymous bool

	MaxFrameSize       int           // largest frame body accepted, ≤ p2pwire.MaxFrameSize
	SendQueueBytes     int           // per-peer send queue, bytes; at least 2 frames of MaxFrameSize
	ResumeWindow       time.Duration // negative: no resuming
	HelloTimeout       time.Duration
	IdleTimeout        time.Duration
	WriteTimeout       time.Duration
	PeerMessageRate    float64 // messages/s; negative: unlimited
	PeerBandwidth      float64 // bytes/s; negative: unlimited
	NetworkBandwidth   float64 // bytes/s; negative: unlimited
	MaxPeersPerNetwork int     // ≤ p2pwire.MaxPeersInSet
	MaxConns           int
	PunchRate          float64 // PUNCH_REQUESTs/s per peer; negative: unlimited
	MaxPunchesPerPeer  int     // punches in flight per requester

	// DisableUDP leaves UDP out of WELCOME (no key is handed out);
	// ServeUDP is then not called.
	DisableUDP        bool
	PeerDatagramRate  float64 // datagrams/s per peer; negative: unlimited
	UDPBatch          int     // datagrams per system call, ≤ udpio.MaxBatch
	STUNRatePerSource float64 // STUN answers/s per source address
	STUNRate          float64 // STUN answers/s in all
	STUNMaxSources    int     // source addresses tracked for the STUN rate

	// Logger receives the hub's logs (never a ticket, token or payload).
	// Nil means slog.Default().
	Logger *slog.Logger
	// Registerer receives the hub's metrics. Nil means none.
	Registerer prometheus.Registerer
	// Now is the clock; nil means time.Now. Tests set it.
	Now func() time.Time
}

// ErrConfig is wrapped by [New] for a configuration it refuses.
var ErrConfig = errors.New("p2p: bad configuration")

func (c Config) withDefaults() (Config, error) {
	if c.ID == "" || len(c.ID) > tokens.HubMaxNodeID {
		return c, fmt.Errorf("%w: hub id of %d bytes, want 1..%d", ErrConfig, len(c.ID), tokens.HubMaxNodeID)
	}
	if c.Keyring == nil || c.TLS == nil {
		return c, fmt.Errorf("%w: Keyring and TLS are required", ErrConfig)
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defD := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	defF := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.MaxFrameSize, DefaultMaxFrameSize)
	def(&c.SendQueueBytes, DefaultSendQueueBytes)
	def(&c.MaxPeersPerNetwork, DefaultMaxPeersPerNetwork)
	def(&c.MaxConns, DefaultMaxConns)
	defD(&c.ResumeWindow, DefaultResumeWindow)
	defD(&c.HelloTimeout, DefaultHelloTimeout)
	defD(&c.IdleTimeout, DefaultIdleTimeout)
	defD(&c.WriteTimeout, DefaultWriteTimeout)
	defF(&c.PeerMessageRate, DefaultPeerMessageRate)
	defF(&c.PeerBandwidth, DefaultPeerBandwidth)
	defF(&c.NetworkBandwidth, DefaultNetworkBandwidth)
	defF(&c.PunchRate, DefaultPunchRate)
	def(&c.MaxPunchesPerPeer, DefaultMaxPunchesPerPeer)
	defF(&c.PeerDatagramRate, DefaultPeerDatagramRate)
	defF(&c.STUNRatePerSource, DefaultSTUNRatePerSource)
	defF(&c.STUNRate, DefaultSTUNRate)
	def(&c.UDPBatch, DefaultUDPBatch)
	def(&c.STUNMaxSources, DefaultSTUNMaxSources)
	switch {
	case c.MaxFrameSize < p2pwire.MinAnnouncedFrameSize || c.MaxFrameSize > p2pwire.MaxFrameSize:
		return c, fmt.Errorf("%w: max frame size %d outside %d..%d", ErrConfig, c.MaxFrameSize, p2pwire.MinAnnouncedFrameSize, p2pwire.MaxFrameSize)
	case c.SendQueueBytes < 2*(c.MaxFrameSize+p2pwire.MaxPeerIDLen+8):
		return c, fmt.Errorf("%w: send queue of %d bytes holds fewer than two frames of %d", ErrConfig, c.SendQueueBytes, c.MaxFrameSize)
	case c.MaxPeersPerNetwork < 1 || c.MaxPeersPerNetwork > p2pwire.MaxPeersInSet:
		return c, fmt.Errorf("%w: max peers per network %d outside 1..%d", ErrConfig, c.MaxPeersPerNetwork, p2pwire.MaxPeersInSet)
	case c.UDPBatch < 1 || c.STUNMaxSources < 1 || c.STUNRatePerSource <= 0 || c.STUNRate <= 0:
		return c, fmt.Errorf("%w: UDP batch, STUN sources and STUN rates must be positive", ErrConfig)
	case c.MaxConns < 1, c.MaxPunchesPerPeer < 1, c.HelloTimeout < 0, c.IdleTimeout < 0, c.WriteTimeout < 0:
		return c, fmt.Errorf("%w: negative timeout or connection cap", ErrConfig)
	case c.ResumeWindow > time.Duration(1<<32-1)*time.Millisecond:
		return c, fmt.Errorf("%w: resume window %s too long", ErrConfig, c.ResumeWindow)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c, nil
}
