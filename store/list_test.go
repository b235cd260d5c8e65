package store

import (
	"context"
	"fmt"
	"testing"
)

// A page lists the keys of the groups of room ids it spans, not every
// key of the bucket.
func TestListRoomsPageListsItsKeysOnly(t *testing.T) {
	db := newEnv(t).db(Config{})
	ctx := context.Background()
	ids := []string{"a1", "a2"}
	for i := range 30 {
		ids = append(ids, fmt.Sprintf("z%02d", i))
	}
	for _, id := range ids {
		if err := db.CreateRoom(ctx, newRoom(id)); err != nil {
			t.Fatal(err)
		}
	}
	rooms, next, err := db.ListRooms(ctx, ListOptions{Limit: 2})
	if err != nil || len(rooms) != 2 || rooms[0].RoomID != "a1" || rooms[1].RoomID != "a2" || next == "" {
		t.Fatalf("first page = %v, %q, %v", rooms, next, err)
	}
	if n := db.KeysListed(); n != 2 {
		t.Errorf("the first page listed %d keys, want the 2 of its group (not all %d)", n, len(ids))
	}
	rooms, _, err = db.ListRooms(ctx, ListOptions{Limit: 2, PageToken: next})
	if err != nil || len(rooms) != 2 || rooms[0].RoomID != "z00" {
		t.Fatalf("second page = %v, %v", rooms, err)
	}
}
