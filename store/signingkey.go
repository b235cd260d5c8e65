package store

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

const (
	signingKeyName = "signing_key"
	// SigningKeySize is the length in bytes of the shared signing key.
	SigningKeySize = 32
)

// SigningKey returns the deployment's shared signing key, 32 bytes. The
// first process to ask creates it with create-if-absent; a process that
// loses the race reads the winner's. The key is cached after the first
// call. The returned slice is a copy.
func (db *DB) SigningKey(ctx context.Context) ([]byte, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.signingKey == nil {
		key, err := db.loadSigningKey(ctx)
		if err != nil {
			return nil, err
		}
		db.signingKey = key
	}
	return append([]byte(nil), db.signingKey...), nil
}

func (db *DB) loadSigningKey(ctx context.Context) ([]byte, error) {
	key := make([]byte, SigningKeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("store: signing key: %w", err)
	}
	_, err := db.config.Create(ctx, signingKeyName, []byte(base64.StdEncoding.EncodeToString(key)))
	if err == nil {
		return key, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return nil, fmt.Errorf("store: signing key: create: %w", err)
	}
	e, err := db.config.Get(ctx, signingKeyName)
	if err != nil {
		return nil, fmt.Errorf("store: signing key: get: %w", err)
	}
	key, err = base64.StdEncoding.DecodeString(string(e.Value()))
	if err != nil || len(key) != SigningKeySize {
		return nil, fmt.Errorf("store: signing key: stored value is not %d bytes of base64", SigningKeySize)
	}
	return key, nil
}
