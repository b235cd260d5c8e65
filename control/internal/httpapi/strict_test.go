package httpapi

import (
	"encoding/json"
	"testing"
)

func TestHasLoneSurrogate(t *testing.T) {
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
		`"\ue000" "\ud800`:          false, // not valid JSON: never passed
	} {
		if !json.Valid([]byte(text)) {
			continue
		}
		if got := hasLoneSurrogate([]byte(text)); got != want {
			t.Errorf("%s: got %v, want %v", text, got, want)
		}
	}
}

func FuzzHasLoneSurrogate(f *testing.F) {
	for _, s := range []string{`"\ud800"`, `"\ud83d\ude00"`, `{"a":"\\u"}`, `[1,"\udfff"]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if json.Valid([]byte(s)) {
			hasLoneSurrogate([]byte(s)) // must not panic on any valid JSON
		}
	})
}
