package control

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/switchboardgg/switchboard/backbone"
	"github.com/switchboardgg/switchboard/control/internal/httpapi"
	"github.com/switchboardgg/switchboard/control/relayapi"
	"github.com/switchboardgg/switchboard/control/roomsapi"
	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/tokens"
)

// Defaults of [Config]. The fixed limits of the API are in package api.
const (
	// DefaultAccessTokenTTL is the lifetime of an access token (C0).
	DefaultAccessTokenTTL = time.Hour
	// DefaultJoinTicketTTL is the lifetime of a join ticket when the
	// backend gives no ttl_seconds.
	DefaultJoinTicketTTL = roomsapi.DefaultJoinTicketTTL
	// DefaultMaxJoinTicketTTL caps ttl_seconds of a join ticket; the
	// tickets bucket keeps records 24 h.
	DefaultMaxJoinTicketTTL = roomsapi.DefaultMaxJoinTicketTTL
	// DefaultAuthTokenTTL is the lifetime of an auth token minted by
	// POST /server/v1/auth-tokens without ttl_seconds.
	DefaultAuthTokenTTL = 10 * time.Minute
	// DefaultMaxAuthTokenTTL caps ttl_seconds of an auth token.
	DefaultMaxAuthTokenTTL = 24 * time.Hour
	// DefaultMaxRoomDuration caps a room's max_duration_seconds.
	DefaultMaxRoomDuration = roomsapi.DefaultMaxRoomDuration
	// DefaultMaxSnapshotIntervalFrames caps snapshot_interval_frames: 60 s
	// at 60 ticks per second. A frame room's interval is also capped at
	// MaxSnapshotIntervalSeconds of its own ticks.
	DefaultMaxSnapshotIntervalFrames = roomsapi.DefaultMaxSnapshotIntervalFrames
	// DefaultMaxBodyBytes bounds every request body.
	DefaultMaxBodyBytes = httpapi.DefaultMaxBodyBytes
	// DefaultCommandTimeout is how long control waits for a node to answer
	// a command before it counts the node as unavailable.
	DefaultCommandTimeout = httpapi.DefaultCommandTimeout
	// DefaultRequestTimeout bounds the work of one HTTP request.
	DefaultRequestTimeout = 10 * time.Second
	// DefaultLoginRate and DefaultLoginBurst limit C0 calls (login and
	// refresh) per client IP: a token bucket of DefaultLoginBurst
	// refilled at DefaultLoginRate per second.
	DefaultLoginRate  = 2.0
	DefaultLoginBurst = 20
	// DefaultLoginPrefixFactor sizes the second C0 limiter, per IPv6 /48
	// (a site's prefix of 65,536 /64s), on top of the one per /64: its
	// rate and burst are this many times LoginRate and LoginBurst (20 per
	// second, burst 200, by default).
	DefaultLoginPrefixFactor = 10
	// DefaultJoinRate and DefaultJoinBurst limit C1 calls per login
	// session.
	DefaultJoinRate  = httpapi.DefaultJoinRate
	DefaultJoinBurst = httpapi.DefaultJoinBurst
	// DefaultMaxRateLimitKeys bounds the IPs and sessions the rate
	// limiters remember at once.
	DefaultMaxRateLimitKeys = httpapi.DefaultMaxRateLimitKeys
	// DefaultReadHeaderTimeout bounds reading a request's header.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadTimeout bounds reading a whole request, body included: a
	// body trickled in slowly is cut off here.
	DefaultReadTimeout = 30 * time.Second
	// DefaultWriteTimeout bounds writing a response.
	DefaultWriteTimeout = 30 * time.Second
	// DefaultIdleTimeout closes a keep-alive connection idle this long.
	DefaultIdleTimeout = 120 * time.Second
	// DefaultMaxHeaderBytes bounds a request's header; a larger one is
	// answered 431.
	DefaultMaxHeaderBytes = 16 << 10
	// DefaultMaxConnections bounds the connections [Server.Serve] holds
	// open at once, keep-alive ones included; further accepts wait.
	DefaultMaxConnections = 10000
)

// Config configures [New]. DB, Backbone, ServerKey and Signer are required;
// every other field has a working zero value.
type Config struct {
	// DB holds rooms, seats, login sessions, join tickets and the node
	// registry. Required.
	DB *store.DB
	// Backbone carries the commands to game nodes and tells /healthz
	// whether NATS is reachable. Required.
	Backbone *backbone.Conn
	// Health, when not nil, tells /healthz whether the store accepts
	// writes (such as backbone.Probe.Check); an error answers 503. It
	// should answer from memory. Nil means only the NATS connection is
	// checked.
	Health func(ctx context.Context) error
	// ServerKey is the server API key: game backends send it as
	// "Authorization: Bearer <key>", and it is the HMAC key of auth
	// tokens. Required, at least tokens.MinKeyLen bytes.
	ServerKey string
	// Signer signs access tokens and connect tickets with the
	// deployment's shared signing key (store's signing key). Required.
	Signer *tokens.Signer
	// Relay, if not nil, mounts the relay API (package relayapi) at
	// /relay/v1, /qos/v1 and /server/v1/relay/keys. Its DB, AuthClient,
	// Metrics, RequestTimeout and MaxRateLimitKeys are control's; a nil
	// Logger or Now is control's. Nil: no relay API.
	Relay *relayapi.Config
	// AllowAnonymous lets C0 log in without an auth_token. False (the
	// default) answers 401 to such logins.
	AllowAnonymous bool
	// HubTickets seals the hub tickets of the P2P API (/p2p/v1) with the
	// deployment's key, as hubs open them. Nil means the P2P API is not
	// served (its paths answer 404).
	HubTickets *tokens.HubKeyring
	// P2PMaxPeers is the peer cap of a P2P network made without one.
	// Zero means api.DefaultMaxPeers.
	P2PMaxPeers int

	// AccessTokenTTL is the lifetime of access tokens. Zero means
	// DefaultAccessTokenTTL.
	AccessTokenTTL time.Duration
	// JoinTicketTTL is the lifetime of a join ticket without
	// ttl_seconds. Zero means DefaultJoinTicketTTL.
	JoinTicketTTL time.Duration
	// MaxJoinTicketTTL caps ttl_seconds of join tickets. Zero means
	// DefaultMaxJoinTicketTTL.
	MaxJoinTicketTTL time.Duration
	// AuthTokenTTL is the lifetime of auth tokens minted without
	// ttl_seconds. Zero means DefaultAuthTokenTTL.
	AuthTokenTTL time.Duration
	// MaxAuthTokenTTL caps ttl_seconds of auth tokens. Zero means
	// DefaultMaxAuthTokenTTL.
	MaxAuthTokenTTL time.Duration
	// MaxRoomDuration caps max_duration_seconds of a room. Zero means
	// DefaultMaxRoomDuration.
	MaxRoomDuration time.Duration
	// MaxSnapshotIntervalFrames caps snapshot_interval_frames. Zero means
	// DefaultMaxSnapshotIntervalFrames.
	MaxSnapshotIntervalFrames int
	// MaxBodyBytes bounds request bodies, in bytes; larger ones get 400.
	// Zero means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// CommandTimeout bounds the wait for a node's answer. Zero means
	// DefaultCommandTimeout.
	CommandTimeout time.Duration
	// RequestTimeout bounds the work of one request. Zero means
	// DefaultRequestTimeout.
	RequestTimeout time.Duration

	// LoginRate is the refill rate, per second and client IP, of the C0
	// limiter (login and refresh). Zero means DefaultLoginRate; negative
	// turns the limiter off.
	LoginRate float64
	// LoginBurst is the C0 limiter's bucket size. Zero means
	// DefaultLoginBurst.
	LoginBurst int
	// LoginPrefixRate is the refill rate, per second and IPv6 /48, of the
	// second C0 limiter, so that one /48 cannot use its 65,536 /64s as as
	// many buckets. Zero means DefaultLoginPrefixFactor × LoginRate;
	// negative, or a negative LoginRate, turns it off. IPv4 clients have
	// only the limiter per address.
	LoginPrefixRate float64
	// LoginPrefixBurst is the /48 limiter's bucket size. Zero means
	// DefaultLoginPrefixFactor × LoginBurst.
	LoginPrefixBurst int
	// JoinRate is the refill rate, per second and login session, of the
	// C1 limiter. Zero means DefaultJoinRate; negative turns it off.
	JoinRate float64
	// JoinBurst is the C1 limiter's bucket size. Zero means
	// DefaultJoinBurst.
	JoinBurst int
	// MaxRateLimitKeys bounds the keys each limiter remembers; when full,
	// it forgets the keys idle longest. Zero means
	// DefaultMaxRateLimitKeys.
	MaxRateLimitKeys int

	// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout are
	// the http.Server timeouts of [Server.Serve]. Zero means
	// DefaultReadHeaderTimeout, DefaultReadTimeout, DefaultWriteTimeout
	// and DefaultIdleTimeout.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request header in [Server.Serve], in bytes.
	// Zero means DefaultMaxHeaderBytes.
	MaxHeaderBytes int
	// MaxConnections bounds the connections [Server.Serve] holds open at
	// once; beyond it, accepts wait until one closes. Zero means
	// DefaultMaxConnections.
	MaxConnections int

	// Logger receives request failures and rare events, with no
	// component attribute of its own; tokens and keys are never logged.
	// Nil means slog.Default().
	Logger *slog.Logger
	// Registerer receives the metrics. Nil means no metrics.
	Registerer prometheus.Registerer
	// Now returns the current time. Nil means time.Now.
	Now func() time.Time
}

// withDefaults returns a copy of c with the zero fields filled in.
func (c Config) withDefaults() Config {
	setDur := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	setDur(&c.AccessTokenTTL, DefaultAccessTokenTTL)
	setDur(&c.JoinTicketTTL, DefaultJoinTicketTTL)
	setDur(&c.MaxJoinTicketTTL, DefaultMaxJoinTicketTTL)
	setDur(&c.AuthTokenTTL, DefaultAuthTokenTTL)
	setDur(&c.MaxAuthTokenTTL, DefaultMaxAuthTokenTTL)
	setDur(&c.MaxRoomDuration, DefaultMaxRoomDuration)
	setDur(&c.RequestTimeout, DefaultRequestTimeout)
	setDur(&c.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	setDur(&c.ReadTimeout, DefaultReadTimeout)
	setDur(&c.WriteTimeout, DefaultWriteTimeout)
	setDur(&c.IdleTimeout, DefaultIdleTimeout)
	if c.MaxHeaderBytes <= 0 {
		c.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if c.MaxSnapshotIntervalFrames <= 0 {
		c.MaxSnapshotIntervalFrames = DefaultMaxSnapshotIntervalFrames
	}
	if c.LoginRate == 0 {
		c.LoginRate = DefaultLoginRate
	}
	if c.LoginBurst <= 0 {
		c.LoginBurst = DefaultLoginBurst
	}
	if c.LoginPrefixRate == 0 || c.LoginRate < 0 {
		c.LoginPrefixRate = DefaultLoginPrefixFactor * c.LoginRate
	}
	if c.LoginPrefixBurst <= 0 {
		c.LoginPrefixBurst = DefaultLoginPrefixFactor * c.LoginBurst
	}
	if c.MaxConnections <= 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	l := c.limits().WithDefaults()
	c.MaxBodyBytes, c.CommandTimeout, c.MaxRateLimitKeys = l.MaxBodyBytes, l.CommandTimeout, l.MaxRateLimitKeys
	c.JoinRate, c.JoinBurst = l.JoinRate, l.JoinBurst
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// limits returns the fields of c the rooms and P2P APIs share; control's
// Config keeps them flat, since its callers cannot name an internal type.
func (c Config) limits() httpapi.Limits {
	return httpapi.Limits{
		MaxBodyBytes:     c.MaxBodyBytes,
		CommandTimeout:   c.CommandTimeout,
		JoinRate:         c.JoinRate,
		JoinBurst:        c.JoinBurst,
		MaxRateLimitKeys: c.MaxRateLimitKeys,
	}
}
