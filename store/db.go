package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/switchboardgg/switchboard/backbone"
)

// Defaults of [Config].
const (
	// DefaultPrefix names the buckets: sb_rooms, sb_sessions, sb_tickets,
	// sb_nodes, sb_config.
	DefaultPrefix = "sb"
	// DefaultSessionTTL is how long a login session lives after its last
	// write.
	DefaultSessionTTL = 30 * 24 * time.Hour
	// DefaultSessionMaxAge is how long a login session lasts at most,
	// however often it is refreshed.
	DefaultSessionMaxAge = 90 * 24 * time.Hour
	// DefaultMaxSessionsPerUser bounds the login sessions of one
	// username; a login beyond it ends the user's oldest session.
	DefaultMaxSessionsPerUser = 10
	// DefaultTicketTTL is how long a join ticket record lives.
	DefaultTicketTTL = 24 * time.Hour
	// DefaultNodeTTL is how long a node entry lives after its last
	// heartbeat; nodes put every 5 s.
	DefaultNodeTTL = 15 * time.Second
	// DefaultMaxRetries bounds the compare-and-set attempts of an update.
	DefaultMaxRetries = 20
	// DefaultMaxRecordBytes bounds the JSON of one record.
	DefaultMaxRecordBytes = 64 << 10
	// DefaultListLimit is the page size of ListRooms when
	// ListOptions.Limit is 0.
	DefaultListLimit = 50
	// MaxListLimit caps ListOptions.Limit.
	MaxListLimit = 500
	// MaxSessionsPerUserLimit caps Config.MaxSessionsPerUser.
	MaxSessionsPerUserLimit = 500
	// MaxIDLength is the longest id (room, session, node, ticket hash).
	MaxIDLength = 128
	// DefaultNodeCacheTTL is how long a registry entry read is used
	// without reading it again.
	DefaultNodeCacheTTL = time.Second
	// DefaultUpdateTimeout bounds one combined update of a room record.
	DefaultUpdateTimeout = 5 * time.Second
	// DefaultRelayTTL is how long relay allocation and join code records
	// live after their last write (see store/relay.go).
	DefaultRelayTTL = 12 * time.Hour
)

// Config configures [Open]. Its zero value works.
type Config struct {
	// Prefix is the prefix of the bucket names ("<prefix>_rooms", ...).
	// Empty means DefaultPrefix.
	Prefix string
	// Replicas is the number of replicas of each bucket on a NATS
	// cluster. Zero means 1.
	Replicas int
	// SessionTTL is the lifetime of a session record after its last
	// write. Zero means DefaultSessionTTL.
	SessionTTL time.Duration
	// SessionMaxAge is the absolute lifetime of a login session, which
	// refresh does not extend. Zero means DefaultSessionMaxAge.
	SessionMaxAge time.Duration
	// MaxSessionsPerUser bounds the login sessions of one username: a
	// login beyond it ends the oldest. Zero means
	// DefaultMaxSessionsPerUser; at most MaxSessionsPerUserLimit.
	MaxSessionsPerUser int
	// TicketTTL is the lifetime of a join ticket record. Zero means
	// DefaultTicketTTL.
	TicketTTL time.Duration
	// NodeTTL is the lifetime of a node entry after its last heartbeat;
	// ListNodes and GetNode also ignore entries whose UpdatedAt is older.
	// Zero means DefaultNodeTTL.
	NodeTTL time.Duration
	// MaxRetries bounds the compare-and-set attempts of an update before
	// ErrConflict. Zero means DefaultMaxRetries.
	MaxRetries int
	// MaxRecordBytes is the largest JSON record accepted on write. Zero
	// means DefaultMaxRecordBytes.
	MaxRecordBytes int
	// NodeCacheTTL is how long a registry entry read is used without
	// reading it again (a node's draining flag reaches control that much
	// later). Zero means DefaultNodeCacheTTL; negative: never cached.
	NodeCacheTTL time.Duration
	// P2PNetworkTTL is the lifetime of a P2P network record after its
	// last write (see p2p.go). Zero means DefaultP2PNetworkTTL.
	P2PNetworkTTL time.Duration
	// UpdateTimeout bounds one combined write of a room's updates
	// ([DB.UpdateRoom]), which runs for every caller that joined it,
	// whatever their own contexts. Zero means DefaultUpdateTimeout.
	UpdateTimeout time.Duration
	// RelayTTL is the lifetime of relay allocation and join code records
	// after their last write; keep it at least relayapi.Config.AllocationTTL.
	// Zero means DefaultRelayTTL.
	RelayTTL time.Duration
	// Now returns the current time (for Node.UpdatedAt and node
	// staleness). Nil means time.Now.
	Now func() time.Time
	// Logger receives rare events. Nil means slog.Default().
	Logger *slog.Logger
}

// DB is the set of buckets. Its methods are safe for concurrent use.
type DB struct {
	// immutable after Open
	cfg       Config
	log       *slog.Logger
	rooms     *backbone.KV[Room]
	sessions  *backbone.KV[Session]
	users     *backbone.KV[UserSessions]
	tickets   *backbone.KV[JoinTicket]
	nodes     *backbone.KV[Node]
	p2p       p2pBuckets
	config    jetstream.KeyValue
	relay     relayBuckets // store/relay.go
	roomW     *combiner    // the room updates of this process, combined per room
	nodeCache nodeCache    // registry entries read recently

	recentSessions recent[Session] // sessions read or written lately
	keysListed     atomic.Int64    // room keys listed by ListRooms (for tests)

	mu         sync.Mutex
	signingKey []byte // guarded by mu; nil until first read
}

// Open creates the buckets that do not exist yet (idempotently, so that
// processes may race) and returns the DB. It updates the TTL of existing
// buckets to cfg's.
func Open(ctx context.Context, conn *backbone.Conn, cfg Config) (*DB, error) {
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if cfg.Replicas <= 0 {
		cfg.Replicas = 1
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.SessionMaxAge <= 0 {
		cfg.SessionMaxAge = DefaultSessionMaxAge
	}
	if cfg.MaxSessionsPerUser <= 0 {
		cfg.MaxSessionsPerUser = DefaultMaxSessionsPerUser
	}
	cfg.MaxSessionsPerUser = min(cfg.MaxSessionsPerUser, MaxSessionsPerUserLimit)
	if cfg.TicketTTL <= 0 {
		cfg.TicketTTL = DefaultTicketTTL
	}
	if cfg.NodeTTL <= 0 {
		cfg.NodeTTL = DefaultNodeTTL
	}
	if cfg.MaxRetries <= 0 {
		cfg.MaxRetries = DefaultMaxRetries
	}
	if cfg.MaxRecordBytes <= 0 {
		cfg.MaxRecordBytes = DefaultMaxRecordBytes
	}
	if cfg.P2PNetworkTTL <= 0 {
		cfg.P2PNetworkTTL = DefaultP2PNetworkTTL
	}
	if cfg.UpdateTimeout <= 0 {
		cfg.UpdateTimeout = DefaultUpdateTimeout
	}
	if cfg.RelayTTL <= 0 {
		cfg.RelayTTL = DefaultRelayTTL
	}
	if cfg.NodeCacheTTL == 0 {
		cfg.NodeCacheTTL = DefaultNodeCacheTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if !validID(cfg.Prefix) {
		return nil, fmt.Errorf("store: prefix %q: %w", cfg.Prefix, ErrInvalidID)
	}
	db := &DB{cfg: cfg, log: cfg.Logger.With("subsystem", "store"), nodeCache: nodeCache{ttl: cfg.NodeCacheTTL}}
	raw := make(map[string]jetstream.KeyValue)
	buckets := []struct {
		name, descr string
		ttl         time.Duration
	}{
		{"rooms", "switchboard rooms and seats", 0},
		{"sessions", "switchboard login sessions", cfg.SessionTTL},
		{"users", "switchboard login sessions by user", cfg.SessionTTL},
		{"tickets", "switchboard join tickets", cfg.TicketTTL},
		{"nodes", "switchboard node registry", cfg.NodeTTL},
		{"config", "switchboard shared configuration", 0},
		{"relayallocs", "switchboard relay allocations", cfg.RelayTTL},
		{"relaycodes", "switchboard relay join codes", cfg.RelayTTL},
		{"relaykeys", "switchboard relay API keys", 0},
		{"relayquota", "switchboard relay quota marks", cfg.RelayTTL},
		{"p2pnets", "switchboard p2p networks", cfg.P2PNetworkTTL},
		{"p2pcodes", "switchboard p2p join codes", cfg.P2PNetworkTTL},
	}
	for _, b := range buckets {
		kv, err := conn.KeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:      cfg.Prefix + "_" + b.name,
			Description: b.descr,
			History:     1,
			TTL:         b.ttl,
			Storage:     jetstream.FileStorage,
			Replicas:    cfg.Replicas,
		})
		if err != nil {
			return nil, fmt.Errorf("store: open: %w", err)
		}
		raw[b.name] = kv
	}
	kvc := func(name string) backbone.KVConfig {
		return backbone.KVConfig{Name: name, MaxRetries: cfg.MaxRetries, MaxValueBytes: cfg.MaxRecordBytes}
	}
	db.rooms = backbone.NewKV[Room](raw["rooms"], kvc("room"))
	db.sessions = backbone.NewKV[Session](raw["sessions"], kvc("session"))
	db.users = backbone.NewKV[UserSessions](raw["users"], kvc("user"))
	db.tickets = backbone.NewKV[JoinTicket](raw["tickets"], kvc("ticket"))
	db.nodes = backbone.NewKV[Node](raw["nodes"], kvc("node"))
	db.config = raw["config"]
	db.relay = relayBuckets{
		allocs: backbone.NewKV[RelayAllocation](raw["relayallocs"], kvc("relay allocation")),
		codes:  backbone.NewKV[RelayJoinCode](raw["relaycodes"], kvc("relay join code")),
		keys:   backbone.NewKV[RelayAPIKey](raw["relaykeys"], kvc("relay API key")),
		quota:  backbone.NewKV[RelayQuotaMark](raw["relayquota"], kvc("relay quota mark")),
	}
	db.p2p = p2pBuckets{
		nets:  backbone.NewKV[P2PNetwork](raw["p2pnets"], kvc("p2p network")),
		codes: backbone.NewKV[P2PJoinCode](raw["p2pcodes"], kvc("p2p join code")),
	}
	db.roomW = newCombiner(db)
	return db, nil
}

// validID reports whether id is usable as a KV key and a subject token.
func validID(id string) bool {
	if id == "" || len(id) > MaxIDLength {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// storeErr maps a backbone error to store's.
func storeErr(op, what, id string, err error) error {
	var sentinel error
	switch {
	case errors.Is(err, backbone.ErrKeyNotFound):
		sentinel = ErrNotFound
	case errors.Is(err, backbone.ErrKeyExists):
		sentinel = ErrExists
	case errors.Is(err, backbone.ErrConflict):
		sentinel = ErrConflict
	case errors.Is(err, backbone.ErrValueTooLarge):
		sentinel = ErrTooLarge
	case errors.Is(err, backbone.ErrInvalidKey):
		sentinel = ErrInvalidID
	default:
		return fmt.Errorf("store: %s %s %s: %w", op, what, id, err)
	}
	return fmt.Errorf("store: %s %s %s: %w: %w", op, what, id, sentinel, err)
}

// secretIDs are the kinds of record whose id is a credential: a relay
// join code lets anyone who holds it join the host. Errors reach logs, so
// hideID takes such an id out of their text.
var secretIDs = map[string]bool{"relay join code": true}

// hiddenIDError is err with every mention of a secret id replaced.
type hiddenIDError struct {
	err error
	id  string
}

func (e hiddenIDError) Error() string { return strings.ReplaceAll(e.err.Error(), e.id, "[hidden]") }
func (e hiddenIDError) Unwrap() error { return e.err }

// hideID returns err, without id in its text when what is a secret kind.
func hideID(what, id string, err error) error {
	if err == nil || id == "" || !secretIDs[what] {
		return err
	}
	return hiddenIDError{err: err, id: id}
}

// create stores v under id if the key is free.
func create[T any](ctx context.Context, kv *backbone.KV[T], what, id string, v *T) error {
	if !validID(id) {
		return hideID(what, id, fmt.Errorf("store: create %s %q: %w", what, id, ErrInvalidID))
	}
	if _, err := kv.Create(ctx, id, v); err != nil {
		return hideID(what, id, storeErr("create", what, id, err))
	}
	return nil
}

// get reads the record id and returns its revision.
func get[T any](ctx context.Context, kv *backbone.KV[T], what, id string) (*T, uint64, error) {
	if !validID(id) {
		return nil, 0, hideID(what, id, fmt.Errorf("store: get %s %q: %w", what, id, ErrNotFound))
	}
	v, rev, err := kv.Get(ctx, id)
	if err != nil {
		return nil, 0, hideID(what, id, storeErr("get", what, id, err))
	}
	return v, rev, nil
}

// fnError carries the error of an update's function through
// backbone.KV.Update, so that it is returned as is.
type fnError struct{ err error }

func (e fnError) Error() string { return e.err.Error() }

// update is backbone.KV.Update with store's errors; fn's error is
// returned as is.
func update[T any](ctx context.Context, kv *backbone.KV[T], what, id string, fn func(*T) error) (*T, error) {
	if !validID(id) {
		return nil, hideID(what, id, fmt.Errorf("store: update %s %q: %w", what, id, ErrNotFound))
	}
	v, _, err := kv.Update(ctx, id, func(v *T) error {
		if err := fn(v); err != nil {
			return fnError{err}
		}
		return nil
	})
	var fe fnError
	if errors.As(err, &fe) {
		return nil, fe.err
	}
	if err != nil {
		return nil, hideID(what, id, storeErr("update", what, id, err))
	}
	return v, nil
}

// purge removes the record id; a missing record is not an error.
func purge[T any](ctx context.Context, kv *backbone.KV[T], what, id string) error {
	if !validID(id) {
		return nil
	}
	if err := kv.Purge(ctx, id); err != nil {
		return hideID(what, id, storeErr("delete", what, id, err))
	}
	return nil
}
