package store

import (
	"context"
	"errors"
	"fmt"
	"slices"

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
	rev, err := db.sessions.Create(ctx, c.SessionID, &c)
	if err != nil {
		return storeErr("create", "session", c.SessionID, err)
	}
	db.recentSessions.put(c.SessionID, &c, rev)
	return nil
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
// when fn refuses that copy, it reads the session afresh.
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
