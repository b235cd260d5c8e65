package e2e_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/backbone"
	"github.com/switchboardgg/switchboard/client/backend"
	"github.com/switchboardgg/switchboard/client/rooms"
	"github.com/switchboardgg/switchboard/internal/natstest"
)

// TestServeRolesAsSeparateProcesses runs control and a game node as two
// processes on one NATS server started by the test: all they share goes
// through NATS. The server requires credentials, as a production one
// should: the roles get them with --nats-creds.
func TestServeRolesAsSeparateProcesses(t *testing.T) {
	nats, _ := natstest.Start(t, backbone.Config{})
	const key = "e2e-server-key-0123456789"
	creds := nats.Embedded.CredentialsFile()
	ctl := start(t, "serve", "control", "--nats-url", nats.URL(), "--nats-creds", creds, "--api", "127.0.0.1:0", "--server-key", key, "--data-dir", t.TempDir())
	node := start(t, "serve", "node", "--nats-url", nats.URL(), "--nats-creds", creds, "--node", "127.0.0.1:0", "--node-id", "e2e-node-1", "--data-dir", t.TempDir())
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
		room, err = be.CreateRoom(ctx, backend.CreateRoomRequest{SyncMode: "frame", TickRate: new(20), MaxPlayers: new(3), StartMode: "all_ready"})
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

// TestServeWithoutNATSCredentials: a role without credentials for a NATS
// server that requires them exits at once, non-zero, saying why.
func TestServeWithoutNATSCredentials(t *testing.T) {
	nats, _ := natstest.Start(t, backbone.Config{})
	ctx := testContext(t, 30*time.Second)
	cmd := exec.CommandContext(ctx, binary, "serve", "node", "--nats-url", nats.URL(), "--node", "127.0.0.1:0",
		"--data-dir", t.TempDir(), "--log-level", "warn")
	cmd.Env = append(os.Environ(), "SWITCHBOARD_NATS_CREDS=")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Fatalf("serve node without credentials: got %v, want a non-zero exit\n%s", err, out)
	}
	if ctx.Err() != nil {
		t.Fatalf("serve node without credentials kept retrying until the test's deadline\n%s", out)
	}
	if !strings.Contains(strings.ToLower(string(out)), "authorization") {
		t.Errorf("output does not name the authorization failure:\n%s", out)
	}
}
