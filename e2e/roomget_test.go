package e2e_test

import (
	"encoding/json"
	"testing"
)

// TestCLIRoomGetShowsClose: `room get` shows the room's node, its
// close_reason and the result given to `room close`. It used to drop all
// three (the backend client's Room had no close_reason, and the server
// returned the result nowhere). `room create --reconnect-window 0` asks
// for 0, which the backend client used to drop.
func TestCLIRoomGetShowsClose(t *testing.T) {
	dir := t.TempDir()
	p := start(t, "dev", "--api", "127.0.0.1:0", "--node", "127.0.0.1:0", "--admin", "", "--nats", "127.0.0.1:0", "--data-dir", dir)
	rf := dir + "/ready-get.json"
	if err := writeReady(rf, p.ready); err != nil {
		t.Fatal(err)
	}
	out := cli(t, rf, false, "room", "create", "get-1", "--sync-mode", "relay", "--tick-rate", "0", "--max-players", "2", "--start-mode", "auto", "--reconnect-window", "0")
	var created struct {
		Room struct {
			ReconnectWindowSeconds *int `json:"reconnect_window_seconds"`
		} `json:"room"`
	}
	if err := json.Unmarshal([]byte(out), &created); err != nil || created.Room.ReconnectWindowSeconds == nil || *created.Room.ReconnectWindowSeconds != 0 {
		t.Fatalf("room create --reconnect-window 0: %v\n%s", err, out)
	}

	type getOut struct {
		Room struct {
			Status      string          `json:"status"`
			NodeID      string          `json:"node_id"`
			CloseReason string          `json:"close_reason"`
			CloseResult json.RawMessage `json:"close_result"`
		} `json:"room"`
		Members []json.RawMessage `json:"members"`
		Node    *struct {
			NodeID string `json:"node_id"`
			WSURL  string `json:"ws_url"`
		} `json:"node"`
	}
	var got getOut
	out = cli(t, rf, false, "room", "get", "get-1")
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("room get: %v\n%s", err, out)
	}
	if got.Node == nil || got.Node.NodeID == "" || got.Node.NodeID != got.Room.NodeID || got.Node.WSURL == "" {
		t.Fatalf("room get of an open room shows no node:\n%s", out)
	}

	cli(t, rf, false, "room", "close", "get-1", "--reason", "match_over", "--result", `{"winner": "carol", "score": [3, 1]}`)
	got = getOut{}
	out = cli(t, rf, false, "room", "get", "get-1")
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("room get: %v\n%s", err, out)
	}
	if got.Room.CloseReason != "match_over" {
		t.Errorf("close_reason %q, want match_over:\n%s", got.Room.CloseReason, out)
	}
	var result struct {
		Winner string `json:"winner"`
		Score  []int  `json:"score"`
	}
	if err := json.Unmarshal(got.Room.CloseResult, &result); err != nil || result.Winner != "carol" || len(result.Score) != 2 {
		t.Errorf("close_result %s (%v), want the result given to close:\n%s", got.Room.CloseResult, err, out)
	}
	if got.Members == nil {
		t.Errorf("members missing:\n%s", out)
	}
}
