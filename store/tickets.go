package store

import (
	"context"
	"errors"
)

// PutJoinTicket stores t under hash, the hex SHA-256 of the ticket text.
// It returns an error wrapping ErrExists if hash is already stored,
// ErrInvalidID or ErrTooLarge.
func (db *DB) PutJoinTicket(ctx context.Context, hash string, t *JoinTicket) error {
	return create(ctx, db.tickets, "ticket", hash, t)
}

// GetJoinTicket returns the join ticket stored under hash, or an error
// wrapping ErrNotFound. It does not check ExpiresAt.
func (db *DB) GetJoinTicket(ctx context.Context, hash string) (*JoinTicket, error) {
	t, _, err := get[JoinTicket](ctx, db.tickets, "ticket", hash)
	return t, err
}

// UpdateJoinTicket is [DB.UpdateRoom] for join tickets; use it to consume
// a ticket exactly once.
func (db *DB) UpdateJoinTicket(ctx context.Context, hash string, fn func(*JoinTicket) error) (*JoinTicket, error) {
	return update(ctx, db.tickets, "ticket", hash, fn)
}

// isNotFound reports whether err wraps ErrNotFound.
func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
