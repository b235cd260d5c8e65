package store

import (
	"context"
	"errors"
	"testing"
)

// Every role registers in the one registry; each lists only its own.
func TestRegistryRoles(t *testing.T) {
	db := newEnv(t).db(Config{})
	ctx := context.Background()
	for _, n := range []*Node{
		{NodeID: "g1", WSURL: "ws://127.0.0.1:1/game/v1/ws"},
		{Role: RoleRelay, NodeID: "r1", Region: "eu", Addresses: map[string]string{"udp": "127.0.0.1:3478"}, Load: 0.25},
		{Role: RoleRelay, NodeID: "g1", Draining: true}, // the same id in another role
		{Role: RoleHub, NodeID: "h1"},
	} {
		if err := db.PutNode(ctx, n); err != nil {
			t.Fatalf("PutNode %s %s: %v", n.Role, n.NodeID, err)
		}
	}
	games, err := db.ListNodes(ctx)
	if err != nil || len(games) != 1 || games[0].NodeID != "g1" || games[0].Role != RoleGame || games[0].Draining {
		t.Fatalf("ListNodes = %+v, %v; want the game node g1", games, err)
	}
	relays, err := db.ListRoleNodes(ctx, RoleRelay)
	if err != nil || len(relays) != 2 || relays[0].NodeID != "g1" || relays[1].Addresses["udp"] != "127.0.0.1:3478" || relays[1].Load != 0.25 {
		t.Fatalf("ListRoleNodes(relay) = %+v, %v", relays, err)
	}
	if n, err := db.GetRoleNode(ctx, RoleHub, "h1"); err != nil || n.Role != RoleHub {
		t.Fatalf("GetRoleNode(hub, h1) = %+v, %v", n, err)
	}
	if err := db.DeleteRoleNode(ctx, RoleRelay, "g1"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetNode(ctx, "g1"); err != nil {
		t.Fatalf("the game node g1 went with the relay g1: %v", err)
	}
	if err := db.PutNode(ctx, &Node{Role: "nope", NodeID: "x"}); !errors.Is(err, ErrInvalidID) {
		t.Fatalf("PutNode of an unknown role: %v, want ErrInvalidID", err)
	}
}
