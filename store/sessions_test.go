package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// A user's logins beyond Config.MaxSessionsPerUser end the user's oldest
// sessions; other users' sessions stay.
func TestSessionsBoundedPerUser(t *testing.T) {
	db := newEnv(t).db(Config{MaxSessionsPerUser: 3})
	ctx := context.Background()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	login := func(user string, i int) string {
		id := fmt.Sprintf("%s-s%d", user, i)
		if err := db.CreateSession(ctx, &Session{SessionID: id, Username: user, CreatedAt: t0.Add(time.Duration(i) * time.Minute), ExpiresAt: t0.Add(time.Hour)}); err != nil {
			t.Fatalf("CreateSession %s: %v", id, err)
		}
		return id
	}
	other := login("bob", 0)
	var ids []string
	for i := range 5 {
		ids = append(ids, login("alice", i))
	}
	for i, id := range ids {
		_, err := db.GetSession(ctx, id)
		if i < 2 && !errors.Is(err, ErrNotFound) {
			t.Errorf("session %d of 5 with a bound of 3: %v, want ErrNotFound", i, err)
		}
		if i >= 2 && err != nil {
			t.Errorf("session %d of 5: %v", i, err)
		}
	}
	if _, err := db.GetSession(ctx, other); err != nil {
		t.Errorf("another user's session: %v", err)
	}
	// A logout frees nothing in the list but takes nothing either: the
	// next login pushes out the oldest entry, live or not.
	if err := db.DeleteSession(ctx, ids[2]); err != nil {
		t.Fatal(err)
	}
	login("alice", 5)
	if _, err := db.GetSession(ctx, ids[3]); err != nil {
		t.Errorf("session 3 after a logout of 2 and a login: %v", err)
	}
}

// Refresh extends a session up to its absolute end, and not past it.
func TestSessionRefreshAbsoluteLifetime(t *testing.T) {
	db := newEnv(t).db(Config{SessionMaxAge: 10 * time.Hour})
	ctx := context.Background()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := db.CreateSession(ctx, &Session{SessionID: "s1", Username: "u", CreatedAt: t0, ExpiresAt: t0.Add(4 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	s, err := db.GetSession(ctx, "s1")
	if err != nil || !s.RefreshUntil.Equal(t0.Add(10*time.Hour)) {
		t.Fatalf("session %+v, %v; want refresh_until 10 h after creation", s, err)
	}
	now := t0
	for range 2 {
		now = now.Add(3 * time.Hour)
		if !s.Refresh(now, 4*time.Hour) {
			t.Fatalf("refresh at %v refused", now.Sub(t0))
		}
	}
	if !s.ExpiresAt.Equal(t0.Add(10 * time.Hour)) {
		t.Errorf("expires_at %v after creation, want capped at 10 h", s.ExpiresAt.Sub(t0))
	}
	if s.Refresh(t0.Add(10*time.Hour), 4*time.Hour) {
		t.Error("refresh at the absolute end accepted")
	}
}
