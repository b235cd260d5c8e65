package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Relay quotas: each allocation control makes leaves one mark per quota
// scope it counts against (an API key, a source address), keyed
// "<scope hash>.<expiry unix>.<allocation id>", so that counting a
// scope's live allocations lists the keys of one subject filter and
// reads no record. A release ([DB.ReleaseRelayAllocation]) purges the
// allocation's marks; an allocation never bound stops counting at its
// expiry.

// RelayQuotaMark is one allocation counted against a quota scope.
type RelayQuotaMark struct {
	ExpiresAt time.Time `json:"expires_at"`
}

func quotaPrefix(scope string) string {
	sum := sha256.Sum256([]byte(scope))
	return hex.EncodeToString(sum[:8])
}

// CountRelayQuota returns the allocations counted against scope that
// have not expired at now.
func (db *DB) CountRelayQuota(ctx context.Context, scope string, now time.Time) (int, error) {
	keys, err := db.relay.quota.Keys(ctx, quotaPrefix(scope)+".>")
	if err != nil {
		return 0, fmt.Errorf("store: count relay quota: %w", err)
	}
	n := 0
	for _, k := range keys {
		parts := strings.Split(k, ".")
		if len(parts) != 3 {
			continue
		}
		if exp, err := strconv.ParseInt(parts[1], 10, 64); err == nil && exp > now.Unix() {
			n++
		}
	}
	return n, nil
}

// AddRelayQuota counts allocation id (32 hex), expiring at exp, against
// every scope, and returns the marks' keys for RelayAllocation.QuotaKeys.
func (db *DB) AddRelayQuota(ctx context.Context, id string, exp time.Time, scopes ...string) ([]string, error) {
	keys := make([]string, 0, len(scopes))
	for _, sc := range scopes {
		k := quotaPrefix(sc) + "." + strconv.FormatInt(exp.Unix(), 10) + "." + id
		if _, err := db.relay.quota.Put(ctx, k, &RelayQuotaMark{ExpiresAt: exp}); err != nil {
			return nil, errors.Join(fmt.Errorf("store: relay quota: %w", err), db.DropRelayQuota(ctx, keys))
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// DropRelayQuota purges quota marks: those of an allocation whose record
// could not be stored, or of a released one.
func (db *DB) DropRelayQuota(ctx context.Context, keys []string) error {
	var errs []error
	for _, k := range keys {
		if err := db.relay.quota.Purge(ctx, k); err != nil {
			errs = append(errs, fmt.Errorf("store: relay quota: %w", err))
		}
	}
	return errors.Join(errs...)
}
