package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/switchboardgg/switchboard/backbone"
)

// Relay records: the allocations control made, the join codes of hosts,
// and the per-project relay API keys. A relay node keeps its own live
// state; these records are what control needs to answer joincode and join,
// and they die when the node reports a release ([DB.ReleaseRelayAllocation])
// or, at the latest, Config.RelayTTL after their last write.

type relayBuckets struct {
	allocs *backbone.KV[RelayAllocation]
	codes  *backbone.KV[RelayJoinCode]
	keys   *backbone.KV[RelayAPIKey]
	quota  *backbone.KV[RelayQuotaMark]
}

// RelayAllocation is an allocation made by control, keyed by its id in
// hex (32 characters).
type RelayAllocation struct {
	AllocationID string `json:"allocation_id"` // 32 hex, RFC 4122 byte order
	Owner        string `json:"owner"`         // the principal that allocated it
	NodeID       string `json:"node_id"`
	BootEpoch    uint64 `json:"boot_epoch"`
	Region       string `json:"region"`
	// HostAllocationID is a joiner's host (32 hex); empty for a host.
	HostAllocationID string `json:"host_allocation_id,omitempty"`
	// JoinCode is a host's join code once asked for.
	JoinCode string `json:"join_code,omitempty"`
	// ConnectionData is the sealed blob: a joiner gets its host's.
	ConnectionData []byte    `json:"connection_data"`
	MaxConnections int       `json:"max_connections"`
	CreatedAt      time.Time `json:"created_at"`
	ExpiresAt      time.Time `json:"expires_at"`
	// QuotaKeys are its quota marks ([DB.AddRelayQuota]), purged with it.
	QuotaKeys []string `json:"quota_keys,omitempty"`
	// IdleTimeoutSeconds is the idle timeout its blob carries; 0: the
	// relay node's.
	IdleTimeoutSeconds int `json:"idle_timeout_seconds,omitempty"`
	// HostMigration: a host that opted in to host migration; its join
	// code outlives it by MigrationGrace (store/relaymigrate.go).
	HostMigration  bool          `json:"host_migration,omitempty"`
	MigrationGrace time.Duration `json:"migration_grace,omitempty"`
}

// RelayJoinCode is a live join code, keyed by the code in upper case.
type RelayJoinCode struct {
	Code             string    `json:"code"`
	HostAllocationID string    `json:"host_allocation_id"` // 32 hex
	NodeID           string    `json:"node_id"`
	BootEpoch        uint64    `json:"boot_epoch"`
	Region           string    `json:"region"`
	ExpiresAt        time.Time `json:"expires_at"` // the host's blob's expiry
	CreatedAt        time.Time `json:"created_at"`
	// Owner is the principal that created the code (its host's owner);
	// only it may revoke the code.
	Owner string `json:"owner,omitempty"`
	// Migration, HeldUntil and Joins serve host migration
	// (store/relaymigrate.go): Migration is the host's opt-in; a non-zero
	// HeldUntil means the host is gone and the code is held for a claim
	// until then; Joins are the allocations that joined with the code
	// while its host was alive, the newest MaxRelayJoinsKept.
	Migration bool        `json:"migration,omitempty"`
	HeldUntil time.Time   `json:"held_until,omitzero"`
	Joins     []RelayJoin `json:"joins,omitempty"`
}

// RelayAPIKey is a per-project relay API key. Only the SHA-256 of the
// secret is kept; KeyID is the first 16 hex digits of it.
type RelayAPIKey struct {
	KeyID      string    `json:"key_id"`
	Name       string    `json:"name"`
	Project    string    `json:"project"`
	SecretHash string    `json:"secret_hash"` // hex SHA-256 of the secret
	CreatedAt  time.Time `json:"created_at"`
}

// MaxRelayKeys bounds the relay API keys of a deployment.
const MaxRelayKeys = 1000

// CreateRelayAllocation stores a new allocation. It returns an error
// wrapping ErrExists if the id is taken, ErrInvalidID or ErrTooLarge.
func (db *DB) CreateRelayAllocation(ctx context.Context, a *RelayAllocation) error {
	return create(ctx, db.relay.allocs, "relay allocation", a.AllocationID, a)
}

// GetRelayAllocation returns the allocation id (32 hex), or an error
// wrapping ErrNotFound when it was released or never made.
func (db *DB) GetRelayAllocation(ctx context.Context, id string) (*RelayAllocation, error) {
	a, _, err := get(ctx, db.relay.allocs, "relay allocation", id)
	return a, err
}

// RelayJoinCode returns the join code of host allocation id, creating one
// with newCode if it has none: asking again gives the same code. newCode is
// called again when its code is taken (at most Config.MaxRetries times).
// check, if not nil, is called with the allocation first, and its error is
// returned as is (control checks the owner there). It returns an error
// wrapping ErrNotFound when the allocation was released.
func (db *DB) RelayJoinCode(ctx context.Context, id string, newCode func() string, check func(*RelayAllocation) error) (string, error) {
	a, err := db.GetRelayAllocation(ctx, id)
	if err != nil {
		return "", err
	}
	if check != nil {
		if err := check(a); err != nil {
			return "", err
		}
	}
	if a.HostAllocationID != "" {
		return "", fmt.Errorf("store: join code of %s: a joiner's allocation: %w", id, ErrNotFound)
	}
	if a.JoinCode != "" {
		return a.JoinCode, nil
	}
	var code string
	for attempt := 0; ; attempt++ {
		if attempt >= db.cfg.MaxRetries {
			return "", fmt.Errorf("store: join code of %s: every code tried is taken: %w", id, ErrConflict)
		}
		code = newCode()
		err := create(ctx, db.relay.codes, "relay join code", code, &RelayJoinCode{
			Code: code, HostAllocationID: a.AllocationID, NodeID: a.NodeID, BootEpoch: a.BootEpoch,
			Region: a.Region, ExpiresAt: a.ExpiresAt, CreatedAt: db.cfg.Now().UTC(),
			Owner: a.Owner, Migration: a.HostMigration,
		})
		if err == nil {
			break
		}
		if !errors.Is(err, ErrExists) {
			return "", err
		}
	}
	var got string
	_, err = update(ctx, db.relay.allocs, "relay allocation", id, func(a *RelayAllocation) error {
		got = a.JoinCode
		if got == "" {
			a.JoinCode = code
		}
		return nil
	})
	if err != nil || got != "" {
		// Released meanwhile, or another request set a code first.
		_ = purge(ctx, db.relay.codes, "relay join code", code)
		if err != nil {
			return "", err
		}
		return got, nil
	}
	return code, nil
}

// GetRelayJoinCode returns the live record of code (upper case), or an
// error wrapping ErrNotFound. Whether its node still runs is the caller's
// check (the registry).
func (db *DB) GetRelayJoinCode(ctx context.Context, code string) (*RelayJoinCode, error) {
	c, _, err := get(ctx, db.relay.codes, "relay join code", code)
	return c, err
}

// DeleteRelayJoinCode removes code; a missing code is not an error.
func (db *DB) DeleteRelayJoinCode(ctx context.Context, code string) error {
	return purge(ctx, db.relay.codes, "relay join code", code)
}

// ReleaseRelayAllocation forgets the allocation id (32 hex) and kills its
// join code, as the relay node reports a release; the code of a host that
// opted in to host migration is held instead ([DB.HoldRelayJoinCode]).
// Releasing a missing allocation is not an error.
func (db *DB) ReleaseRelayAllocation(ctx context.Context, id string) error {
	a, err := db.GetRelayAllocation(ctx, id)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	// A held code is held before its host's record goes (a join that
	// finds the record gone must find the code held, or it deletes it);
	// a dying code goes after (a join refused for a dead code finds the
	// record gone).
	held := a.JoinCode != "" && a.migrates()
	if held {
		if err := db.holdCode(ctx, a); err != nil {
			return err
		}
	}
	if err := db.DropRelayQuota(ctx, a.QuotaKeys); err != nil {
		return err
	}
	if err := purge(ctx, db.relay.allocs, "relay allocation", id); err != nil {
		return err
	}
	if a.JoinCode != "" && !held {
		return db.killCodeOf(ctx, a.JoinCode, a.AllocationID)
	}
	return nil
}

// CreateRelayAPIKey stores k under k.KeyID. It returns an error wrapping
// ErrExists if the id is taken, or ErrConflict when MaxRelayKeys keys
// exist.
func (db *DB) CreateRelayAPIKey(ctx context.Context, k *RelayAPIKey) error {
	keys, err := db.relay.keys.Keys(ctx)
	if err != nil {
		return fmt.Errorf("store: create relay API key: %w", err)
	}
	if len(keys) >= MaxRelayKeys {
		return fmt.Errorf("store: create relay API key: %d keys exist: %w", len(keys), ErrConflict)
	}
	return create(ctx, db.relay.keys, "relay API key", k.KeyID, k)
}

// GetRelayAPIKey returns key id, or an error wrapping ErrNotFound.
func (db *DB) GetRelayAPIKey(ctx context.Context, id string) (*RelayAPIKey, error) {
	k, _, err := get(ctx, db.relay.keys, "relay API key", id)
	return k, err
}

// ListRelayAPIKeys returns every relay API key, sorted by project, then
// name, then id.
func (db *DB) ListRelayAPIKeys(ctx context.Context) ([]*RelayAPIKey, error) {
	ids, err := db.relay.keys.Keys(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: list relay API keys: %w", err)
	}
	keys := make([]*RelayAPIKey, 0, len(ids))
	for _, id := range ids {
		k, err := db.GetRelayAPIKey(ctx, id)
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b *RelayAPIKey) int {
		if c := strings.Compare(a.Project, b.Project); c != 0 {
			return c
		}
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.KeyID, b.KeyID)
	})
	return keys, nil
}

// DeleteRelayAPIKey revokes key id. It returns an error wrapping
// ErrNotFound when there is no such key.
func (db *DB) DeleteRelayAPIKey(ctx context.Context, id string) error {
	if _, err := db.GetRelayAPIKey(ctx, id); err != nil {
		return err
	}
	return purge(ctx, db.relay.keys, "relay API key", id)
}

// CountRelayRecords returns the number of relay allocation records and of
// join codes in the store, listing their keys (at most
// backbone.DefaultKVMaxKeys of each).
func (db *DB) CountRelayRecords(ctx context.Context) (allocations, codes int, err error) {
	a, err := db.relay.allocs.Keys(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("store: count relay allocations: %w", err)
	}
	c, err := db.relay.codes.Keys(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("store: count relay join codes: %w", err)
	}
	return len(a), len(c), nil
}
