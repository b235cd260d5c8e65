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
