package backbone

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Defaults of [KVConfig].
const (
	// DefaultKVMaxRetries bounds the compare-and-set attempts of
	// [KV.Update].
	DefaultKVMaxRetries = 20
	// DefaultKVMaxValueBytes bounds the JSON of one value.
	DefaultKVMaxValueBytes = 64 << 10
	// DefaultKVMaxKeys bounds the keys [KV.Keys] returns.
	DefaultKVMaxKeys = 100_000
	// maxBackoff caps the pause between two compare-and-set attempts.
	maxBackoff = 50 * time.Millisecond
)

// JetStream API error codes of a compare-and-set that lost: 10071 (wrong
// last sequence) on one server; on a cluster the leader may answer 10164
// (the key's last sequence), which jetstream.ErrKeyExists does not match.
const (
	errCodeWrongLastSeq    jetstream.ErrorCode = 10071
	errCodeWrongLastSeqKey jetstream.ErrorCode = 10164
)

// Errors of [KV].
var (
	// ErrKeyNotFound is returned (wrapped) by Get, Update and Delete when
	// the key does not exist or was deleted.
	ErrKeyNotFound = errors.New("backbone: key not found")
	// ErrKeyExists is returned (wrapped) by Create when the key exists.
	ErrKeyExists = errors.New("backbone: key exists")
	// ErrConflict is returned (wrapped) by Update when the value kept
	// changing under it for KVConfig.MaxRetries attempts.
	ErrConflict = errors.New("backbone: too many concurrent updates")
	// ErrValueTooLarge is returned (wrapped) by every write whose JSON is
	// over KVConfig.MaxValueBytes.
	ErrValueTooLarge = errors.New("backbone: value too large")
	// ErrInvalidKey is returned (wrapped) for a key NATS cannot store.
	ErrInvalidKey = errors.New("backbone: invalid key")
	// ErrTooManyKeys is returned (wrapped) by Keys when more than
	// KVConfig.MaxKeys keys match.
	ErrTooManyKeys = errors.New("backbone: too many keys")
)

// KVConfig configures [NewKV]. Its zero value works.
type KVConfig struct {
	// Name names the values in errors ("room", "session"). Empty means
	// the bucket's name.
	Name string
	// MaxRetries bounds the compare-and-set attempts of Update. Zero
	// means DefaultKVMaxRetries.
	MaxRetries int
	// MaxValueBytes bounds the JSON of a value written. Zero means
	// DefaultKVMaxValueBytes.
	MaxValueBytes int
	// MaxKeys bounds the keys Keys returns. Zero means DefaultKVMaxKeys.
	MaxKeys int
}

// KV is a JetStream key-value bucket whose values are JSON of type T. Its
// methods are safe for concurrent use.
//
// A write that failed with a timeout may have been stored (the reply was
// lost, not necessarily the write): callers treat it as "maybe written",
// and Update's next read sees it if it was. Right after a write, a Get on
// a clustered bucket may be answered by a replica that has not stored it
// yet; use the revision the write returned.
type KV[T any] struct {
	kv  jetstream.KeyValue
	cfg KVConfig
}

// NewKV returns the typed view of bucket kv.
func NewKV[T any](kv jetstream.KeyValue, cfg KVConfig) *KV[T] {
	if cfg.Name == "" {
		cfg.Name = kv.Bucket()
	}
	if cfg.MaxRetries <= 0 {
		cfg.MaxRetries = DefaultKVMaxRetries
	}
	if cfg.MaxValueBytes <= 0 {
		cfg.MaxValueBytes = DefaultKVMaxValueBytes
	}
	if cfg.MaxKeys <= 0 {
		cfg.MaxKeys = DefaultKVMaxKeys
	}
	return &KV[T]{kv: kv, cfg: cfg}
}

// Bucket returns the bucket's name.
func (b *KV[T]) Bucket() string { return b.kv.Bucket() }

// Raw returns the untyped bucket.
func (b *KV[T]) Raw() jetstream.KeyValue { return b.kv }

// Get returns the value of key and its revision.
func (b *KV[T]) Get(ctx context.Context, key string) (*T, uint64, error) {
	e, err := b.kv.Get(ctx, key)
	if err != nil {
		return nil, 0, b.wrap("get", key, err)
	}
	v := new(T)
	if err := json.Unmarshal(e.Value(), v); err != nil {
		return nil, 0, fmt.Errorf("backbone: decode %s %s: %w", b.cfg.Name, key, err)
	}
	return v, e.Revision(), nil
}

// Create stores v under key if the key does not exist (or was deleted),
// and returns the revision written.
func (b *KV[T]) Create(ctx context.Context, key string, v *T) (uint64, error) {
	data, err := b.encode(key, v)
	if err != nil {
		return 0, err
	}
	rev, err := b.kv.Create(ctx, key, data)
	if err != nil {
		return 0, b.wrap("create", key, err)
	}
	return rev, nil
}

// Put stores v under key unconditionally and returns the revision
// written.
func (b *KV[T]) Put(ctx context.Context, key string, v *T) (uint64, error) {
	data, err := b.encode(key, v)
	if err != nil {
		return 0, err
	}
	rev, err := b.kv.Put(ctx, key, data)
	if err != nil {
		return 0, b.wrap("put", key, err)
	}
	return rev, nil
}

// UpdateAt stores v under key if its revision is still rev; otherwise the
// error wraps ErrConflict.
func (b *KV[T]) UpdateAt(ctx context.Context, key string, v *T, rev uint64) (uint64, error) {
	data, err := b.encode(key, v)
	if err != nil {
		return 0, err
	}
	nrev, err := b.kv.Update(ctx, key, data, rev)
	if err != nil {
		if lostRace(err) {
			return 0, fmt.Errorf("backbone: update %s %s: %w", b.cfg.Name, key, ErrConflict)
		}
		return 0, b.wrap("update", key, err)
	}
	return nrev, nil
}

// Update is the compare-and-set loop: it reads key, applies fn to the
// value read, and writes the result if nobody wrote key in between;
// otherwise it pauses a little (jittered, growing with the attempts) and
// starts again, up to KVConfig.MaxRetries attempts (then ErrConflict). fn
// may thus run several times and must have no effect besides changing
// the value; an error from fn aborts the update and is returned as is.
// Update returns the value written and its revision; a missing key is
// ErrKeyNotFound.
func (b *KV[T]) Update(ctx context.Context, key string, fn func(*T) error) (*T, uint64, error) {
	for attempt := range b.cfg.MaxRetries {
		v, rev, err := b.Get(ctx, key)
		if err != nil {
			return nil, 0, err
		}
		if err := fn(v); err != nil {
			return nil, 0, err
		}
		nrev, err := b.UpdateAt(ctx, key, v, rev)
		if err == nil {
			return v, nrev, nil
		}
		if !errors.Is(err, ErrConflict) {
			return nil, 0, err
		}
		if err := Backoff(ctx, attempt); err != nil {
			return nil, 0, fmt.Errorf("backbone: update %s %s: %w", b.cfg.Name, key, err)
		}
	}
	return nil, 0, fmt.Errorf("backbone: update %s %s after %d attempts: %w", b.cfg.Name, key, b.cfg.MaxRetries, ErrConflict)
}

// Delete marks key deleted; a missing key is not an error. The bucket's
// history keeps a delete marker until it ages out.
func (b *KV[T]) Delete(ctx context.Context, key string) error {
	if err := b.kv.Delete(ctx, key); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return b.wrap("delete", key, err)
	}
	return nil
}

// Purge removes key and its history; a missing key is not an error.
func (b *KV[T]) Purge(ctx context.Context, key string) error {
	if err := b.kv.Purge(ctx, key); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return b.wrap("purge", key, err)
	}
	return nil
}

// Keys returns the keys matching the subject filters (all keys without
// one), in no particular order, at most KVConfig.MaxKeys (then the
// error wraps ErrTooManyKeys, with no keys).
func (b *KV[T]) Keys(ctx context.Context, filters ...string) ([]string, error) {
	var (
		lister jetstream.KeyLister
		err    error
	)
	if len(filters) == 0 {
		lister, err = b.kv.ListKeys(ctx)
	} else {
		lister, err = b.kv.ListKeysFiltered(ctx, filters...)
	}
	if err != nil {
		return nil, fmt.Errorf("backbone: list %s keys: %w", b.cfg.Name, err)
	}
	defer func() { _ = lister.Stop() }() // already stopped once drained
	var keys []string
	for k := range lister.Keys() {
		if len(keys) == b.cfg.MaxKeys {
			return nil, fmt.Errorf("backbone: list %s keys: more than %d: %w", b.cfg.Name, b.cfg.MaxKeys, ErrTooManyKeys)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// AnyKey reports whether a key matches the subject filters, reading at
// most one key.
func (b *KV[T]) AnyKey(ctx context.Context, filters ...string) (bool, error) {
	lister, err := b.kv.ListKeysFiltered(ctx, filters...)
	if err != nil {
		return false, fmt.Errorf("backbone: list %s keys: %w", b.cfg.Name, err)
	}
	defer func() { _ = lister.Stop() }()
	for range lister.Keys() {
		return true, nil
	}
	return false, nil
}

// Backoff pauses before compare-and-set attempt attempt+1: nothing after
// the first conflict, then a random time up to attempt ms, capped at 50
// ms, so that writers that collided spread out. It returns ctx's error if
// ctx ends first.
func Backoff(ctx context.Context, attempt int) error {
	if attempt == 0 {
		return ctx.Err()
	}
	d := time.Duration(rand.Int64N(int64(min(time.Duration(attempt)*time.Millisecond, maxBackoff))))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (b *KV[T]) encode(key string, v *T) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("backbone: encode %s %s: %w", b.cfg.Name, key, err)
	}
	if len(data) > b.cfg.MaxValueBytes {
		return nil, fmt.Errorf("backbone: %s %s is %d bytes, limit %d: %w", b.cfg.Name, key, len(data), b.cfg.MaxValueBytes, ErrValueTooLarge)
	}
	return data, nil
}

// wrap maps the jetstream errors to backbone's.
func (b *KV[T]) wrap(op, key string, err error) error {
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
		return fmt.Errorf("backbone: %s %s %s: %w", op, b.cfg.Name, key, ErrKeyNotFound)
	case errors.Is(err, jetstream.ErrKeyExists):
		return fmt.Errorf("backbone: %s %s %s: %w", op, b.cfg.Name, key, ErrKeyExists)
	case errors.Is(err, jetstream.ErrInvalidKey):
		return fmt.Errorf("backbone: %s %s %q: %w", op, b.cfg.Name, key, ErrInvalidKey)
	}
	return fmt.Errorf("backbone: %s %s %s: %w", op, b.cfg.Name, key, err)
}

// lostRace reports whether err is a compare-and-set that lost to another
// writer, in any of the ways a server or cluster says it.
func lostRace(err error) bool {
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return true
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode == errCodeWrongLastSeq || apiErr.ErrorCode == errCodeWrongLastSeqKey
	}
	return false
}
