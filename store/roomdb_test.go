package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/backbone"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var discard = slog.New(slog.DiscardHandler)

// env is an embedded NATS server of one test.
type env struct {
	t   *testing.T
	srv *backbone.Embedded
}

func newEnv(t *testing.T) *env {
	t.Helper()
	srv, err := backbone.StartEmbedded(backbone.EmbeddedConfig{DataDir: t.TempDir(), Logger: discard})
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	t.Cleanup(srv.Shutdown)
	return &env{t: t, srv: srv}
}

// conn opens a connection, closed at the end of the test.
func (e *env) conn() *backbone.Conn {
	e.t.Helper()
	c, err := backbone.Connect(context.Background(), backbone.Config{
		URL: e.srv.ClientURL(), CredentialsFile: e.srv.CredentialsFile(), Logger: discard, RequestTimeout: 300 * time.Millisecond,
	})
	if err != nil {
		e.t.Fatalf("Connect: %v", err)
	}
	e.t.Cleanup(c.Close)
	return c
}

// db opens a DB on a connection of its own.
func (e *env) db(cfg Config) *DB {
	e.t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = discard
	}
	db, err := Open(context.Background(), e.conn(), cfg)
	if err != nil {
		e.t.Fatalf("Open: %v", err)
	}
	return db
}

func newRoom(id string) *Room {
	return &Room{
		RoomID: id, Status: StatusOpen, State: StateWaiting, SyncMode: SyncFrame,
		TickRate: 20, MaxPlayers: 4, StartMode: StartAllReady, Access: AccessTicket,
		ReconnectWindowSeconds: 60, MaxDurationSeconds: 3600,
		CreatedAt: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), NodeID: "node-1",
	}
}

func TestConfigDefaults(t *testing.T) {
	db := newEnv(t).db(Config{})
	got := db.cfg
	if got.Prefix != "sb" || got.Replicas != 1 || got.SessionTTL != 30*24*time.Hour ||
		got.TicketTTL != 24*time.Hour || got.NodeTTL != 15*time.Second ||
		got.MaxRetries != DefaultMaxRetries || got.MaxRecordBytes != 64<<10 ||
		got.Now == nil || got.Logger == nil {
		t.Errorf("defaults not applied: %+v", got)
	}
	ctx := context.Background()
	for _, b := range []struct {
		name string
		ttl  time.Duration
	}{
		{"sb_rooms", 0}, {"sb_sessions", DefaultSessionTTL}, {"sb_tickets", DefaultTicketTTL},
		{"sb_nodes", DefaultNodeTTL}, {"sb_config", 0},
	} {
		st, err := bucketStatus(ctx, db, b.name)
		if err != nil {
			t.Errorf("bucket %s: %v", b.name, err)
			continue
		}
		if st.TTL() != b.ttl {
			t.Errorf("bucket %s TTL = %v, want %v", b.name, st.TTL(), b.ttl)
		}
	}
}

func TestRoomCreateGet(t *testing.T) {
	db := newEnv(t).db(Config{})
	ctx := context.Background()
	r := newRoom("r1")
	r.Metadata = json.RawMessage(`{"map":"dust"}`)
	r.PutSeat(Seat{Seat: 2, Username: "bob", SessionID: "s2", Status: SeatJoined})
	r.Seats = append(r.Seats, Seat{Seat: 0, Username: "alice", SessionID: "s1", Status: SeatOnline})
	if err := db.CreateRoom(ctx, r); err != nil {
		t.Fatalf("CreateRoom: %v", err)
	}
	if r.Seats[0].Seat != 2 {
		t.Errorf("CreateRoom changed the caller's room")
	}
	if err := db.CreateRoom(ctx, newRoom("r1")); !errors.Is(err, ErrExists) {
		t.Errorf("second CreateRoom: got %v, want ErrExists", err)
	}
	got, err := db.GetRoom(ctx, "r1")
	if err != nil {
		t.Fatalf("GetRoom: %v", err)
	}
	if len(got.Seats) != 2 || got.Seats[0].Username != "alice" || got.Seats[1].Username != "bob" {
		t.Errorf("seats = %+v, want alice at 0 then bob at 2", got.Seats)
	}
	if string(got.Metadata) != `{"map":"dust"}` || !got.CreatedAt.Equal(r.CreatedAt) || got.NodeID != "node-1" {
		t.Errorf("room = %+v, want the fields stored", got)
	}

	for _, tc := range []struct {
		name string
		err  error
		call func() error
	}{
		{"get missing", ErrNotFound, func() error { _, err := db.GetRoom(ctx, "nope"); return err }},
		{"get invalid id", ErrNotFound, func() error { _, err := db.GetRoom(ctx, "a.b"); return err }},
		{"update missing", ErrNotFound, func() error {
			_, err := db.UpdateRoom(ctx, "nope", func(*Room) error { return nil })
			return err
		}},
		{"create invalid id", ErrInvalidID, func() error { return db.CreateRoom(ctx, newRoom("a b")) }},
		{"create empty id", ErrInvalidID, func() error { return db.CreateRoom(ctx, newRoom("")) }},
		{"create long id", ErrInvalidID, func() error { return db.CreateRoom(ctx, newRoom(strings.Repeat("x", MaxIDLength+1))) }},
		{"create too large", ErrTooLarge, func() error {
			r := newRoom("big")
			r.Metadata = json.RawMessage(`"` + strings.Repeat("x", DefaultMaxRecordBytes) + `"`)
			return db.CreateRoom(ctx, r)
		}},
		{"update too large", ErrTooLarge, func() error {
			_, err := db.UpdateRoom(ctx, "r1", func(r *Room) error {
				r.CloseResult = json.RawMessage(`"` + strings.Repeat("x", DefaultMaxRecordBytes) + `"`)
				return nil
			})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); !errors.Is(err, tc.err) {
				t.Errorf("got %v, want %v", err, tc.err)
			}
		})
	}

	if err := db.DeleteRoom(ctx, "r1"); err != nil {
		t.Fatalf("DeleteRoom: %v", err)
	}
	if err := db.DeleteRoom(ctx, "r1"); err != nil {
		t.Errorf("DeleteRoom of a deleted room: %v", err)
	}
	if _, err := db.GetRoom(ctx, "r1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetRoom after delete: got %v, want ErrNotFound", err)
	}
	if err := db.CreateRoom(ctx, newRoom("r1")); err != nil {
		t.Errorf("CreateRoom after delete: %v", err)
	}
}

func TestUpdateRoom(t *testing.T) {
	e := newEnv(t)
	db := e.db(Config{})
	ctx := context.Background()
	if err := db.CreateRoom(ctx, newRoom("r1")); err != nil {
		t.Fatal(err)
	}

	t.Run("fn error returned as is", func(t *testing.T) {
		want := errors.New("room full")
		if _, err := db.UpdateRoom(ctx, "r1", func(*Room) error { return want }); err != want {
			t.Errorf("got %v, want the fn's error itself", err)
		}
	})
	t.Run("id change refused", func(t *testing.T) {
		if _, err := db.UpdateRoom(ctx, "r1", func(r *Room) error { r.RoomID = "r2"; return nil }); err == nil {
			t.Errorf("got nil, want an error")
		}
	})
	t.Run("result sorted and stored", func(t *testing.T) {
		got, err := db.UpdateRoom(ctx, "r1", func(r *Room) error {
			r.Seats = append(r.Seats, Seat{Seat: 3, Username: "c"}, Seat{Seat: 1, Username: "a"})
			r.State = StatePlaying
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		stored, err := db.GetRoom(ctx, "r1")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range []*Room{got, stored} {
			if r.State != StatePlaying || len(r.Seats) != 2 || r.Seats[0].Seat != 1 || r.Seats[1].Seat != 3 {
				t.Errorf("room = %+v, want playing with seats 1, 3", r)
			}
		}
	})
	t.Run("conflict retried", func(t *testing.T) {
		other := e.db(Config{})
		calls := 0
		_, err := db.UpdateRoom(ctx, "r1", func(r *Room) error {
			calls++
			if calls == 1 { // someone else writes between our read and write
				if _, err := other.UpdateRoom(ctx, "r1", func(r *Room) error { r.TickRate = 30; return nil }); err != nil {
					return err
				}
			}
			r.MaxPlayers = 8
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := db.GetRoom(ctx, "r1")
		if calls != 2 || got.TickRate != 30 || got.MaxPlayers != 8 {
			t.Errorf("calls = %d, room tick %d max %d; want 2 calls and both writes kept", calls, got.TickRate, got.MaxPlayers)
		}
	})
	t.Run("too many conflicts", func(t *testing.T) {
		one := e.db(Config{MaxRetries: 1})
		_, err := one.UpdateRoom(ctx, "r1", func(r *Room) error {
			if _, err := db.UpdateRoom(ctx, "r1", func(r *Room) error { r.TickRate++; return nil }); err != nil {
				return err
			}
			return nil
		})
		if !errors.Is(err, ErrConflict) {
			t.Errorf("got %v, want ErrConflict", err)
		}
	})
}

// TestUpdateRoomConcurrent: two processes each change the room 50 times;
// all 100 changes land.
func TestUpdateRoomConcurrent(t *testing.T) {
	e := newEnv(t)
	dbs := []*DB{e.db(Config{}), e.db(Config{})}
	ctx := context.Background()
	if err := dbs[0].CreateRoom(ctx, newRoom("r1")); err != nil {
		t.Fatal(err)
	}
	const n = 50
	var wg sync.WaitGroup
	for g, db := range dbs {
		wg.Go(func() {
			for i := range n {
				_, err := db.UpdateRoom(ctx, "r1", func(r *Room) error {
					r.SnapshotIntervalFrames++ // the counter
					r.PutSeat(Seat{Seat: g, Username: fmt.Sprintf("u%d", g), Status: SeatOnline, ConnectedAt: ptr(time.Unix(int64(i), 0))})
					return nil
				})
				if err != nil {
					t.Errorf("db %d update %d: %v", g, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	got, err := dbs[0].GetRoom(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if got.SnapshotIntervalFrames != 2*n {
		t.Errorf("counter = %d, want %d", got.SnapshotIntervalFrames, 2*n)
	}
	if len(got.Seats) != 2 || got.Seats[0].ConnectedAt.Unix() != n-1 || got.Seats[1].ConnectedAt.Unix() != n-1 {
		t.Errorf("seats = %+v, want both at their last change", got.Seats)
	}
}

func ptr[T any](v T) *T { return &v }

func TestListRooms(t *testing.T) {
	db := newEnv(t).db(Config{})
	ctx := context.Background()
	// 7 rooms, created out of order; r1, r4 closed.
	ids := []string{"r5", "r2", "r7", "r1", "r3", "r6", "r4"}
	for _, id := range ids {
		r := newRoom(id)
		if id == "r1" || id == "r4" {
			r.Status = StatusClosed
		}
		if err := db.CreateRoom(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	list := func(t *testing.T, opts ListOptions) []string {
		t.Helper()
		var got []string
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatalf("paging does not end")
			}
			rooms, next, err := db.ListRooms(ctx, opts)
			if err != nil {
				t.Fatalf("ListRooms(%+v): %v", opts, err)
			}
			if opts.Limit > 0 && len(rooms) > opts.Limit {
				t.Errorf("page of %d rooms, limit %d", len(rooms), opts.Limit)
			}
			var page []string
			for _, r := range rooms {
				page = append(page, r.RoomID)
			}
			got = append(got, strings.Join(page, ","))
			if next == "" {
				return got
			}
			opts.PageToken = next
		}
	}
	for _, tc := range []struct {
		name string
		opts ListOptions
		want []string
	}{
		{"all", ListOptions{}, []string{"r1,r2,r3,r4,r5,r6,r7"}},
		{"pages of 3", ListOptions{Limit: 3}, []string{"r1,r2,r3", "r4,r5,r6", "r7"}},
		{"exact pages", ListOptions{Limit: 7}, []string{"r1,r2,r3,r4,r5,r6,r7"}},
		{"open, pages of 2", ListOptions{Status: StatusOpen, Limit: 2}, []string{"r2,r3", "r5,r6", "r7"}},
		{"closed", ListOptions{Status: StatusClosed}, []string{"r1,r4"}},
		{"closed, pages of 2", ListOptions{Status: StatusClosed, Limit: 2}, []string{"r1,r4", ""}},
		{"closing", ListOptions{Status: StatusClosing}, []string{""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := list(t, tc.opts)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("pages = %q, want %q", got, tc.want)
			}
		})
	}
	for _, tok := range []string{"!!!", "YS5i" /* "a.b" */} {
		if _, _, err := db.ListRooms(ctx, ListOptions{PageToken: tok}); !errors.Is(err, ErrInvalidPageToken) {
			t.Errorf("ListRooms(token %q): got %v, want ErrInvalidPageToken", tok, err)
		}
	}
}

func TestListRoomsEmpty(t *testing.T) {
	db := newEnv(t).db(Config{})
	rooms, next, err := db.ListRooms(context.Background(), ListOptions{})
	if err != nil || len(rooms) != 0 || next != "" {
		t.Errorf("ListRooms on an empty bucket = %v, %q, %v; want nothing", rooms, next, err)
	}
}

func TestSessions(t *testing.T) {
	db := newEnv(t).db(Config{})
	ctx := context.Background()
	s := &Session{SessionID: "s1", Username: "alice", RefreshHash: strings.Repeat("ab", 32),
		CreatedAt: time.Unix(1, 0).UTC(), ExpiresAt: time.Unix(2, 0).UTC()}
	if err := db.CreateSession(ctx, s); err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	if err := db.CreateSession(ctx, s); !errors.Is(err, ErrExists) {
		t.Errorf("second CreateSession: got %v, want ErrExists", err)
	}
	for i := range MaxSessionRooms + 5 {
		_, err := db.UpdateSession(ctx, "s1", func(s *Session) error {
			s.PutRoom(SessionRoom{RoomID: fmt.Sprintf("room%d", i), Seat: i % 4, Username: "alice"})
			return nil
		})
		if err != nil {
			t.Fatalf("UpdateSession %d: %v", i, err)
		}
	}
	got, err := db.GetSession(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	last := fmt.Sprintf("room%d", MaxSessionRooms+4)
	if len(got.Rooms) != MaxSessionRooms || got.Rooms[0].RoomID != last || got.Username != "alice" || got.RefreshHash != s.RefreshHash {
		t.Errorf("session has %d rooms, first %q; want %d, first %q", len(got.Rooms), got.Rooms[0].RoomID, MaxSessionRooms, last)
	}
	if err := db.DeleteSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetSession(ctx, "s1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetSession after delete: got %v, want ErrNotFound", err)
	}
	if _, err := db.UpdateSession(ctx, "s1", func(*Session) error { return nil }); !errors.Is(err, ErrNotFound) {
		t.Errorf("UpdateSession after delete: got %v, want ErrNotFound", err)
	}
}

func TestJoinTicketConsumedOnce(t *testing.T) {
	db := newEnv(t).db(Config{})
	ctx := context.Background()
	hash := strings.Repeat("0f", 32)
	if err := db.PutJoinTicket(ctx, hash, &JoinTicket{RoomID: "r1", Username: "alice", Seat: ptr(2), ExpiresAt: time.Now().Add(time.Minute)}); err != nil {
		t.Fatalf("PutJoinTicket: %v", err)
	}
	if err := db.PutJoinTicket(ctx, hash, &JoinTicket{}); !errors.Is(err, ErrExists) {
		t.Errorf("second PutJoinTicket: got %v, want ErrExists", err)
	}
	errUsed := errors.New("ticket used")
	consume := func(session string) error {
		_, err := db.UpdateJoinTicket(ctx, hash, func(tk *JoinTicket) error {
			if tk.ConsumedBy != "" && tk.ConsumedBy != session {
				return errUsed
			}
			tk.ConsumedBy, tk.ConsumedAt = session, ptr(time.Now())
			return nil
		})
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = consume(fmt.Sprintf("s%d", i)) })
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case err != errUsed:
			t.Errorf("consume: %v", err)
		}
	}
	tk, err := db.GetJoinTicket(ctx, hash)
	if err != nil {
		t.Fatal(err)
	}
	if ok != 1 || tk.ConsumedBy == "" || tk.Seat == nil || *tk.Seat != 2 {
		t.Errorf("%d consumers succeeded, ticket %+v; want exactly one", ok, tk)
	}
	if _, err := db.GetJoinTicket(ctx, strings.Repeat("ee", 32)); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetJoinTicket missing: got %v, want ErrNotFound", err)
	}
}

func TestNodes(t *testing.T) {
	e := newEnv(t)
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	db := e.db(Config{Now: func() time.Time { return now }})
	ctx := context.Background()
	n := &Node{NodeID: "n2", WSURL: "ws://127.0.0.1:1/game/v1/ws", Region: "eu", Rooms: 3}
	if err := db.PutNode(ctx, n); err != nil {
		t.Fatalf("PutNode: %v", err)
	}
	if !n.UpdatedAt.IsZero() {
		t.Errorf("PutNode changed the caller's node")
	}
	if err := db.PutNode(ctx, &Node{NodeID: "n1"}); err != nil {
		t.Fatal(err)
	}
	got, err := db.GetNode(ctx, "n2")
	if err != nil || got.Rooms != 3 || !got.UpdatedAt.Equal(now) {
		t.Errorf("GetNode = %+v, %v; want rooms 3 updated now", got, err)
	}
	nodes, err := db.ListNodes(ctx)
	if err != nil || len(nodes) != 2 || nodes[0].NodeID != "n1" || nodes[1].NodeID != "n2" {
		t.Errorf("ListNodes = %v, %v; want n1, n2", nodes, err)
	}
	// A reader whose clock is past the TTL sees no live node.
	later := e.db(Config{Now: func() time.Time { return now.Add(DefaultNodeTTL + time.Second) }})
	if nodes, err := later.ListNodes(ctx); err != nil || len(nodes) != 0 {
		t.Errorf("stale ListNodes = %v, %v; want none", nodes, err)
	}
	if _, err := later.GetNode(ctx, "n2"); !errors.Is(err, ErrNotFound) {
		t.Errorf("stale GetNode: got %v, want ErrNotFound", err)
	}
	if err := db.DeleteNode(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetNode(ctx, "n1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetNode after delete: got %v, want ErrNotFound", err)
	}
	if err := db.PutNode(ctx, &Node{NodeID: "bad.id"}); !errors.Is(err, ErrInvalidID) {
		t.Errorf("PutNode bad id: got %v, want ErrInvalidID", err)
	}
}

// TestNodeTTLExpiry is the one test that waits for a real TTL (1 s).
func TestNodeTTLExpiry(t *testing.T) {
	db := newEnv(t).db(Config{NodeTTL: time.Second})
	ctx := context.Background()
	if err := db.PutNode(ctx, &Node{NodeID: "n1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetNode(ctx, "n1"); err != nil {
		t.Fatalf("GetNode right after PutNode: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		// Read the bucket itself, not through the UpdatedAt filter.
		_, err := db.nodes.Get(ctx, "n1")
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("node entry did not expire")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if nodes, err := db.ListNodes(ctx); err != nil || len(nodes) != 0 {
		t.Errorf("ListNodes after expiry = %v, %v; want none", nodes, err)
	}
}

func TestSigningKeyRace(t *testing.T) {
	e := newEnv(t)
	dbs := []*DB{e.db(Config{}), e.db(Config{}), e.db(Config{})}
	keys := make([][]byte, len(dbs))
	var wg sync.WaitGroup
	for i, db := range dbs {
		wg.Go(func() {
			k, err := db.SigningKey(context.Background())
			if err != nil {
				t.Errorf("SigningKey: %v", err)
			}
			keys[i] = k
		})
	}
	wg.Wait()
	for i, k := range keys {
		if len(k) != SigningKeySize || string(k) != string(keys[0]) {
			t.Errorf("key %d = %x, want the same %d bytes as key 0 (%x)", i, k, SigningKeySize, keys[0])
		}
	}
	again, err := e.db(Config{}).SigningKey(context.Background())
	if err != nil || string(again) != string(keys[0]) {
		t.Errorf("new DB's key = %x, %v; want the stored one", again, err)
	}
	keys[0][0] ^= 0xff // callers get copies
	if k, _ := dbs[0].SigningKey(context.Background()); string(k) != string(keys[1]) {
		t.Errorf("changing a returned key changed the cached one")
	}
}

func TestRecordJSON(t *testing.T) {
	r := newRoom("r1")
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"room_id", "status", "state", "sync_mode", "tick_rate", "max_players", "start_mode",
		"access", "reconnect_window_seconds", "max_duration_seconds", "snapshot_interval_frames", "created_at", "node_id", "seats"} {
		if _, ok := m[k]; !ok {
			t.Errorf("room JSON %s lacks %q", data, k)
		}
	}
}

func TestRoomSeats(t *testing.T) {
	r := newRoom("r1")
	r.MaxPlayers = 3
	r.PutSeat(Seat{Seat: 1, Username: "b", SessionID: "sb"})
	r.PutSeat(Seat{Seat: 0, Username: "a", SessionID: "sa"})
	for _, tc := range []struct {
		name string
		got  any
		want any
	}{
		{"free seat", r.FreeSeat(), 2},
		{"seat 1", r.Seat(1).Username, "b"},
		{"seat 2", r.Seat(2) == nil, true},
		{"of session", r.SeatOfSession("sa").Seat, 0},
		{"of user", r.SeatOfUser("b").Seat, 1},
		{"of unknown user", r.SeatOfUser("z") == nil, true},
		{"sorted", r.Seats[0].Seat, 0},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	c := r.Clone()
	r.PutSeat(Seat{Seat: 2, Username: "c"})
	if r.FreeSeat() != -1 {
		t.Errorf("full room: FreeSeat = %d, want -1", r.FreeSeat())
	}
	if len(c.Seats) != 2 {
		t.Errorf("clone shares seats with the original")
	}
	if !r.RemoveSeat(0) || r.RemoveSeat(0) || r.FreeSeat() != 0 {
		t.Errorf("RemoveSeat did not release seat 0 exactly once")
	}
}
