package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/switchboardgg/switchboard/backbone"
)

// CreateSession stores s under s.SessionID. It returns an error wrapping
// ErrExists if the id is taken, ErrInvalidID or ErrTooLarge. Rooms beyond
// MaxSessionRooms are dropped.
func (db *DB) CreateSession(ctx context.Context, s *Session) error {
	c := *s
	c.Rooms = slices.Clone(s.Rooms)
	normalizeSession(&c)
	if !validID(c.SessionID) {
		return fmt.Errorf("store: create session %q: %w", c.SessionID, ErrInvalidID)
	}
	if c.RefreshUntil.IsZero() {
		c.RefreshUntil = c.CreatedAt.Add(db.cfg.SessionMaxAge).UTC()
	}
	rev, err := db.sessions.Create(ctx, c.SessionID, &c)
	if err != nil {
		return storeErr("create", "session", c.SessionID, err)
	}
	evicted, err := db.trackSession(ctx, &c)
	if err != nil {
		// Untracked, it would escape the bound: better no session.
		_ = db.sessions.Purge(context.WithoutCancel(ctx), c.SessionID)
		return err
	}
	for _, id := range evicted {
		if err := db.DeleteSession(ctx, id); err != nil {
			db.log.Warn("the oldest login session of a user not ended", "err", err)
		}
	}
	db.recentSessions.put(c.SessionID, &c, rev)
	return nil
}

// UserSessions lists the login sessions of one username, oldest first,
// at most Config.MaxSessionsPerUser; key "u<hex of SHA-256 of the
// username, 32 digits>" in the users bucket. Sessions that ended (logout,
// TTL) stay listed until pushed out: they only take a place.
type UserSessions struct {
	Sessions []UserSession `json:"sessions"`
}

// UserSession is an entry of [UserSessions].
type UserSession struct {
	SessionID string    `json:"session_id"`
	CreatedAt time.Time `json:"created_at"`
}

func userKey(username string) string {
	h := sha256.Sum256([]byte(username))
	return "u" + hex.EncodeToString(h[:16])
}

// trackSession adds s to its user's list and returns the sessions pushed
// out of it. A user's first login creates the list (a write without a
// read); later logins of the user update it with compare-and-set.
func (db *DB) trackSession(ctx context.Context, s *Session) ([]string, error) {
	key := userKey(s.Username)
	entry := UserSession{SessionID: s.SessionID, CreatedAt: s.CreatedAt}
	for range 3 { // the list may expire between the create and the update
		_, err := db.users.Create(ctx, key, &UserSessions{Sessions: []UserSession{entry}})
		if err == nil {
			return nil, nil
		}
		if !errors.Is(err, backbone.ErrKeyExists) {
			return nil, storeErr("create", "user", key, err)
		}
		var evicted []string
		_, err = update(ctx, db.users, "user", key, func(u *UserSessions) error {
			u.Sessions = append(u.Sessions, entry)
			evicted = nil
			if n := len(u.Sessions) - db.cfg.MaxSessionsPerUser; n > 0 {
				for _, e := range u.Sessions[:n] {
					evicted = append(evicted, e.SessionID)
				}
				u.Sessions = slices.Delete(u.Sessions, 0, n)
			}
			return nil
		})
		if !errors.Is(err, ErrNotFound) {
			return evicted, err
		}
	}
	return nil, fmt.Errorf("store: track session of user %s: %w", key, ErrConflict)
}

// GetSession returns the login session id, or an error wrapping
// ErrNotFound (also after its TTL or logout).
func (db *DB) GetSession(ctx context.Context, id string) (*Session, error) {
	s, rev, err := get[Session](ctx, db.sessions, "session", id)
	if err != nil {
		db.recentSessions.forget(id)
		return nil, err
	}
	normalizeSession(s)
	c := *s
	c.Rooms = slices.Clone(s.Rooms)
	db.recentSessions.put(id, &c, rev)
	return s, nil
}

// UpdateSession is the compare-and-set loop of [DB.UpdateRoom] for login
// sessions (without the combining: a session has one user). Rooms beyond
// MaxSessionRooms are dropped. Each update restarts the session's TTL.
//
// It first applies fn to the copy this process last read or wrote of the
// session (a request reads its session to authenticate, then updates
// it), and writes it if the session has not changed since; otherwise, or
// when fn refuses that copy, it reads the session afresh. So an error of
// fn is returned only when fn refused the session as read afresh: the
// session existed then.
func (db *DB) UpdateSession(ctx context.Context, id string, fn func(*Session) error) (*Session, error) {
	apply := func(s *Session) error {
		normalizeSession(s)
		if err := fn(s); err != nil {
			return err
		}
		if s.SessionID != id {
			return errors.New("store: update session: session_id changed")
		}
		normalizeSession(s)
		return nil
	}
	if s, rev, ok := db.recentSessions.take(id); ok && apply(s) == nil {
		nrev, err := db.sessions.UpdateAt(ctx, id, s, rev)
		if err == nil {
			db.recentSessions.put(id, cloneSession(s), nrev)
			return s, nil
		}
		if !errors.Is(err, backbone.ErrConflict) {
			return nil, storeErr("update", "session", id, err)
		}
	}
	s, err := update(ctx, db.sessions, "session", id, apply)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// RecentSession returns this process's last copy of login session id,
// without reading the store: the copy [DB.CreateSession],
// [DB.GetSession] or [DB.UpdateSession] left, which is gone once
// [DB.DeleteSession] of this process ran or a read found the session
// missing. The copy may be stale: another process may have changed or
// deleted the session since. A caller that relies on the session still
// existing proves it with an [DB.UpdateSession] (a compare-and-set on the
// copy's revision, which fails and reads afresh if the session changed).
func (db *DB) RecentSession(id string) (*Session, bool) {
	return db.recentSessions.peek(id, cloneSession)
}

func cloneSession(s *Session) *Session {
	c := *s
	c.Rooms = slices.Clone(s.Rooms)
	return &c
}

// DeleteSession removes the login session id (logout). Deleting a
// missing session is not an error.
func (db *DB) DeleteSession(ctx context.Context, id string) error {
	db.recentSessions.forget(id)
	return purge(ctx, db.sessions, "session", id)
}

func normalizeSession(s *Session) {
	if s.Rooms == nil {
		s.Rooms = []SessionRoom{}
	}
	if len(s.Rooms) > MaxSessionRooms {
		s.Rooms = s.Rooms[:MaxSessionRooms:MaxSessionRooms]
	}
}
