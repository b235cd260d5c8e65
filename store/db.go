package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
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
	// MaxIDLength is the longest id (room, session, node, ticket hash).
	MaxIDLength = 128
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
	// Now returns the current time (for Node.UpdatedAt and node
	// staleness). Nil means time.Now.
	Now func() time.Time
	// Logger receives rare events. Nil means slog.Default().
	Logger *slog.Logger
}

// DB is the set of buckets. Its methods are safe for concurrent use.
type DB struct {
	// immutable after Open
	cfg      Config
	log      *slog.Logger
	rooms    jetstream.KeyValue
	sessions jetstream.KeyValue
	tickets  jetstream.KeyValue
	nodes    jetstream.KeyValue
	config   jetstream.KeyValue

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
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if !validID(cfg.Prefix) {
		return nil, fmt.Errorf("store: prefix %q: %w", cfg.Prefix, ErrInvalidID)
	}
	db := &DB{cfg: cfg, log: cfg.Logger.With("component", "store")}
	buckets := []struct {
		kv          *jetstream.KeyValue
		name, descr string
		ttl         time.Duration
	}{
		{&db.rooms, "rooms", "switchboard rooms and seats", 0},
		{&db.sessions, "sessions", "switchboard login sessions", cfg.SessionTTL},
		{&db.tickets, "tickets", "switchboard join tickets", cfg.TicketTTL},
		{&db.nodes, "nodes", "switchboard game node registry", cfg.NodeTTL},
		{&db.config, "config", "switchboard shared configuration", 0},
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
		*b.kv = kv
	}
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

// encode marshals v and checks the size limit.
func (db *DB) encode(what, id string, v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("store: encode %s %s: %w", what, id, err)
	}
	if len(data) > db.cfg.MaxRecordBytes {
		return nil, fmt.Errorf("store: %s %s is %d bytes, limit %d: %w", what, id, len(data), db.cfg.MaxRecordBytes, ErrTooLarge)
	}
	return data, nil
}

// create stores v under id if the key is free.
func (db *DB) create(ctx context.Context, kv jetstream.KeyValue, what, id string, v any) error {
	if !validID(id) {
		return fmt.Errorf("store: create %s %q: %w", what, id, ErrInvalidID)
	}
	data, err := db.encode(what, id, v)
	if err != nil {
		return err
	}
	if _, err := kv.Create(ctx, id, data); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return fmt.Errorf("store: create %s %s: %w", what, id, ErrExists)
		}
		return fmt.Errorf("store: create %s %s: %w", what, id, err)
	}
	return nil
}

// put stores v under id unconditionally.
func (db *DB) put(ctx context.Context, kv jetstream.KeyValue, what, id string, v any) error {
	if !validID(id) {
		return fmt.Errorf("store: put %s %q: %w", what, id, ErrInvalidID)
	}
	data, err := db.encode(what, id, v)
	if err != nil {
		return err
	}
	if _, err := kv.Put(ctx, id, data); err != nil {
		return fmt.Errorf("store: put %s %s: %w", what, id, err)
	}
	return nil
}

// get reads and decodes the record id into v and returns its revision.
func get[T any](ctx context.Context, kv jetstream.KeyValue, what, id string) (*T, uint64, error) {
	if !validID(id) {
		return nil, 0, fmt.Errorf("store: get %s %q: %w", what, id, ErrNotFound)
	}
	e, err := kv.Get(ctx, id)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			return nil, 0, fmt.Errorf("store: get %s %s: %w", what, id, ErrNotFound)
		}
		return nil, 0, fmt.Errorf("store: get %s %s: %w", what, id, err)
	}
	v := new(T)
	if err := json.Unmarshal(e.Value(), v); err != nil {
		return nil, 0, fmt.Errorf("store: decode %s %s: %w", what, id, err)
	}
	return v, e.Revision(), nil
}

// update is the compare-and-set loop: read, apply fn to the fresh copy,
// write with the revision read, retry on a revision mismatch. fn's error
// is returned as is.
func update[T any](ctx context.Context, db *DB, kv jetstream.KeyValue, what, id string, fn func(*T) error) (*T, error) {
	for attempt := range db.cfg.MaxRetries {
		v, rev, err := get[T](ctx, kv, what, id)
		if err != nil {
			return nil, err
		}
		if err := fn(v); err != nil {
			return nil, err
		}
		data, err := db.encode(what, id, v)
		if err != nil {
			return nil, err
		}
		_, err = kv.Update(ctx, id, data, rev)
		if err == nil {
			return v, nil
		}
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) && !errors.Is(err, jetstream.ErrKeyExists) {
			return nil, fmt.Errorf("store: update %s %s: %w", what, id, err)
		}
		// Lost the race: back off a little, with jitter, and retry.
		if attempt > 0 {
			d := time.Duration(rand.Int64N(int64(attempt) * int64(time.Millisecond)))
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, fmt.Errorf("store: update %s %s: %w", what, id, ctx.Err())
			case <-t.C:
			}
		}
	}
	return nil, fmt.Errorf("store: update %s %s after %d attempts: %w", what, id, db.cfg.MaxRetries, ErrConflict)
}

// purge removes the record id; a missing record is not an error.
func purge(ctx context.Context, kv jetstream.KeyValue, what, id string) error {
	if !validID(id) {
		return nil
	}
	if err := kv.Purge(ctx, id); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("store: delete %s %s: %w", what, id, err)
	}
	return nil
}
