package control

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/control/internal/httpapi"
	"github.com/switchboardgg/switchboard/store"
)

func TestCreateRoom(t *testing.T) {
	e := newEnv(t)
	e.addNode(store.Node{NodeID: "n1"}, true)

	r := e.server("POST", "/game/rooms", map[string]any{
		"room_id": "rank-8812", "sync_mode": "frame", "tick_rate": 30, "max_players": 4, "start_mode": "manual",
		"metadata": map[string]any{"map": "desert"}, "snapshot_interval_frames": 300,
	})
	want(t, r, http.StatusCreated)
	room := r.obj("room")
	wantFields := map[string]any{
		"room_id": "rank-8812", "status": "open", "state": "waiting", "sync_mode": "frame", "tick_rate": 30.0,
		"max_players": 4.0, "start_mode": "manual", "access": "ticket", "reconnect_window_seconds": 60.0,
		"max_duration_seconds": 3600.0, "snapshot_interval_frames": 300.0, "node_id": "n1",
		"created_at": timeJSON(e.clock.Now()),
	}
	for k, v := range wantFields {
		if room[k] != v {
			t.Errorf("room.%s: got %v, want %v", k, room[k], v)
		}
	}
	if m, _ := room["metadata"].(map[string]any); m["map"] != "desert" {
		t.Errorf("metadata: got %v", room["metadata"])
	}
	want(t, e.server("POST", "/game/rooms", map[string]any{"room_id": "rank-8812", "sync_mode": "relay", "max_players": 2, "start_mode": "auto"}), 409, "conflict")

	// Generated id; relay rooms have tick_rate 0.
	r = e.server("POST", "/game/rooms", map[string]any{"sync_mode": "relay", "max_players": 16, "start_mode": "auto", "access": "open",
		"reconnect_window_seconds": 0, "max_duration_seconds": 86400, "region": "eu-west"})
	want(t, r, 503, "unavailable", "game_node_unavailable") // no node in eu-west
	r = e.server("POST", "/game/rooms", map[string]any{"sync_mode": "relay", "tick_rate": 0, "max_players": 16, "start_mode": "auto", "access": "open",
		"reconnect_window_seconds": 600, "max_duration_seconds": 86400})
	want(t, r, 201)
	room = r.obj("room")
	if id, _ := room["room_id"].(string); !httpapi.ValidRoomID(id) || room["tick_rate"] != 0.0 || room["access"] != "open" || room["reconnect_window_seconds"] != 600.0 {
		t.Errorf("room: %s", r.raw)
	}
}

func TestCreateRoomValidation(t *testing.T) {
	e := newEnv(t)
	e.addNode(store.Node{NodeID: "n1"}, false)
	ok := func(kv ...any) map[string]any {
		b := map[string]any{"sync_mode": "frame", "tick_rate": 30, "max_players": 4, "start_mode": "auto"}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(b, kv[i].(string))
			} else {
				b[kv[i].(string)] = kv[i+1]
			}
		}
		return b
	}
	bigMeta := map[string]any{"x": strings.Repeat("a", 4100)}
	cases := []struct {
		name string
		body map[string]any
	}{
		{"room_id empty string is generated, so a bad char", ok("room_id", "a b")},
		{"room_id too long", ok("room_id", strings.Repeat("r", 65))},
		{"room_id dot", ok("room_id", "a.b")},
		{"room_id slash", ok("room_id", "a/b")},
		{"no sync_mode", ok("sync_mode", nil)},
		{"bad sync_mode", ok("sync_mode", "lockstep")},
		{"frame without tick_rate", ok("tick_rate", nil)},
		{"tick_rate 0", ok("tick_rate", 0)},
		{"tick_rate 61", ok("tick_rate", 61)},
		{"tick_rate negative", ok("tick_rate", -1)},
		{"relay with tick_rate", ok("sync_mode", "relay", "tick_rate", 30)},
		{"no max_players", ok("max_players", nil)},
		{"max_players 0", ok("max_players", 0)},
		{"max_players 17", ok("max_players", 17)},
		{"no start_mode", ok("start_mode", nil)},
		{"bad start_mode", ok("start_mode", "now")},
		{"bad access", ok("access", "public")},
		{"reconnect_window negative", ok("reconnect_window_seconds", -1)},
		{"reconnect_window 601", ok("reconnect_window_seconds", 601)},
		{"max_duration 0", ok("max_duration_seconds", 0)},
		{"max_duration over cap", ok("max_duration_seconds", 86401)},
		{"snapshot negative", ok("snapshot_interval_frames", -1)},
		{"snapshot over cap", ok("tick_rate", 60, "snapshot_interval_frames", 3601)},
		{"snapshot over 60 s of ticks", ok("tick_rate", 10, "snapshot_interval_frames", 601)},
		{"bad region", ok("region", "eu west")},
		{"metadata array", ok("metadata", []any{1})},
		{"metadata string", ok("metadata", "x")},
		{"metadata too large", ok("metadata", bigMeta)},
		{"unknown field", ok("colour", "red")},
		{"tick_rate string", ok("tick_rate", "30")},
		{"max_players float", ok("max_players", 2.5)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want(t, e.server("POST", "/game/rooms", tc.body), 400, "invalid_argument")
		})
	}
	// The limits themselves are accepted.
	want(t, e.server("POST", "/game/rooms", ok("tick_rate", 60, "max_players", 16, "max_duration_seconds", 86400,
		"snapshot_interval_frames", 3600, "reconnect_window_seconds", 600, "room_id", strings.Repeat("r", 64),
		"metadata", map[string]any{"x": strings.Repeat("a", 4000)})), 201)
	want(t, e.server("POST", "/game/rooms", ok("tick_rate", 1, "max_players", 1, "metadata", nil, "room_id", "A_-9")), 201)
	want(t, e.server("POST", "/game/rooms", ok("tick_rate", 10, "snapshot_interval_frames", 600, "room_id", "snap-10hz")), 201)
}

func TestNodeChoice(t *testing.T) {
	e := newEnv(t)
	want(t, e.server("POST", "/game/rooms", map[string]any{"sync_mode": "relay", "max_players": 2, "start_mode": "auto"}), 503, "unavailable", "game_node_unavailable")

	e.addNode(store.Node{NodeID: "busy", Connections: 50, Rooms: 3, Region: "eu"}, false)
	e.addNode(store.Node{NodeID: "idle", Connections: 1, Rooms: 9, Region: "eu"}, false)
	e.addNode(store.Node{NodeID: "idle2", Connections: 1, Rooms: 2, Region: "us"}, false)
	e.addNode(store.Node{NodeID: "draining", Connections: 0, Region: "eu", Draining: true}, false)
	cases := []struct{ region, want string }{
		{"", "idle2"},
		{"eu", "idle"},
		{"us", "idle2"},
	}
	for _, tc := range cases {
		body := map[string]any{"sync_mode": "relay", "max_players": 2, "start_mode": "auto"}
		if tc.region != "" {
			body["region"] = tc.region
		}
		r := e.server("POST", "/game/rooms", body)
		want(t, r, 201)
		if got := r.obj("room")["node_id"]; got != tc.want {
			t.Errorf("region %q: got node %v, want %s", tc.region, got, tc.want)
		}
	}
	want(t, e.server("POST", "/game/rooms", map[string]any{"sync_mode": "relay", "max_players": 2, "start_mode": "auto", "region": "ap"}), 503, "unavailable", "game_node_unavailable")
}

func TestGetAndListRooms(t *testing.T) {
	e := newEnv(t)
	e.addNode(store.Node{NodeID: "n1", WSURL: "ws://127.0.0.1:7001/game/v1/ws", Region: "eu"}, true)
	id := e.room(map[string]any{"room_id": "r-get", "access": "open"})
	access := e.login("alice")
	want(t, e.join(access, id, "", "csid-0001"), 201)

	r := e.server("GET", "/game/rooms/r-get", nil)
	want(t, r, 200)
	if r.obj("room")["room_id"] != "r-get" {
		t.Fatalf("room: %s", r.raw)
	}
	members, _ := r.body["members"].([]any)
	if len(members) != 1 {
		t.Fatalf("members: %s", r.raw)
	}
	m := members[0].(map[string]any)
	if m["seat"] != 0.0 || m["username"] != "alice" || m["status"] != "joined" {
		t.Errorf("member: %v", m)
	}
	if n := r.obj("node"); n["node_id"] != "n1" || n["ws_url"] != "ws://127.0.0.1:7001/game/v1/ws" || n["region"] != "eu" {
		t.Errorf("node: %v", n)
	}
	want(t, e.server("GET", "/game/rooms/missing", nil), 404, "not_found")
	want(t, e.server("GET", "/game/rooms/bad%20id", nil), 404, "not_found")

	// Five more rooms, two of them closed.
	for _, x := range []string{"r-a", "r-b", "r-c", "r-d", "r-e"} {
		e.room(map[string]any{"room_id": x})
	}
	for _, x := range []string{"r-b", "r-d"} {
		want(t, e.server("POST", "/game/rooms/"+x+"/close", nil), 200)
	}
	var seen []string
	token := ""
	for page := 0; ; page++ {
		q := "/game/rooms?limit=2"
		if token != "" {
			q += "&page_token=" + token
		}
		r := e.server("GET", q, nil)
		want(t, r, 200)
		rooms, _ := r.body["rooms"].([]any)
		if len(rooms) > 2 {
			t.Fatalf("page of %d rooms, limit 2", len(rooms))
		}
		for _, x := range rooms {
			seen = append(seen, x.(map[string]any)["room_id"].(string))
		}
		token, _ = r.body["next_page_token"].(string)
		if token == "" {
			break
		}
		if page > 10 {
			t.Fatal("pagination does not end")
		}
	}
	if got := strings.Join(seen, ","); got != "r-a,r-b,r-c,r-d,r-e,r-get" {
		t.Errorf("all rooms: got %s", got)
	}
	r = e.server("GET", "/game/rooms?status=closed", nil)
	want(t, r, 200)
	if rooms, _ := r.body["rooms"].([]any); len(rooms) != 2 {
		t.Errorf("closed rooms: %s", r.raw)
	}
	r = e.server("GET", "/game/rooms?status=open", nil)
	if rooms, _ := r.body["rooms"].([]any); len(rooms) != 4 {
		t.Errorf("open rooms: %s", r.raw)
	}
	for _, q := range []string{"?status=gone", "?limit=0", "?limit=201", "?limit=x", "?page_token=***", "?page_token=" + strings.Repeat("A", 600)} {
		want(t, e.server("GET", "/game/rooms"+q, nil), 400, "invalid_argument")
	}
}

func TestTickets(t *testing.T) {
	e := newEnv(t)
	e.addNode(store.Node{NodeID: "n1"}, true)
	id := e.room(map[string]any{"room_id": "r-t", "max_players": 2})
	r := e.server("POST", "/game/rooms/r-t/tickets", map[string]any{"username": "alice"})
	want(t, r, 201)
	tk, _ := r.body["ticket"].(string)
	if !strings.HasPrefix(tk, "gtk_") || len(tk) != 47 {
		t.Errorf("ticket: %q", tk)
	}
	if got, want := r.body["expires_at"], timeJSON(e.clock.Now().Add(300*time.Second)); got != want {
		t.Errorf("expires_at: got %v, want %v", got, want)
	}
	// Stored hashed, never in clear.
	jt, err := e.db.GetJoinTicket(context.Background(), hashOf(tk))
	if err != nil || jt.RoomID != id || jt.Username != "alice" || jt.Seat != nil {
		t.Fatalf("stored ticket: %+v, %v", jt, err)
	}
	r = e.server("POST", "/game/rooms/r-t/tickets", map[string]any{"username": "bob", "seat": 1, "ttl_seconds": 86400})
	want(t, r, 201)
	if got, want := r.body["expires_at"], timeJSON(e.clock.Now().Add(24*time.Hour)); got != want {
		t.Errorf("expires_at: got %v, want %v", got, want)
	}

	bad := []map[string]any{
		{},
		{"username": ""},
		{"username": "a:b"},
		{"username": "alice", "seat": -1},
		{"username": "alice", "seat": 2}, // max_players 2
		{"username": "alice", "seat": 16},
		{"username": "alice", "ttl_seconds": 0},
		{"username": "alice", "ttl_seconds": 86401},
		{"username": "alice", "seat": "0"},
		{"username": "alice", "room": "r-t"},
	}
	for _, b := range bad {
		want(t, e.server("POST", "/game/rooms/r-t/tickets", b), 400, "invalid_argument")
	}
	want(t, e.server("POST", "/game/rooms/nope/tickets", map[string]any{"username": "alice"}), 404, "not_found")
	want(t, e.server("POST", "/game/rooms/r-t/close", nil), 200)
	want(t, e.server("POST", "/game/rooms/r-t/tickets", map[string]any{"username": "alice"}), 409, "conflict", "room_not_open")
}

func TestStartCloseKick(t *testing.T) {
	e := newEnv(t)
	node := e.addNode(store.Node{NodeID: "n1"}, true)
	id := e.room(map[string]any{"room_id": "r-m", "start_mode": "manual", "access": "open"})
	auto := e.room(map[string]any{"room_id": "r-auto", "start_mode": "auto"})

	want(t, e.server("POST", "/game/rooms/"+auto+"/start", nil), 409, "conflict", "not_manual")
	want(t, e.server("POST", "/game/rooms/nope/start", nil), 404, "not_found")
	want(t, e.server("POST", "/game/rooms/"+id+"/start", `{"x":1}`), 400, "invalid_argument")
	r := e.server("POST", "/game/rooms/"+id+"/start", nil)
	want(t, r, 200)
	if r.obj("room")["state"] != "playing" {
		t.Errorf("after start: %s", r.raw)
	}
	want(t, e.server("POST", "/game/rooms/"+id+"/start", "{}"), 409, "conflict", "already_started")

	// Kick.
	alice, bob := e.login("alice"), e.login("bob")
	want(t, e.join(alice, id, "", "csid-alice"), 201)
	want(t, e.join(bob, id, "", "csid-bob01"), 201)
	want(t, e.server("POST", "/game/rooms/"+id+"/members/3/kick", nil), 404, "not_found")
	for _, seat := range []string{"x", "-1", "16", "1.0"} {
		want(t, e.server("POST", "/game/rooms/"+id+"/members/"+seat+"/kick", nil), 400, "invalid_argument")
	}
	want(t, e.server("POST", "/game/rooms/"+id+"/members/1/kick", map[string]any{"reason": strings.Repeat("x", 65)}), 400, "invalid_argument")
	r = e.server("POST", "/game/rooms/"+id+"/members/1/kick", map[string]any{"reason": "cheating"})
	want(t, r, 200)
	if e.getRoom(id).Seat(1) != nil {
		t.Fatal("kicked seat still held")
	}
	want(t, e.server("POST", "/game/rooms/"+id+"/members/1/kick", nil), 404, "not_found")

	// Close.
	for _, b := range []map[string]any{{"reason": strings.Repeat("r", 65)}, {"reason": "a\nb"},
		{"result": map[string]any{"x": strings.Repeat("a", 16400)}}, {"reason": 3}, {"why": "x"}} {
		want(t, e.server("POST", "/game/rooms/"+id+"/close", b), 400, "invalid_argument")
	}
	r = e.server("POST", "/game/rooms/"+id+"/close", map[string]any{"result": map[string]any{"winner": "alice"}})
	want(t, r, 200)
	if got := r.obj("room"); got["status"] != "closed" || got["close_reason"] != "closed_by_server" {
		t.Errorf("after close: %s", r.raw)
	}
	if rec := e.getRoom(id); string(rec.CloseResult) != `{"winner":"alice"}` {
		t.Errorf("close result: %s", rec.CloseResult)
	}
	// Again: 200, first reason kept.
	r = e.server("POST", "/game/rooms/"+id+"/close", map[string]any{"reason": "other"})
	want(t, r, 200)
	if r.obj("room")["close_reason"] != "closed_by_server" {
		t.Errorf("second close: %s", r.raw)
	}
	want(t, e.server("POST", "/game/rooms/"+id+"/start", nil), 409, "conflict", "room_not_open")
	want(t, e.server("POST", "/game/rooms/"+id+"/members/0/kick", nil), 409, "conflict", "room_not_open")
	want(t, e.join(alice, id, "", "csid-alice"), 409, "conflict", "room_not_open")

	verbs := strings.Join(node.Verbs(), ",")
	for _, v := range []string{"start", "kick", "close"} {
		if !strings.Contains(verbs, v) {
			t.Errorf("node got %s, missing %s", verbs, v)
		}
	}
}

func TestCommandsWithoutNode(t *testing.T) {
	e := newEnv(t)
	e.addNode(store.Node{NodeID: "n1"}, false) // registered, answers nothing
	id := e.room(map[string]any{"room_id": "r-x", "start_mode": "manual"})
	want(t, e.server("POST", "/game/rooms/"+id+"/start", nil), 503, "unavailable", "game_node_unavailable")

	// A seat taken directly, as if the node had gone away later.
	ctx := context.Background()
	if _, err := e.db.UpdateRoom(ctx, id, func(r *store.Room) error {
		r.PutSeat(store.Seat{Seat: 2, Username: "zed", SessionID: "sess-z", Status: store.SeatOnline})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want(t, e.server("POST", "/game/rooms/"+id+"/members/2/kick", nil), 200)
	if e.getRoom(id).Seat(2) != nil {
		t.Fatal("seat not released without the node")
	}
	r := e.server("POST", "/game/rooms/"+id+"/close", map[string]any{"reason": "maintenance"})
	want(t, r, 200)
	if got := r.obj("room"); got["status"] != "closed" || got["close_reason"] != "maintenance" {
		t.Errorf("close without node: %s", r.raw)
	}
}

func TestRoomExpiry(t *testing.T) {
	e := newEnv(t)
	e.addNode(store.Node{NodeID: "n1"}, true)
	id := e.room(map[string]any{"room_id": "r-exp", "max_duration_seconds": 60, "access": "open"})
	access := e.login("alice")
	e.clock.Advance(59 * time.Second)
	want(t, e.join(access, id, "", "csid-00001"), 201)
	e.clock.Advance(time.Second)
	r := e.server("GET", "/game/rooms/"+id, nil)
	want(t, r, 200)
	if got := r.obj("room"); got["status"] != "closed" || got["close_reason"] != "expired" {
		t.Errorf("expired room: %s", r.raw)
	}
	want(t, e.join(access, id, "", "csid-00001"), 409, "conflict", "room_not_open")
	r = e.do("GET", "/client/v1/game/current", access, nil)
	want(t, r, 200)
	if r.body["room"] != nil {
		t.Errorf("current after expiry: %s", r.raw)
	}
	// Closed rooms are deleted 24 h after closing.
	e.clock.Advance(24*time.Hour + time.Second)
	want(t, e.server("GET", "/game/rooms/"+id, nil), 404, "not_found")
}
