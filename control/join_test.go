package control

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/protocol/roomudp"
	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/tokens"
)

func TestJoinAnswer(t *testing.T) {
	e := newEnv(t)
	node := e.addNode(store.Node{NodeID: "game-e1", WSURL: "wss://game-e1.game.example.com:7001/game/v1/ws"}, true)
	id := e.room(map[string]any{"room_id": "rank-8812"})
	access := e.login("alice")
	tk := e.ticket(id, "alice", -1)

	r := e.join(access, id, tk, "join-6f2a01b7-468e")
	want(t, r, http.StatusCreated)
	wantRoom := map[string]any{"room_id": "rank-8812", "status": "open", "sync_mode": "frame", "tick_rate": 30.0, "max_players": 4.0, "reconnect_window_seconds": 60.0}
	if got := r.obj("room"); len(got) != len(wantRoom) {
		t.Errorf("room: got %v, want %v", got, wantRoom)
	}
	for k, v := range wantRoom {
		if got := r.obj("room")[k]; got != v {
			t.Errorf("room.%s: got %v, want %v", k, got, v)
		}
	}
	if m := r.obj("member"); m["seat"] != 0.0 || m["username"] != "alice" || m["status"] != "joined" || len(m) != 3 {
		t.Errorf("member: %v", m)
	}
	c := r.obj("connect")
	if c["node_id"] != "game-e1" || c["ws_url"] != "wss://game-e1.game.example.com:7001/game/v1/ws" || c["protocol_version"] != 1.0 || c["transport"] != "ws" || len(c) != 6 {
		t.Errorf("connect: %v", c)
	}
	if got, want := c["expires_at"], timeJSON(e.clock.Now().Add(60*time.Second)); got != want {
		t.Errorf("expires_at: got %v, want %v", got, want)
	}
	if !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`).MatchString(c["expires_at"].(string)) {
		t.Errorf("expires_at format: %v", c["expires_at"])
	}
	ct, err := e.signer.VerifyConnectTicket(c["connect_ticket"].(string), e.clock.Now())
	if err != nil {
		t.Fatalf("connect ticket: %v", err)
	}
	if ct.RoomID != id || ct.Seat != 0 || ct.Username != "alice" || ct.ClientSessionID != "join-6f2a01b7-468e" || ct.ID == "" {
		t.Errorf("connect ticket: %+v", ct)
	}
	if admits := node.Admits(); len(admits) != 1 || admits[0].Seat != 0 || admits[0].Username != "alice" || admits[0].Settings.RoomID != id ||
		admits[0].SessionID != ct.SessionID || admits[0].Settings.MaxPlayers == 0 {
		t.Errorf("admit: %+v", admits)
	}

	// Retry by the same login session: 200, same seat, another client
	// session id, no ticket or the same one; a fresh connect ticket.
	for i, tkt := range []string{"", tk} {
		r2 := e.join(access, id, tkt, "join-retry-0000"+string(rune('a'+i)))
		want(t, r2, http.StatusOK)
		if r2.obj("member")["seat"] != 0.0 {
			t.Errorf("retry seat: %s", r2.raw)
		}
		ct2, _ := e.signer.VerifyConnectTicket(r2.obj("connect")["connect_ticket"].(string), e.clock.Now())
		if ct2.ID == ct.ID {
			t.Error("connect ticket reused its jti")
		}
	}
	if got := e.getRoom(id).Seat(0).ClientSessionID; got != "join-retry-0000b" {
		t.Errorf("client_session_id: got %q", got)
	}
	// The room is recorded in the login session.
	sess, err := e.db.GetSession(context.Background(), ct.SessionID)
	if err != nil || len(sess.Rooms) != 1 || sess.Rooms[0].RoomID != id {
		t.Errorf("session rooms: %+v, %v", sess, err)
	}
}

// TestJoinErrors walks the C1 error table of the seed, in the spec's order.
func TestJoinErrors(t *testing.T) {
	e := newEnv(t)
	e.addNode(store.Node{NodeID: "n1"}, true)
	e.addNode(store.Node{NodeID: "dead", Region: "dead", Connections: 100}, false) // never answers
	ctx := context.Background()

	room := e.room(map[string]any{"room_id": "r1", "max_players": 2})
	open := e.room(map[string]any{"room_id": "open1", "max_players": 1, "access": "open"})
	other := e.room(map[string]any{"room_id": "other"})
	dead := e.room(map[string]any{"room_id": "dead1", "region": "dead", "access": "open"})
	closed := e.room(map[string]any{"room_id": "closed1"})
	want(t, e.server("POST", "/game/rooms/"+closed+"/close", nil), 200)

	alice, alice2, bob, carol, dave := e.login("alice"), e.login("alice"), e.login("bob"), e.login("carol"), e.login("dave")

	t.Run("401 before anything", func(t *testing.T) {
		want(t, e.do("POST", "/client/v1/game/rooms/nope/join", "", "not json"), 401, "unauthenticated")
	})
	t.Run("400 before 404", func(t *testing.T) {
		want(t, e.join(alice, "nope", "", "short"), 400, "invalid_argument")
	})
	t.Run("404", func(t *testing.T) {
		want(t, e.join(alice, "nope", "", "csid-00001"), 404, "not_found")
		want(t, e.join(alice, "bad%21id", "", "csid-00001"), 404, "not_found")
	})
	t.Run("409 room_not_open before ticket", func(t *testing.T) {
		want(t, e.join(alice, closed, "gtk_bogus", "csid-00001"), 409, "conflict", "room_not_open")
	})
	t.Run("403 without ticket", func(t *testing.T) {
		want(t, e.join(alice, room, "", "csid-00001"), 403, "permission_denied")
	})
	t.Run("403 bad tickets", func(t *testing.T) {
		expired := e.ticket(room, "alice", -1)
		e.clock.Advance(301 * time.Second)
		for name, tk := range map[string]string{
			"garbage":     "gtk_bogus",
			"not a gtk":   "hello",
			"other user":  e.ticket(room, "bob", -1),
			"other room":  e.ticket(other, "alice", -1),
			"expired":     expired,
			"random gtk_": tokens.NewJoinTicket(),
		} {
			r := e.join(alice, room, tk, "csid-00001")
			if r.status != 403 || r.code() != "permission_denied" || r.reason() != "" {
				t.Errorf("%s: got %d %s", name, r.status, r.raw)
			}
		}
	})
	t.Run("403 ticket used by another login session", func(t *testing.T) {
		tk := e.ticket(room, "alice", -1)
		want(t, e.join(alice, room, tk, "csid-00001"), 201)
		want(t, e.join(alice2, room, tk, "csid-00002"), 403, "permission_denied")
	})
	t.Run("409 joined_on_other_device", func(t *testing.T) {
		// alice holds seat 0 of r1; a fresh ticket from her other session.
		want(t, e.join(alice2, room, e.ticket(room, "alice", -1), "csid-00002"), 409, "conflict", "joined_on_other_device")
	})
	t.Run("409 seat_taken", func(t *testing.T) {
		want(t, e.join(bob, room, e.ticket(room, "bob", 0), "csid-00003"), 409, "conflict", "seat_taken")
		// A ticket for the free seat works.
		want(t, e.join(bob, room, e.ticket(room, "bob", 1), "csid-00003"), 201)
	})
	t.Run("409 room_full", func(t *testing.T) {
		want(t, e.join(carol, room, e.ticket(room, "carol", -1), "csid-00004"), 409, "conflict", "room_full")
	})
	t.Run("open room needs no ticket", func(t *testing.T) {
		want(t, e.join(carol, open, "", "csid-00004"), 201)
		want(t, e.join(dave, open, "", "csid-00005"), 409, "conflict", "room_full")
	})
	t.Run("503 game_node_unavailable", func(t *testing.T) {
		want(t, e.join(dave, dead, "", "csid-00005"), 503, "unavailable", "game_node_unavailable")
		if n := len(e.getRoom(dead).Seats); n != 0 {
			t.Fatalf("seat kept after node failure: %d seats", n)
		}
		// The node registry entry gone: also 503.
		if err := e.db.DeleteNode(ctx, "dead"); err != nil {
			t.Fatal(err)
		}
		want(t, e.join(dave, dead, "", "csid-00005"), 503, "unavailable", "game_node_unavailable")
	})
	t.Run("a failed join gives the ticket back", func(t *testing.T) {
		e.addNode(store.Node{NodeID: "dead2", Region: "dead2", Connections: 100}, false)
		r := e.room(map[string]any{"room_id": "dead2", "region": "dead2"})
		tk := e.ticket(r, "dave", -1)
		want(t, e.join(dave, r, tk, "csid-00005"), 503, "unavailable", "game_node_unavailable")
		jt, err := e.db.GetJoinTicket(ctx, hashOf(tk))
		if err != nil || jt.ConsumedBy != "" {
			t.Fatalf("ticket after failed join: %+v, %v", jt, err)
		}
	})
	t.Run("node error passed through", func(t *testing.T) {
		n := e.addNode(store.Node{NodeID: "picky", Region: "picky", Connections: 100}, true)
		n.admitErr = &store.CommandError{Code: store.CodeConflict, Message: "node is full", Reason: "room_full"}
		r := e.room(map[string]any{"room_id": "picky1", "region": "picky", "access": "open"})
		want(t, e.join(dave, r, "", "csid-00005"), 409, "conflict", "room_full")
		if n := len(e.getRoom(r).Seats); n != 0 {
			t.Fatalf("seat kept after node refusal: %d seats", n)
		}
		// The session's entry of the room is taken back out.
		at, err := e.signer.VerifyAccessToken(dave, e.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		sess, err := e.db.GetSession(ctx, at.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		if e := sess.Room(r); e != nil {
			t.Fatalf("session keeps the room the node refused: %+v", e)
		}
	})
}

// TestJoinAfterLogoutElsewhere: C1 does not read the login session that
// this process wrote at login; a logout by another control process (its
// own store.DB, its own backbone connection) still ends the session for
// C1, before the node admits anything, on a first join and on a retry.
func TestJoinAfterLogoutElsewhere(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	node := e.addNode(store.Node{NodeID: "game-l1"}, true)
	other, err := store.Open(ctx, e.connect(), store.Config{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	id := e.room(map[string]any{"room_id": "logout1", "access": "open"})
	logoutElsewhere := func(access string) {
		t.Helper()
		at, err := e.signer.VerifyAccessToken(access, e.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := other.DeleteSession(ctx, at.SessionID); err != nil {
			t.Fatal(err)
		}
	}

	// First join after the logout: 401, no seat, no admit.
	alice := e.login("alice")
	logoutElsewhere(alice)
	want(t, e.join(alice, id, "", "csid-logout-1"), http.StatusUnauthorized, "unauthenticated")
	if n := len(e.getRoom(id).Seats); n != 0 {
		t.Fatalf("a logged-out session holds a seat: %d seats", n)
	}
	if n := len(node.Admits()); n != 0 {
		t.Fatalf("the node admitted a logged-out session: %d admits", n)
	}

	// A retry of a join that succeeded, after the logout: 401.
	bob := e.login("bob")
	want(t, e.join(bob, id, "", "csid-logout-2"), http.StatusCreated)
	logoutElsewhere(bob)
	want(t, e.join(bob, id, "", "csid-logout-2"), http.StatusUnauthorized, "unauthenticated")
	if n := len(node.Admits()); n != 1 {
		t.Fatalf("admits: got %d, want 1", n)
	}

	// A ticket used in a join refused that way is given back.
	room2 := e.room(map[string]any{"room_id": "logout2"})
	tk := e.ticket(room2, "carol", -1)
	carol := e.login("carol")
	logoutElsewhere(carol)
	want(t, e.join(carol, room2, tk, "csid-logout-3"), http.StatusUnauthorized, "unauthenticated")
	want(t, e.join(e.login("carol"), room2, tk, "csid-logout-4"), http.StatusCreated)
}

func TestJoinFields(t *testing.T) {
	e := newEnv(t)
	e.addNode(store.Node{NodeID: "n1"}, true)
	id := e.room(map[string]any{"access": "open"})
	access := e.login("alice")
	path := "/client/v1/game/rooms/" + id + "/join"
	cases := []struct {
		name string
		body any
	}{
		{"empty body", nil},
		{"no client_session_id", map[string]any{"transport": "ws"}},
		{"client_session_id 7", map[string]any{"client_session_id": "1234567"}},
		{"client_session_id 65", map[string]any{"client_session_id": strings.Repeat("a", 65)}},
		{"client_session_id space", map[string]any{"client_session_id": "abcd efgh"}},
		{"client_session_id DEL", map[string]any{"client_session_id": "abcdefgh\x7f"}},
		{"client_session_id non-ASCII", map[string]any{"client_session_id": "abcdefgé"}},
		{"client_session_id number", map[string]any{"client_session_id": 12345678}},
		{"transport other", map[string]any{"client_session_id": "abcdefgh", "transport": "tcp"}},
		{"ticket number", map[string]any{"client_session_id": "abcdefgh", "ticket": 5}},
		{"ticket too long", map[string]any{"client_session_id": "abcdefgh", "ticket": strings.Repeat("g", 300)}},
		{"unknown field", map[string]any{"client_session_id": "abcdefgh", "seat": 1}},
		{"malformed", `{"client_session_id":`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want(t, e.do("POST", path, access, tc.body), 400, "invalid_argument")
		})
	}
	// Transport absent means ws; the widest client_session_id alphabet.
	want(t, e.do("POST", path, access, map[string]any{"client_session_id": "!~" + strings.Repeat("z", 62)}), 201)
}

// TestJoinUDP: when the node serves UDP, C1 returns its address, the
// ticket's id as key id and the session key derived from it
// (docs/protocol/rooms-udp.md §2–3), whatever the preference; transport
// says which channel to try first.
func TestJoinUDP(t *testing.T) {
	e := newEnv(t)
	e.addNode(store.Node{NodeID: "game-u1", UDPAddr: "[2001:db8::1]:7002"}, true)
	id := e.room(map[string]any{"access": "open", "max_players": 4})
	secret := e.signer.Derive(roomudp.SecretLabel)
	for i, pref := range []string{"udp", "ws", ""} {
		body := map[string]any{"client_session_id": fmt.Sprintf("join-udp-%d-0000", i)}
		if pref != "" {
			body["transport"] = pref
		}
		r := e.do("POST", "/client/v1/game/rooms/"+id+"/join", e.login(fmt.Sprintf("u%d", i)), body)
		want(t, r, http.StatusCreated)
		c := r.obj("connect")
		wantT := "ws"
		if pref == "udp" {
			wantT = "udp"
		}
		if c["udp"] != "[2001:db8::1]:7002" || c["transport"] != wantT || len(c) != 9 {
			t.Fatalf("prefer %q: connect %v", pref, c)
		}
		ct, err := e.signer.VerifyConnectTicket(c["connect_ticket"].(string), e.clock.Now())
		if err != nil || c["key_id"] != ct.ID {
			t.Fatalf("key_id %v, ticket id %q, %v", c["key_id"], ct.ID, err)
		}
		kid, err := roomudp.ParseKeyID(ct.ID)
		if err != nil {
			t.Fatal(err)
		}
		k := roomudp.SessionKey(&secret, kid)
		if c["session_key"] != base64.StdEncoding.EncodeToString(k[:]) {
			t.Fatalf("session_key is not the one the node derives")
		}
	}
}

// TestJoinRace sends C1 for many login sessions at once: every seat goes
// to exactly one of them.
func TestJoinRace(t *testing.T) {
	e := newEnv(t)
	e.addNode(store.Node{NodeID: "n1"}, true)
	id := e.room(map[string]any{"max_players": 4, "access": "open"})
	const players = 10
	access := make([]string, players)
	for i := range access {
		access[i] = e.login("p" + itoa(int64(i)))
	}
	var wg sync.WaitGroup
	results := make([]resp, players)
	for i := range players {
		wg.Go(func() {
			results[i] = e.join(access[i], id, "", "csid-race-"+itoa(int64(i)))
		})
	}
	wg.Wait()
	seats := map[float64]bool{}
	full := 0
	for i, r := range results {
		switch {
		case r.status == 201:
			s := r.obj("member")["seat"].(float64)
			if seats[s] {
				t.Fatalf("seat %v given twice", s)
			}
			seats[s] = true
		case r.status == 409 && r.reason() == "room_full":
			full++
		default:
			t.Fatalf("player %d: got %d %s", i, r.status, r.raw)
		}
	}
	if len(seats) != 4 || full != players-4 {
		t.Fatalf("got %d seated and %d full, want 4 and %d", len(seats), full, players-4)
	}
	if n := len(e.getRoom(id).Seats); n != 4 {
		t.Fatalf("record holds %d seats, want 4", n)
	}

	// One ticket raced by two login sessions of its user: one wins.
	room2 := e.room(map[string]any{"max_players": 4})
	tk := e.ticket(room2, "zoe", -1)
	z1, z2 := e.login("zoe"), e.login("zoe")
	var r1, r2 resp
	wg.Go(func() { r1 = e.join(z1, room2, tk, "csid-zoe-1") })
	wg.Go(func() { r2 = e.join(z2, room2, tk, "csid-zoe-2") })
	wg.Wait()
	if (r1.status == 201) == (r2.status == 201) {
		t.Fatalf("ticket race: got %d and %d, want one 201", r1.status, r2.status)
	}
	loser := r1
	if r1.status == 201 {
		loser = r2
	}
	if loser.status != 403 && !(loser.status == 409 && loser.reason() == "joined_on_other_device") {
		t.Fatalf("ticket race loser: %d %s", loser.status, loser.raw)
	}
}

func TestLeaveAndCurrent(t *testing.T) {
	e := newEnv(t)
	node := e.addNode(store.Node{NodeID: "n1"}, true)
	first := e.room(map[string]any{"room_id": "first", "access": "open"})
	second := e.room(map[string]any{"room_id": "second", "access": "open"})
	access := e.login("alice")
	cur := func() resp {
		r := e.do("GET", "/client/v1/game/current", access, nil)
		want(t, r, 200)
		return r
	}
	leave := func(id string) resp {
		r := e.do("POST", "/client/v1/game/rooms/"+id+"/leave", access, nil)
		want(t, r, 200)
		return r
	}

	if r := cur(); string(r.raw) != "{\"room\":null,\"member\":null}\n" {
		t.Fatalf("current before joining: %s", r.raw)
	}
	if r := leave(first); string(r.raw) != "{\"member\":null}\n" {
		t.Fatalf("leave before joining: %s", r.raw)
	}
	if r := leave("no-such-room"); r.body["member"] != nil {
		t.Fatalf("leave of a missing room: %s", r.raw)
	}
	want(t, e.join(access, first, "", "csid-00001"), 201)
	want(t, e.join(access, second, "", "csid-00002"), 201)
	r := cur()
	if r.obj("room")["room_id"] != second || r.obj("room")["status"] != "open" || r.obj("member")["seat"] != 0.0 || r.obj("member")["status"] != "joined" {
		t.Fatalf("current: %s", r.raw)
	}
	// The node says the seat went online.
	if _, err := e.db.UpdateRoom(context.Background(), second, func(rm *store.Room) error {
		rm.Seat(0).Status = store.SeatOnline
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if r := cur(); r.obj("member")["status"] != "online" {
		t.Fatalf("current: %s", r.raw)
	}

	want(t, e.do("POST", "/client/v1/game/rooms/"+second+"/leave", access, `{"x":1}`), 400, "invalid_argument")
	for range 2 {
		r = leave(second)
		if m := r.obj("member"); m["seat"] != 0.0 || m["username"] != "alice" || m["status"] != "left" {
			t.Fatalf("leave: %s", r.raw)
		}
	}
	if e.getRoom(second).SeatOfUser("alice") != nil {
		t.Fatal("seat still held after leave")
	}
	if !strings.Contains(strings.Join(node.Verbs(), ","), "leave") {
		t.Error("node got no leave")
	}
	// Back to the older room.
	if r := cur(); r.obj("room")["room_id"] != first {
		t.Fatalf("current after leaving the newest: %s", r.raw)
	}
	// Closed rooms do not count.
	want(t, e.server("POST", "/game/rooms/"+first+"/close", nil), 200)
	if r := cur(); r.body["room"] != nil || r.body["member"] != nil {
		t.Fatalf("current after close: %s", r.raw)
	}
	// Another login session of the same user sees nothing.
	other := e.login("alice")
	r = e.do("GET", "/client/v1/game/current", other, nil)
	if r.body["room"] != nil {
		t.Fatalf("other session's current: %s", r.raw)
	}
}

func TestLeaveWithoutNode(t *testing.T) {
	e := newEnv(t)
	e.addNode(store.Node{NodeID: "n1"}, true)
	id := e.room(map[string]any{"access": "open"})
	access := e.login("alice")
	want(t, e.join(access, id, "", "csid-00001"), 201)
	// The room's node stops answering.
	if _, err := e.db.UpdateRoom(context.Background(), id, func(r *store.Room) error {
		r.NodeID = "gone"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	r := e.do("POST", "/client/v1/game/rooms/"+id+"/leave", access, nil)
	want(t, r, 200)
	if r.obj("member")["status"] != "left" || len(e.getRoom(id).Seats) != 0 {
		t.Fatalf("leave without node: %s, seats %v", r.raw, e.getRoom(id).Seats)
	}
	// A kicked player's ticket does not seat them again.
	room := e.room(map[string]any{})
	tk := e.ticket(room, "alice", -1)
	want(t, e.join(access, room, tk, "csid-00001"), 201)
	want(t, e.server("POST", "/game/rooms/"+room+"/members/0/kick", nil), 200)
	want(t, e.join(access, room, tk, "csid-00001"), 403, "permission_denied")
}

func TestJoinRateLimit(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.JoinRate, c.JoinBurst = 1, 2 })
	e.addNode(store.Node{NodeID: "n1"}, true)
	id := e.room(map[string]any{"access": "open"})
	access := e.login("alice")
	want(t, e.join(access, id, "", "csid-00001"), 201)
	want(t, e.join(access, id, "", "csid-00001"), 200)
	r := e.join(access, id, "", "csid-00001")
	want(t, r, 429, "rate_limited")
	if got := r.header.Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After %q, want 1", got)
	}
	// Per login session: another one is not limited.
	want(t, e.join(e.login("bob"), id, "", "csid-00002"), 201)
}
