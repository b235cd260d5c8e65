package e2e_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/bench"
	"github.com/switchboardgg/switchboard/client/backend"
)

// cli runs the binary with args against the dev server's ready file and
// returns its standard output; it fails the test on a non-zero exit unless
// wantErr.
func cli(t *testing.T, readyFile string, wantErr bool, args ...string) string {
	t.Helper()
	args = append(args, "--ready-file", readyFile)
	out, err := exec.Command(binary, args...).Output()
	if (err != nil) != wantErr {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("switchboard %v: err %v (want error: %v)\n%s%s", args, err, wantErr, out, stderr)
	}
	return string(out)
}

func TestCLIRoomVerbs(t *testing.T) {
	dir := t.TempDir()
	p := start(t, "dev", "--api", "127.0.0.1:0", "--node", "127.0.0.1:0", "--admin", "", "--nats", "127.0.0.1:0", "--data-dir", dir)
	rf := dir + "/ready-cli.json"
	if err := writeReady(rf, p.ready); err != nil {
		t.Fatal(err)
	}

	var created struct{ Room backend.Room }
	out := cli(t, rf, false, "room", "create", "cli-1", "--tick-rate", "20", "--max-players", "2", "--start-mode", "manual")
	if err := json.Unmarshal([]byte(out), &created); err != nil || created.Room.RoomID != "cli-1" || created.Room.StartMode != "manual" || created.Room.TickRate != 20 {
		t.Fatalf("room create: %v %s", err, out)
	}
	out = cli(t, rf, false, "ticket", "cli-1", "carol", "--seat", "1")
	var ticket map[string]string
	if err := json.Unmarshal([]byte(out), &ticket); err != nil || !strings.HasPrefix(ticket["ticket"], "gtk_") || !strings.HasPrefix(ticket["auth_token"], "sat1.") {
		t.Fatalf("ticket: %v %s", err, out)
	}

	// A player joins seat 1; the room waits for a manual start.
	ctx := testContext(t, 30*time.Second)
	be, err := backend.New(p.ready.API, p.ready.ServerKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	bot := &bench.Bot{API: p.ready.API, Backend: be, RoomID: "cli-1", Username: "dave", Seat: 1}
	room, err := bot.Join(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer room.Close()

	var got struct {
		Room    backend.Room
		Members []backend.Member
	}
	out = cli(t, rf, false, "room", "get", "cli-1")
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Members) != 1 || got.Members[0].Username != "dave" || got.Members[0].Seat != 1 {
		t.Fatalf("room get: %v %s", err, out)
	}
	out = cli(t, rf, false, "room", "start", "cli-1")
	if !strings.Contains(out, `"state": "playing"`) {
		t.Errorf("room start: %s", out)
	}
	cli(t, rf, true, "room", "start", "cli-1") // already started: 409

	out = cli(t, rf, false, "room", "list", "--status", "open")
	if !strings.Contains(out, `"room_id": "cli-1"`) {
		t.Errorf("room list: %s", out)
	}
	cli(t, rf, false, "room", "kick", "cli-1", "1", "--reason", "afk")
	select {
	case <-room.Done():
		if err := room.Err(); err == nil || !strings.Contains(err.Error(), "kicked") {
			t.Errorf("kicked player's room ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("kicked player still connected")
	}
	cli(t, rf, true, "room", "kick", "cli-1", "1") // seat now empty: 404
	cli(t, rf, false, "room", "close", "cli-1", "--result", `{"winner":"nobody"}`)
	out = cli(t, rf, false, "room", "get", "cli-1")
	if !strings.Contains(out, `"status": "clos`) {
		t.Errorf("after close: %s", out)
	}
	cli(t, rf, true, "room", "get", "no-such-room")

	// The operator drains the node: it leaves the placement pool.
	var nodes struct{ Nodes []backend.Node }
	out = cli(t, rf, false, "node", "list")
	if err := json.Unmarshal([]byte(out), &nodes); err != nil || len(nodes.Nodes) != 1 || nodes.Nodes[0].Draining {
		t.Fatalf("node list: %v %s", err, out)
	}
	out = cli(t, rf, false, "node", "drain", nodes.Nodes[0].NodeID)
	if !strings.Contains(out, `"draining": true`) {
		t.Errorf("node drain: %s", out)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, err := be.CreateRoom(ctx, backend.CreateRoomRequest{SyncMode: "relay", MaxPlayers: new(1), StartMode: "auto"})
		if err != nil && strings.Contains(err.Error(), "game_node_unavailable") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rooms still placed on a drained node: %v", err)
		}
	}
}
