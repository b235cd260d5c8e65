package e2e_test

import (
	"errors"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/backbone"
	"github.com/switchboardgg/switchboard/client/backend"
	"github.com/switchboardgg/switchboard/client/rooms"
)

// TestServeRolesAsSeparateProcesses runs control and a game node as two
// processes on one NATS server started by the test: all they share goes
// through NATS.
func TestServeRolesAsSeparateProcesses(t *testing.T) {
	emb, err := backbone.StartEmbedded(backbone.EmbeddedConfig{DataDir: t.TempDir(), Host: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emb.Shutdown)
	const key = "e2e-server-key-0123456789"
	ctl := start(t, "serve", "control", "--nats-url", emb.ClientURL(), "--api", "127.0.0.1:0", "--server-key", key)
	node := start(t, "serve", "node", "--nats-url", emb.ClientURL(), "--node", "127.0.0.1:0", "--node-id", "e2e-node-1")
	if ctl.ready.NodeWS != "" || node.ready.API != "" {
		t.Fatalf("roles leaked into each other: control %+v, node %+v", ctl.ready, node.ready)
	}
	ctx := testContext(t, 60*time.Second)
	be, err := backend.New(ctl.ready.API, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The node registers with its first heartbeat; until then there is no
	// node for a room.
	var room *backend.Room
	for deadline := time.Now().Add(15 * time.Second); ; {
		room, err = be.CreateRoom(ctx, backend.CreateRoomRequest{SyncMode: "frame", TickRate: new(20), MaxPlayers: new(3), StartMode: "auto"})
		if err == nil || time.Now().After(deadline) || !errors.Is(err, rooms.ErrGameNodeUnavailable) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("create room: %v", err)
	}
	if room.NodeID != "e2e-node-1" {
		t.Fatalf("room on node %q, want e2e-node-1", room.NodeID)
	}
	playLockstep(t, ctx, ctl.ready.API, be, room.RoomID, 3, 40)

	// With the node gone, a join answers 503 game_node_unavailable.
	spare, err := be.CreateRoom(ctx, backend.CreateRoomRequest{SyncMode: "relay", MaxPlayers: new(2), StartMode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	node.stop(10 * time.Second)
	bot := &botJoin{api: ctl.ready.API, be: be, room: spare.RoomID}
	if err := bot.join(ctx); !errors.Is(err, rooms.ErrGameNodeUnavailable) {
		t.Fatalf("join with the node stopped: got %v, want game_node_unavailable", err)
	}
	ctl.stop(10 * time.Second)
}
