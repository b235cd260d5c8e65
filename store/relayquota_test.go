package store

import (
	"context"
	"testing"
	"time"
)

// Quota marks count per scope until their expiry, and a release purges
// the allocation's marks.
func TestRelayQuota(t *testing.T) {
	db := newEnv(t).db(Config{})
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	count := func(scope string) int {
		t.Helper()
		n, err := db.CountRelayQuota(ctx, scope, now)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	ids := []string{"00000000000000000000000000000001", "00000000000000000000000000000002", "00000000000000000000000000000003"}
	exps := []time.Time{now.Add(time.Hour), now.Add(time.Hour), now.Add(-time.Second)} // the third has expired
	for i, id := range ids {
		keys, err := db.AddRelayQuota(ctx, id, exps[i], "key:k1", "addr:10.0.0.1")
		if err != nil || len(keys) != 2 {
			t.Fatalf("AddRelayQuota: %v %v", keys, err)
		}
		a := &RelayAllocation{AllocationID: id, NodeID: "r1", CreatedAt: now, ExpiresAt: exps[i], QuotaKeys: keys}
		if err := db.CreateRelayAllocation(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	if k, a, other := count("key:k1"), count("addr:10.0.0.1"), count("key:k2"); k != 2 || a != 2 || other != 0 {
		t.Fatalf("counts key %d addr %d other %d, want 2 2 0", k, a, other)
	}
	if err := db.ReleaseRelayAllocation(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	if k, a := count("key:k1"), count("addr:10.0.0.1"); k != 1 || a != 1 {
		t.Fatalf("after a release: key %d addr %d, want 1 1", k, a)
	}
}
