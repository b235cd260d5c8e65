package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// Networks: create, the name taken, by code, update with sorted lists,
// paging, delete with the code.
func TestP2PNetworks(t *testing.T) {
	db := newEnv(t).db(Config{})
	ctx := context.Background()
	now := time.Now().UTC()
	n := &P2PNetwork{Name: "lobby", HubID: "h1", JoinCodeHash: "abc123", MaxPeers: 8, CreatedBy: "server", CreatedAt: now,
		AllowList: []string{"carol", "alice", "alice"}}
	if err := db.CreateP2PNetwork(ctx, n); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateP2PNetwork(ctx, &P2PNetwork{Name: "lobby", HubID: "h2"}); !errors.Is(err, ErrExists) {
		t.Fatalf("second create = %v, want ErrExists", err)
	}
	got, err := db.GetP2PNetwork(ctx, "lobby")
	if err != nil || got.HubID != "h1" || len(got.AllowList) != 2 || got.AllowList[0] != "alice" || !got.Allowed("carol") || got.Allowed("bob") {
		t.Fatalf("GetP2PNetwork = %+v, %v", got, err)
	}
	if name, err := db.P2PNetworkByCode(ctx, "abc123"); err != nil || name != "lobby" {
		t.Fatalf("P2PNetworkByCode = %q, %v", name, err)
	}
	got, err = db.UpdateP2PNetwork(ctx, "lobby", func(n *P2PNetwork) error {
		n.Bans = append(n.Bans, "mallory", "eve")
		return nil
	})
	if err != nil || !got.Banned("eve") || !got.Banned("mallory") || got.Banned("alice") {
		t.Fatalf("UpdateP2PNetwork = %+v, %v", got, err)
	}
	if _, err := db.UpdateP2PNetwork(ctx, "nope", func(*P2PNetwork) error { return nil }); !errors.Is(err, ErrNotFound) {
		t.Fatalf("update of a missing network = %v", err)
	}
	for i := range 5 {
		if err := db.CreateP2PNetwork(ctx, &P2PNetwork{Name: fmt.Sprintf("n%d", i), HubID: "h1"}); err != nil {
			t.Fatal(err)
		}
	}
	page, more, err := db.ListP2PNetworks(ctx, "", 4)
	if err != nil || !more || len(page) != 4 || page[0].Name != "lobby" || page[3].Name != "n2" {
		t.Fatalf("first page = %v, %v, %v", names(page), more, err)
	}
	page, more, err = db.ListP2PNetworks(ctx, page[3].Name, 4)
	if err != nil || more || len(page) != 2 || page[1].Name != "n4" {
		t.Fatalf("second page = %v, %v, %v", names(page), more, err)
	}
	if err := db.DeleteP2PNetwork(ctx, "lobby"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.P2PNetworkByCode(ctx, "abc123"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("code of a deleted network = %v", err)
	}
	if err := db.DeleteP2PNetwork(ctx, "lobby"); err != nil {
		t.Fatalf("second delete = %v", err)
	}
}

func names(ns []*P2PNetwork) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.Name
	}
	return out
}
