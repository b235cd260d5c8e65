package relayapi

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/backbone"
	"github.com/switchboardgg/switchboard/control/internal/httpapi"
	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/tokens"
)

// Defaults of [Config].
const (
	// DefaultAllocationTTL is how long an allocation's connection data is
	// accepted by its relay node: a client may re-bind that long after
	// allocating. It must not exceed the store's RelayTTL.
	DefaultAllocationTTL = 6 * time.Hour
	// MaxAllocationTTL caps AllocationTTL: the store keeps allocation and
	// join code records store.DefaultRelayTTL after their last write.
	MaxAllocationTTL = store.DefaultRelayTTL
	// DefaultJoinCodeLength is the length of a join code (Unity: 6).
	DefaultJoinCodeLength = api.RelayMinJoinCodeLen
	// DefaultRequestsPerMinute limits each call (allocate, joincode,
	// join, regions, QoS servers) per player (Unity: 60 per minute).
	DefaultRequestsPerMinute = 60
	// DefaultJoinsPerMinutePerAddress limits joins with a code per source
	// address (an IPv6 /64), whoever the player: 20^6 codes must not be
	// guessable by brute force.
	DefaultJoinsPerMinutePerAddress = 30
	// DefaultMaxAllocationsPerKey bounds the live allocations made with
	// one relay API key (hosts and joiners).
	DefaultMaxAllocationsPerKey = 1000
	// DefaultMaxAllocationsPerAddress bounds the live allocations made
	// from one source address, whatever the credential.
	DefaultMaxAllocationsPerAddress = 50
	// DefaultMaxBodyBytes bounds a request body.
	DefaultMaxBodyBytes = 4 << 10
	// DefaultMaxRateLimitKeys bounds the players and addresses each limiter
	// remembers at once.
	DefaultMaxRateLimitKeys = httpapi.DefaultMaxRateLimitKeys
	// DefaultProject is the project of an API key created without one.
	DefaultProject = "default"
	// DefaultMaxIdleTimeout caps an allocation's idleTimeoutSeconds.
	DefaultMaxIdleTimeout = 300 * time.Second
	// MaxIdleTimeoutLimit caps MaxIdleTimeout: the blob carries the idle
	// timeout in 16 bits of seconds.
	MaxIdleTimeoutLimit = 65535 * time.Second
	// DefaultMigrationGrace is how long the join code of a host that opted
	// in to host migration outlives it, for a peer to claim.
	DefaultMigrationGrace = 10 * time.Second
	// MaxMigrationGrace caps MigrationGrace.
	MaxMigrationGrace = 10 * time.Minute
)

// ErrConfig is returned (wrapped) by [New] for an invalid Config.
var ErrConfig = errors.New("relayapi: invalid config")

// Config configures [New]. DB and Keys are required; every other field has
// a working zero value (which accepts no credential but API keys).
type Config struct {
	// DB holds allocations, join codes, API keys and the relay node
	// registry. Required.
	DB *store.DB
	// Keys seals connection data and derives allocation keys; the relay
	// nodes of the deployment hold the same secret. Required.
	Keys *tokens.RelayKeyring
	// Backbone reaches the relay nodes for an allocation's counters
	// (control sets it); nil: GET /server/v1/relay/allocations/{id}
	// answers 503 node_unavailable.
	Backbone *backbone.Conn
	// CommandTimeout bounds the wait for a relay node's answer. Zero
	// means store.DefaultCommandTimeout.
	CommandTimeout time.Duration
	// AuthClient, if not nil, checks a Switchboard access token (control
	// sets it); an *httpapi.Error of status 401 is answered 401.
	AuthClient func(ctx context.Context, r *http.Request, now time.Time) (*store.Session, error)
	// AllowAnonymous lets a request without an Authorization header in,
	// as the player of its source address. False by default, also in dev.
	AllowAnonymous bool
	// TrustedNetworks: any Bearer from these source addresses is accepted
	// (a Unity Authentication token is not verified: its subject, read
	// unverified, is the player). Empty: none.
	TrustedNetworks []netip.Prefix
	// UnityKeys is a JWKS document (JSON) of Unity Authentication's
	// signing keys; RS256 tokens signed by one of them are accepted, their
	// subject the player. Nil: none.
	UnityKeys []byte
	// UnityIssuer, if not empty, is the "iss" a Unity token must carry.
	UnityIssuer string

	// DefaultRegion is the region of an allocate without one; empty, or no
	// healthy node there, means the least-loaded healthy node of any region.
	DefaultRegion string
	// RegionDescriptions are the descriptions GET /relay/v1/regions shows,
	// by region id; a region without one is described by its id.
	RegionDescriptions map[string]string
	// MaxIdleTimeout caps the idleTimeoutSeconds of allocate and join
	// (whole seconds, at most MaxIdleTimeoutLimit). Zero means
	// DefaultMaxIdleTimeout; negative refuses any override.
	MaxIdleTimeout time.Duration
	// MigrationGrace is how long a dead host's join code is held for a
	// claim, when the host opted in to host migration (at most
	// MaxMigrationGrace). Zero means DefaultMigrationGrace.
	MigrationGrace time.Duration
	// AllocationTTL is the lifetime of connection data, at most
	// MaxAllocationTTL. Zero means DefaultAllocationTTL.
	AllocationTTL time.Duration
	// JoinCodeLength is the length of new join codes, 6 to 12. Zero means
	// DefaultJoinCodeLength.
	JoinCodeLength int
	// RequestsPerMinute limits each call per player. Zero means
	// DefaultRequestsPerMinute; negative turns the limit off.
	RequestsPerMinute int
	// JoinsPerMinutePerAddress limits joins per source address. Zero means
	// DefaultJoinsPerMinutePerAddress; negative turns the limit off.
	JoinsPerMinutePerAddress int
	// MaxBodyBytes bounds a request body. Zero means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxAllocationsPerKey bounds the live allocations (not released, not
	// expired) made with one relay API key. Zero means
	// DefaultMaxAllocationsPerKey; negative: no limit.
	MaxAllocationsPerKey int
	// MaxAllocationsPerAddress bounds the live allocations made from one
	// source address. Zero means DefaultMaxAllocationsPerAddress;
	// negative: no limit.
	MaxAllocationsPerAddress int
	// MaxRateLimitKeys bounds the keys of each limiter. Zero means
	// DefaultMaxRateLimitKeys.
	MaxRateLimitKeys int

	// Metrics observes every request (control's); nil: none.
	Metrics *httpapi.Metrics
	// RequestTimeout bounds the work of one request. Zero means 10 s.
	RequestTimeout time.Duration
	// Logger receives request failures; tokens and keys are never
	// logged. Nil means slog.Default().
	Logger *slog.Logger
	// Now returns the current time. Nil means time.Now.
	Now func() time.Time
	// Rand is the source of allocation ids, join codes and API keys. Nil
	// means crypto/rand.
	Rand io.Reader
}
