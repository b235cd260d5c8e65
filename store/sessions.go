package store

import (
	"context"
	"errors"
)

// CreateSession stores s under s.SessionID. It returns an error wrapping
// ErrExists if the id is taken, ErrInvalidID or ErrTooLarge. Rooms beyond
// MaxSessionRooms are dropped.
func (db *DB) CreateSession(ctx context.Context, s *Session) error {
	c := *s
	normalizeSession(&c)
	return create(ctx, db.sessions, "session", c.SessionID, &c)
}

// GetSession returns the login session id, or an error wrapping
// ErrNotFound (also after its TTL or logout).
func (db *DB) GetSession(ctx context.Context, id string) (*Session, error) {
	s, _, err := get[Session](ctx, db.sessions, "session", id)
	if err != nil {
		return nil, err
	}
	normalizeSession(s)
	return s, nil
}

// UpdateSession is [DB.UpdateRoom] for login sessions. Rooms beyond
// MaxSessionRooms are dropped. Each update restarts the session's TTL.
func (db *DB) UpdateSession(ctx context.Context, id string, fn func(*Session) error) (*Session, error) {
	return update(ctx, db.sessions, "session", id, func(s *Session) error {
		normalizeSession(s)
		if err := fn(s); err != nil {
			return err
		}
		if s.SessionID != id {
			return errors.New("store: update session: session_id changed")
		}
		normalizeSession(s)
		return nil
	})
}

// DeleteSession removes the login session id (logout). Deleting a
// missing session is not an error.
func (db *DB) DeleteSession(ctx context.Context, id string) error {
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
