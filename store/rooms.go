package store

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ListOptions selects a page of rooms for [DB.ListRooms].
type ListOptions struct {
	// Status keeps only rooms with this status. Empty means all.
	Status string
	// PageToken continues after the page that returned it. Empty means
	// the first page.
	PageToken string
	// Limit is the page size. Zero means DefaultListLimit; it is capped
	// at MaxListLimit.
	Limit int
}

// CreateRoom stores r under r.RoomID. It returns an error wrapping
// ErrExists if the id is taken, ErrInvalidID if it is not a valid id and
// ErrTooLarge if the record is too large. Seats are stored sorted.
func (db *DB) CreateRoom(ctx context.Context, r *Room) error {
	c := r.Clone()
	normalizeRoom(c)
	if !validID(c.RoomID) {
		return fmt.Errorf("store: create room %q: %w", c.RoomID, ErrInvalidID)
	}
	rev, err := db.rooms.Create(ctx, roomKey(c.RoomID), c)
	if err != nil {
		return storeErr("create", "room", c.RoomID, err)
	}
	db.roomW.remember(c.RoomID, c, rev)
	return nil
}

// GetRoom returns the room id, or an error wrapping ErrNotFound.
func (db *DB) GetRoom(ctx context.Context, id string) (*Room, error) {
	if !validID(id) {
		return nil, fmt.Errorf("store: get room %q: %w", id, ErrNotFound)
	}
	r, _, err := db.rooms.Get(ctx, roomKey(id))
	if err != nil {
		return nil, storeErr("get", "room", id, err)
	}
	normalizeRoom(r)
	return r, nil
}

// UpdateRoom reads room id, applies fn to it and writes it back if
// nobody wrote it in between; otherwise it reads again and retries, up to
// Config.MaxRetries times (then ErrConflict). fn may thus run several
// times and must have no side effects besides changing the room. An
// error from fn aborts the update and is returned as is. fn must not
// change RoomID, nor call UpdateRoom of the same DB. UpdateRoom returns
// the room as written, with Seats sorted; a missing room is ErrNotFound.
//
// The updates of one room that callers of this DB make at the same time
// are applied together, in arrival order, each to the result of the one
// before, and written with one compare-and-set (a failing fn leaves the
// room as it found it): a process is the one writer of a room, and only
// other processes can make its writes conflict. The combined write runs
// for Config.UpdateTimeout at most, whatever ctx says; ctx bounds only
// the wait for it to start.
func (db *DB) UpdateRoom(ctx context.Context, id string, fn func(*Room) error) (*Room, error) {
	if !validID(id) {
		return nil, fmt.Errorf("store: update room %q: %w", id, ErrNotFound)
	}
	return db.roomW.update(ctx, id, fn)
}

// DeleteRoom removes room id. Deleting a missing room is not an error.
func (db *DB) DeleteRoom(ctx context.Context, id string) error {
	db.roomW.forget(id)
	if !validID(id) {
		return nil
	}
	if err := db.rooms.Purge(ctx, roomKey(id)); err != nil {
		return storeErr("delete", "room", id, err)
	}
	return nil
}

// roomKey is the key of room id: "<first character of id>.<id>". The
// first character groups the keys (64 groups), so that a page of
// ListRooms lists the keys of the groups it spans, not every key.
func roomKey(id string) string { return id[:1] + "." + id }

// roomGroups are the first characters of room ids, in byte order.
const roomGroups = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"

// ListRooms returns up to opts.Limit rooms in room_id order, starting
// after opts.PageToken, and the token of the next page. The token is ""
// when there are no more rooms; a full page may be followed by an empty
// one. A token that ListRooms did not issue is ErrInvalidPageToken.
//
// A page lists the keys of the key groups (first characters of room ids)
// it spans, from the token's on, one group then twice as many at each
// step, and reads records until the page is full: its cost grows with
// the rooms of those groups and the rooms the status filter skips, not
// with every room of the bucket.
func (db *DB) ListRooms(ctx context.Context, opts ListOptions) ([]*Room, string, error) {
	limit := opts.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	limit = min(limit, MaxListLimit)
	after := ""
	if opts.PageToken != "" {
		b, err := base64.RawURLEncoding.DecodeString(opts.PageToken)
		if err != nil || !validID(string(b)) {
			return nil, "", fmt.Errorf("store: list rooms: %w", ErrInvalidPageToken)
		}
		after = string(b)
	}
	g := 0
	if after != "" {
		g = strings.IndexByte(roomGroups, after[0])
	}
	var rooms []*Room
	for span := 1; g < len(roomGroups); span *= 2 {
		n := min(span, len(roomGroups)-g)
		ids, err := db.roomIDs(ctx, roomGroups[g:g+n], after)
		if err != nil {
			return nil, "", err
		}
		g += n
		for i, id := range ids {
			r, err := db.GetRoom(ctx, id)
			if err != nil {
				if isNotFound(err) {
					continue // deleted since we listed the keys
				}
				return nil, "", err
			}
			if opts.Status != "" && r.Status != opts.Status {
				continue
			}
			rooms = append(rooms, r)
			if len(rooms) < limit {
				continue
			}
			more := i < len(ids)-1
			if !more && g < len(roomGroups) {
				if more, err = db.rooms.AnyKey(ctx, groupFilters(roomGroups[g:])...); err != nil {
					return nil, "", fmt.Errorf("store: list rooms: %w", err)
				}
			}
			if !more {
				return rooms, "", nil
			}
			return rooms, base64.RawURLEncoding.EncodeToString([]byte(id)), nil
		}
	}
	if rooms == nil {
		rooms = []*Room{}
	}
	return rooms, "", nil
}

// roomIDs returns the ids of the rooms of the key groups, after after,
// sorted.
func (db *DB) roomIDs(ctx context.Context, groups, after string) ([]string, error) {
	keys, err := db.rooms.Keys(ctx, groupFilters(groups)...)
	if err != nil {
		return nil, fmt.Errorf("store: list rooms: %w", err)
	}
	db.keysListed.Add(int64(len(keys)))
	ids := make([]string, 0, len(keys))
	for _, k := range keys {
		if _, id, ok := strings.Cut(k, "."); ok && id > after {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

func groupFilters(groups string) []string {
	f := make([]string, len(groups))
	for i := range len(groups) {
		f[i] = groups[i:i+1] + ".*"
	}
	return f
}

// normalizeRoom sorts the seats and turns nil slices into empty ones so
// that the JSON has "seats": [].
func normalizeRoom(r *Room) {
	if r.Seats == nil {
		r.Seats = []Seat{}
	}
	sortSeats(r.Seats)
}

// CloseReasonNodeRestarted is the close reason of the rooms a game node
// ran before it restarted: their engine state (seats' connections,
// frames) died with the process.
const CloseReasonNodeRestarted = "node_restarted"

// RoomsOfNode returns the rooms assigned to node nodeID that are not
// closed. It reads every room record: a node calls it once, when it
// starts.
func (db *DB) RoomsOfNode(ctx context.Context, nodeID string) ([]*Room, error) {
	var out []*Room
	err := db.scanRooms(ctx, func(r *Room) {
		if r.NodeID == nodeID && r.Status != StatusClosed {
			out = append(out, r)
		}
	})
	return out, err
}

// scanRooms calls fn with every room record, in no particular order.
func (db *DB) scanRooms(ctx context.Context, fn func(*Room)) error {
	keys, err := db.rooms.Keys(ctx)
	if err != nil {
		return fmt.Errorf("store: scan rooms: %w", err)
	}
	for _, k := range keys {
		_, id, _ := strings.Cut(k, ".")
		r, err := db.GetRoom(ctx, id)
		if err != nil {
			if isNotFound(err) {
				continue // deleted since we listed the keys
			}
			return err
		}
		fn(r)
	}
	return nil
}

// ClosedRoomRetention is how long a closed room stays readable before it
// is purged.
const ClosedRoomRetention = 24 * time.Hour

// PurgeClosedRooms deletes the rooms closed before cutoff for which mine
// returns true, and returns how many it deleted. It reads every room
// record: it runs in the background, every few minutes.
func (db *DB) PurgeClosedRooms(ctx context.Context, cutoff time.Time, mine func(*Room) bool) (int, error) {
	var old []string
	if err := db.scanRooms(ctx, func(r *Room) {
		if r.Status == StatusClosed && r.ClosedAt != nil && r.ClosedAt.Before(cutoff) && mine(r) {
			old = append(old, r.RoomID)
		}
	}); err != nil {
		return 0, err
	}
	for i, id := range old {
		if err := db.DeleteRoom(ctx, id); err != nil {
			return i, err
		}
	}
	return len(old), nil
}
