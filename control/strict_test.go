package control

import (
	"encoding/json"
	"testing"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/store"
)

const roomFields = `"sync_mode": "relay", "max_players": 2, "start_mode": "auto"`

// TestMetadataAndResultMustBeUTF8: metadata and close results are stored
// and served as sent, so text that is not UTF-8 (or an unpaired surrogate
// escape) would make the room list unparseable for strict JSON clients.
// Both used to be accepted.
func TestMetadataAndResultMustBeUTF8(t *testing.T) {
	e := newEnv(t)
	e.addNode(store.Node{NodeID: "n1"}, false)
	bad := map[string]string{
		"invalid byte":      "{" + roomFields + `, "metadata": {"map": "de` + "\xff" + `sert"}}`,
		"overlong encoding": "{" + roomFields + `, "metadata": {"map": "` + "\xc0\xaf" + `"}}`,
		"lone low escape":   "{" + roomFields + `, "metadata": {"map": "\udc00"}}`,
		"lone high escape":  "{" + roomFields + `, "metadata": {"map": "\ud83d x"}}`,
		"high then ascii":   "{" + roomFields + `, "metadata": {"map": "\ud83d\u0041"}}`,
		"key not UTF-8":     "{" + roomFields + `, "metadata": {"` + "\xfe" + `": 1}}`,
	}
	for name, body := range bad {
		t.Run(name, func(t *testing.T) {
			want(t, e.server("POST", "/game/rooms", body), 400, "invalid_argument")
		})
	}
	// A surrogate pair and plain non-ASCII text are fine.
	r := e.server("POST", "/game/rooms", "{"+roomFields+`, "room_id": "utf8", "metadata": {"map": "\ud83d\ude00 désert 沙漠"}}`)
	want(t, r, 201)
	for name, result := range map[string]string{
		"invalid byte":    `{"winner": "` + "\x80" + `"}`,
		"lone escape":     `{"winner": "\udfff"}`,
		"truncated UTF-8": `"` + "\xe6\xb2" + `"`,
	} {
		t.Run("close "+name, func(t *testing.T) {
			want(t, e.server("POST", "/game/rooms/utf8/close", `{"reason": "over", "result": `+result+`}`), 400, "invalid_argument")
		})
	}
	want(t, e.server("POST", "/game/rooms/utf8/close", `{"reason": "over", "result": {"winner": "玩家一"}}`), 200)

	// What was stored reads back as strict JSON.
	list := e.server("GET", "/game/rooms", nil)
	want(t, list, 200)
	var page api.ListRoomsResponse
	if err := json.Unmarshal(list.raw, &page); err != nil || len(page.Rooms) != 1 {
		t.Fatalf("room list: %v, %d rooms", err, len(page.Rooms))
	}
	if got := string(page.Rooms[0].Metadata); got != `{"map":"\ud83d\ude00 désert 沙漠"}` {
		t.Errorf("metadata %s", got)
	}
}

// TestDuplicateAndCaseVariantKeys: encoding/json keeps the last of two
// equal keys and matches field names in any case; other parsers differ,
// so such bodies are refused. Both used to be accepted.
func TestDuplicateAndCaseVariantKeys(t *testing.T) {
	e := newEnv(t)
	e.addNode(store.Node{NodeID: "n1"}, false)
	for name, body := range map[string]string{
		"duplicate field":         "{" + roomFields + `, "max_players": 3}`,
		"duplicate metadata key":  "{" + roomFields + `, "metadata": {"map": "a", "map": "b"}}`,
		"duplicate in nested":     "{" + roomFields + `, "metadata": {"teams": [{"a": 1, "a": 2}]}}`,
		"field in upper case":     `{"SYNC_MODE": "relay", "max_players": 2, "start_mode": "auto"}`,
		"field in mixed case":     `{"sync_mode": "relay", "Max_Players": 2, "start_mode": "auto"}`,
		"field and its case twin": "{" + roomFields + `, "Room_ID": "x", "room_id": "y"}`,
	} {
		t.Run(name, func(t *testing.T) {
			want(t, e.server("POST", "/game/rooms", body), 400, "invalid_argument")
		})
	}
	// Keys that differ only in case inside metadata are two keys.
	want(t, e.server("POST", "/game/rooms", "{"+roomFields+`, "metadata": {"map": "a", "Map": "b", "x": {"map": 1}}}`), 201)

	want(t, e.do("POST", "/client/v1/sessions", "", `{"username": "alice", "username": "mallory"}`), 400, "invalid_argument")
	want(t, e.do("POST", "/client/v1/sessions", "", `{"Username": "alice"}`), 400, "invalid_argument")
	r := e.do("POST", "/client/v1/sessions", "", `{"username": "alice", "UserName": "mallory"}`)
	want(t, r, 400, "invalid_argument")
	if msg, _ := r.errObj()["message"].(string); msg != `unknown field "UserName" (field names are case-sensitive: username)` {
		t.Errorf("message %q", msg)
	}
}
