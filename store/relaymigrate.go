package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Host migration and join code revocation (issue 9 item 5).
//
// A host that opted in (RelayAllocation.HostMigration) does not take its
// join code with it: when its release is reported, the code is held for
// its grace period (RelayJoinCode.HeldUntil), and a principal that joined
// with the code while the host lived may claim it for a new host
// allocation of its own ([DB.ClaimRelayJoinCode]); the first claim wins.

// MaxRelayJoinsKept bounds the joins a join code remembers for host
// migration: the newest are kept.
const MaxRelayJoinsKept = 128

// RelayJoin is an allocation that joined with a code.
type RelayJoin struct {
	AllocationID string `json:"allocation_id"` // 32 hex
	Owner        string `json:"owner"`         // the principal that joined
}

// Errors of host migration and revocation, wrapped with context.
var (
	// ErrForbidden: the caller is not the code's creator (revoke), or did
	// not join with the code (claim).
	ErrForbidden = errors.New("store: not allowed")
	// ErrNotHeld: a claim of a code whose host is alive, or whose death is
	// not recorded yet.
	ErrNotHeld = errors.New("store: join code not held for migration")
	// ErrTaken: a claim of a code another principal claimed first.
	ErrTaken = errors.New("store: join code taken over by another allocation")
)

// migrates reports whether a is a host that opted in to migration.
func (a *RelayAllocation) migrates() bool {
	return a.HostMigration && a.MigrationGrace > 0 && a.HostAllocationID == ""
}

// holdCode holds host a's join code until now + a.MigrationGrace, as a
// is released.
func (db *DB) holdCode(ctx context.Context, a *RelayAllocation) error {
	until := db.cfg.Now().UTC().Add(a.MigrationGrace)
	_, err := update(ctx, db.relay.codes, "relay join code", a.JoinCode, func(c *RelayJoinCode) error {
		if c.HostAllocationID != a.AllocationID {
			return errNotThisHost // claimed away meanwhile: not a's any more
		}
		c.HeldUntil = until
		return nil
	})
	if isNotFound(err) || errors.Is(err, errNotThisHost) {
		return nil
	}
	return err
}

var errNotThisHost = errors.New("store: join code of another host")

// killCodeOf purges code if host still holds it.
func (db *DB) killCodeOf(ctx context.Context, code, host string) error {
	c, err := db.GetRelayJoinCode(ctx, code)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if c.HostAllocationID != host {
		return nil
	}
	return purge(ctx, db.relay.codes, "relay join code", code)
}

// RecordRelayJoin remembers that allocation id (32 hex) of owner joined
// with code, for a later claim. Only codes of hosts that opted in to
// migration remember joins; a missing code is not an error.
func (db *DB) RecordRelayJoin(ctx context.Context, code, id, owner string) error {
	_, err := update(ctx, db.relay.codes, "relay join code", code, func(c *RelayJoinCode) error {
		if !c.Migration {
			return errNotThisHost
		}
		c.Joins = append(c.Joins, RelayJoin{AllocationID: id, Owner: owner})
		if n := len(c.Joins) - MaxRelayJoinsKept; n > 0 {
			c.Joins = slices.Delete(c.Joins, 0, n)
		}
		return nil
	})
	if isNotFound(err) || errors.Is(err, errNotThisHost) {
		return nil
	}
	return err
}

// ClaimRelayJoinCode hands code, held since its host died, to host
// allocation a (a new allocation of owner, with no join code): the code's
// Joins must hold prev with owner. It returns an error wrapping
// ErrNotFound (no such code, its host did not opt in to migration, or
// its grace period is over), ErrTaken
// (claimed by another first), ErrNotHeld (its host is alive, or its death
// not yet recorded: retry) or ErrForbidden (prev did not join with it, or
// not as owner). Asking again for the same a succeeds.
func (db *DB) ClaimRelayJoinCode(ctx context.Context, code string, a *RelayAllocation, prev, owner string, now time.Time) error {
	joined := func(c *RelayJoinCode) bool {
		return slices.ContainsFunc(c.Joins, func(j RelayJoin) bool { return j.AllocationID == prev && j.Owner == owner })
	}
	_, err := update(ctx, db.relay.codes, "relay join code", code, func(c *RelayJoinCode) error {
		switch {
		case c.HostAllocationID == a.AllocationID:
			return nil // a retry of a claim that won
		case !c.Migration && c.HeldUntil.IsZero():
			// Its host did not opt in: the code dies with it.
			return fmt.Errorf("store: claim join code: its host did not opt in to migration: %w", ErrNotFound)
		case !c.HeldUntil.IsZero() && !now.Before(c.HeldUntil):
			return fmt.Errorf("store: claim join code: grace period over: %w", ErrNotFound)
		case c.HeldUntil.IsZero() && joined(c):
			return fmt.Errorf("store: claim join code: %w", ErrNotHeld)
		case c.HeldUntil.IsZero():
			// Joins were cleared by the claim that won (or prev never
			// joined): a claim of a live code is lost either way.
			return fmt.Errorf("store: claim join code: %w", ErrTaken)
		case !joined(c):
			return fmt.Errorf("store: claim join code: %w", ErrForbidden)
		}
		c.HostAllocationID, c.NodeID, c.BootEpoch = a.AllocationID, a.NodeID, a.BootEpoch
		c.Region, c.ExpiresAt, c.Owner = a.Region, a.ExpiresAt, owner
		c.Migration, c.HeldUntil, c.Joins = a.HostMigration, time.Time{}, nil
		return nil
	})
	if err != nil {
		return err
	}
	_, err = update(ctx, db.relay.allocs, "relay allocation", a.AllocationID, func(r *RelayAllocation) error {
		r.JoinCode = code
		return nil
	})
	return err
}

// RevokeRelayJoinCode kills code at the request of owner, which must be
// the principal that created it (or claimed it). It returns an error
// wrapping ErrNotFound or ErrForbidden. The host keeps running; asking
// for its join code again gives a new one.
func (db *DB) RevokeRelayJoinCode(ctx context.Context, code, owner string) error {
	c, err := db.GetRelayJoinCode(ctx, code)
	if err != nil {
		return err
	}
	if c.Owner == "" || c.Owner != owner {
		return fmt.Errorf("store: revoke join code: %w", ErrForbidden)
	}
	if err := purge(ctx, db.relay.codes, "relay join code", code); err != nil {
		return err
	}
	_, err = update(ctx, db.relay.allocs, "relay allocation", c.HostAllocationID, func(a *RelayAllocation) error {
		if a.JoinCode == code {
			a.JoinCode = ""
		}
		return nil
	})
	if isNotFound(err) {
		return nil
	}
	return err
}

// DeleteStaleRelayJoinCode removes code if it is still as the caller read
// it: naming host, and held until heldUntil (zero: not held). A code that
// changed since (held by its host's release, claimed by a new host) is
// kept. A missing code is not an error.
func (db *DB) DeleteStaleRelayJoinCode(ctx context.Context, code, host string, heldUntil time.Time) error {
	c, rev, err := get(ctx, db.relay.codes, "relay join code", code)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if c.HostAllocationID != host || !c.HeldUntil.Equal(heldUntil) {
		return nil
	}
	err = db.relay.codes.Raw().Purge(ctx, code, jetstream.LastRevision(rev))
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
		return nil // written since: not stale
	}
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) && !errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("store: delete relay join code: %w", err)
	}
	return nil
}
