package backend_test

import (
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/switchboardgg/switchboard/internal/kcploop"

	"github.com/switchboardgg/switchboard/client/backend"
	"github.com/switchboardgg/switchboard/client/rooms"
	"github.com/switchboardgg/switchboard/client/session"
	"github.com/switchboardgg/switchboard/internal/teststack"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction(kcploop.KCPSchedulerGoroutine)) // kcp-go starts it at init (system imports node/udp)
}

// startStack starts control and a game node in this process on a real
// embedded NATS, each on 127.0.0.1:0.
func startStack(t *testing.T) *teststack.Stack {
	t.Helper()
	s, err := teststack.Start(t.Context(), t.TempDir(), teststack.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestReconnectWindowZero: a backend can ask for a room whose seats are
// released at once on disconnect (reconnect_window_seconds 0); the
// client used to drop a 0 and got the server's default of 60.
func TestReconnectWindowZero(t *testing.T) {
	s := startStack(t)
	room, err := s.CreateRoom(t.Context(), backend.CreateRoomRequest{
		SyncMode: "relay", MaxPlayers: new(2), StartMode: "auto", ReconnectWindowSeconds: new(0),
	})
	if err != nil {
		t.Fatal(err)
	}
	if room.ReconnectWindowSeconds != 0 {
		t.Fatalf("reconnect_window_seconds: got %d, want 0", room.ReconnectWindowSeconds)
	}
	room, err = s.CreateRoom(t.Context(), backend.CreateRoomRequest{SyncMode: "relay", MaxPlayers: new(2), StartMode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	if room.ReconnectWindowSeconds != 60 {
		t.Fatalf("reconnect_window_seconds without a value: got %d, want the default 60", room.ReconnectWindowSeconds)
	}
}

// TestGetRoomAfterClose: GetRoom returns what the server knows of a
// closed room — its node, close_reason and the result given to close.
// Room used to have no close_reason.
func TestGetRoomAfterClose(t *testing.T) {
	s := startStack(t)
	ctx := t.Context()
	room, err := s.CreateRoom(ctx, backend.CreateRoomRequest{RoomID: "r-close", SyncMode: "relay", MaxPlayers: new(2), StartMode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Backend.GetRoom(ctx, room.RoomID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Node == nil || got.Node.NodeID != room.NodeID || got.Room.CloseReason != "" {
		t.Fatalf("open room: got node %+v, close_reason %q; want node %s and no reason", got.Node, got.Room.CloseReason, room.NodeID)
	}
	if err := s.Backend.CloseRoom(ctx, room.RoomID, "match_over", json.RawMessage(`{"winner": "alice"}`)); err != nil {
		t.Fatal(err)
	}
	got, err = s.Backend.GetRoom(ctx, room.RoomID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Room.Status != "closed" || got.Room.CloseReason != "match_over" {
		t.Fatalf("closed room: got status %q, close_reason %q; want closed, match_over", got.Room.Status, got.Room.CloseReason)
	}
	if string(got.Room.CloseResult) != `{"winner":"alice"}` {
		t.Fatalf("close_result: got %s, want the result given to close", got.Room.CloseResult)
	}
	if got.Members == nil || got.Room.CreatedAt.IsZero() {
		t.Fatalf("got members %v, created_at %v", got.Members, got.Room.CreatedAt)
	}
	_, err = s.Backend.GetRoom(ctx, "no-such-room")
	if !errors.Is(err, session.ErrNotFound) || !errors.Is(err, rooms.ErrNotFound) {
		t.Fatalf("unknown room: got %v, want ErrNotFound", err)
	}
}

// TestErrorText: the text of an error names the call and the answer,
// never the SDK's packages (it used to read "rooms: http 404 …").
func TestErrorText(t *testing.T) {
	s := startStack(t)
	_, _, err := s.Backend.CreateTicket(t.Context(), "no-such-room", backend.TicketRequest{Username: "alice"})
	want := "POST /server/v1/game/rooms/no-such-room/tickets: http 404 not_found: room not found"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
	if _, err := backend.New("127.0.0.1:1", "key", nil); err == nil || strings.Contains(err.Error(), "backend:") {
		t.Fatalf("bad base URL: got %v", err)
	}
}
