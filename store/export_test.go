package store

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"
)

func bucketStatus(ctx context.Context, db *DB, name string) (jetstream.KeyValueStatus, error) {
	for _, kv := range []jetstream.KeyValue{db.rooms.Raw(), db.sessions.Raw(), db.tickets.Raw(), db.nodes.Raw(), db.config} {
		if kv.Bucket() == name {
			return kv.Status(ctx)
		}
	}
	return nil, jetstream.ErrBucketNotFound
}

// KeysListed returns the room keys ListRooms listed so far.
func (db *DB) KeysListed() int64 { return db.keysListed.Load() }
