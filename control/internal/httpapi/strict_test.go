package httpapi

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestLoneSurrogates(t *testing.T) {
	for text, want := range map[string]bool{
		`"plain"`:                   false,
		`"\ud83d\ude00"`:            false,
		`"\uD83D\uDE00"`:            false,
		`"\\ud800"`:                 false, // an escaped backslash, then text
		`"\\\ud800"`:                true,
		`"\ud800"`:                  true,
		`"\udc00\ud800"`:            true,
		`"\ud800\n"`:                true,
		`"\ud800\ud800"`:            true,
		`{"\ud800": 1}`:             true,
		`["x", "\u0041", "\ud7ff"]`: false,
	} {
		if !json.Valid([]byte(text)) {
			t.Fatalf("%s is not valid JSON", text)
		}
		err := checkStrict([]byte(text), nil)
		if got := err != nil; got != want {
			t.Errorf("%s: got %v, want rejected %v", text, err, want)
		}
	}
}

func TestDuplicateKeys(t *testing.T) {
	many := func(dupAt int) string {
		var sb strings.Builder
		sb.WriteString("{")
		for i := range 40 {
			fmt.Fprintf(&sb, `"k%d": %d, `, i, i)
		}
		if dupAt >= 0 {
			fmt.Fprintf(&sb, `"k%d": 0, `, dupAt)
		}
		sb.WriteString(`"z": {"k1": [1, {"k1": 2}]}}`)
		return sb.String()
	}
	for text, want := range map[string]bool{
		`{"a": 1, "b": {"a": 2}}`:     false,
		`{"a": 1, "a": 2}`:            true,
		`{"a": 1, "\u0061": 2}`:       true, // the same key, escaped
		`[{"a": 1}, {"a": 1}]`:        false,
		`{"a": [{"b": 1, "b": 1}]}`:   true,
		`{"a": "}", "b": "{\"a\""}`:   false, // braces inside strings
		`{"a": {}, "b": [], "c": {}}`: false,
		many(-1):                      false,
		many(7):                       true,
	} {
		err := checkStrict([]byte(text), nil)
		if got := err != nil; got != want {
			t.Errorf("%.60s: got %v, want rejected %v", text, err, want)
		}
	}
}

func FuzzCheckStrict(f *testing.F) {
	for _, s := range []string{`"\ud800"`, `"\ud83d\ude00"`, `{"a":"\\u","a":1}`, `[1,"\udfff",{"x":{}}]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if json.Valid([]byte(s)) {
			_ = checkStrict([]byte(s), nil) // must not panic on any valid JSON
		}
	})
}

// TestIntegerFieldMessage: a JSON number that is not an integer of the
// field's size is refused with a message that says so, not "must be of
// JSON type number"; another JSON type is refused by its type name.
func TestIntegerFieldMessage(t *testing.T) {
	type body struct {
		TickRate int32 `json:"tick_rate"`
	}
	for text, want := range map[string]string{
		`{"tick_rate": 10.5}`:        `field "tick_rate" must be an integer`,
		`{"tick_rate": 1e400}`:       `field "tick_rate" must be an integer`,
		`{"tick_rate": 99999999999}`: `field "tick_rate" must be an integer`,
		`{"tick_rate": "10"}`:        `field "tick_rate" must be of JSON type number`,
	} {
		var v body
		err := jsonError(json.Unmarshal([]byte(text), &v))
		if err.Message != want {
			t.Errorf("%s: got %q, want %q", text, err.Message, want)
		}
	}
}
