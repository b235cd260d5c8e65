package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// A stale code is deleted only while it is as it was read: a code held
// or handed to another host since stays.
func TestDeleteStaleRelayJoinCode(t *testing.T) {
	db := newEnv(t).db(Config{})
	ctx := context.Background()
	host := "00000000000000000000000000000001"
	a := &RelayAllocation{AllocationID: host, NodeID: "r1", Owner: "o", HostMigration: true, MigrationGrace: time.Minute,
		CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}
	if err := db.CreateRelayAllocation(ctx, a); err != nil {
		t.Fatal(err)
	}
	code, err := db.RelayJoinCode(ctx, host, func() string { return "BCDFGH" }, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Read as live, then held by the host's release: not deleted.
	if err := db.ReleaseRelayAllocation(ctx, host); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteStaleRelayJoinCode(ctx, code, host, time.Time{}); err != nil {
		t.Fatal(err)
	}
	c, err := db.GetRelayJoinCode(ctx, code)
	if err != nil || c.HeldUntil.IsZero() || c.Owner != "o" || !c.Migration {
		t.Fatalf("held code %+v, %v", c, err)
	}
	// Read as held: deleted.
	if err := db.DeleteStaleRelayJoinCode(ctx, code, host, c.HeldUntil); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetRelayJoinCode(ctx, code); !errors.Is(err, ErrNotFound) {
		t.Fatalf("stale code still there: %v", err)
	}
	if err := db.DeleteStaleRelayJoinCode(ctx, code, host, c.HeldUntil); err != nil {
		t.Fatalf("deleting a missing code: %v", err)
	}
}

// A join code is a credential: the store's errors, which reach logs,
// never carry one, yet still match their sentinels.
func TestJoinCodeNotInErrors(t *testing.T) {
	db := newEnv(t).db(Config{})
	ctx := context.Background()
	host := "00000000000000000000000000000002"
	a := &RelayAllocation{AllocationID: host, NodeID: "r1", Owner: "o", CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}
	if err := db.CreateRelayAllocation(ctx, a); err != nil {
		t.Fatal(err)
	}
	code, err := db.RelayJoinCode(ctx, host, func() string { return "KLMNPQ" }, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{
		db.RevokeRelayJoinCode(ctx, code, "someone else"),
		func() error { _, err := db.GetRelayJoinCode(ctx, "WXYZ67"); return err }(),
		func() error { _, err := db.GetRelayJoinCode(ctx, "bad code!"); return err }(),
	} {
		if err == nil {
			t.Fatal("no error")
		}
		if !errors.Is(err, ErrForbidden) && !errors.Is(err, ErrNotFound) {
			t.Errorf("%v: matches no sentinel", err)
		}
		for _, c := range []string{code, "WXYZ67", "bad code!"} {
			if strings.Contains(err.Error(), c) {
				t.Errorf("error %q names join code %q", err, c)
			}
		}
	}
}
