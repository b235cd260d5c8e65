package p2papi

import (
	"strings"
	"testing"

	"github.com/switchboardgg/switchboard/api"
)

// Join codes are JoinCodeLen characters of the alphabet, every character
// drawn (no bias visible in a few thousand draws), and what ValidJoinCode
// accepts.
func TestJoinCodes(t *testing.T) {
	seen := map[rune]int{}
	for range 2000 {
		c := newJoinCode()
		if !ValidJoinCode(c) {
			t.Fatalf("newJoinCode = %q is not valid", c)
		}
		for _, r := range c {
			seen[r]++
		}
	}
	if len(seen) != len(api.JoinCodeAlphabet) {
		t.Fatalf("%d characters drawn, want %d", len(seen), len(api.JoinCodeAlphabet))
	}
	for _, bad := range []string{"", "BBBBBBBBB", "BBBBBBBBBBB", "bbbbbbbbbb", "AAAAAAAAAA", "BBBBBBBBB0"} {
		if ValidJoinCode(bad) {
			t.Errorf("ValidJoinCode(%q) = true", bad)
		}
	}
	for _, ok := range []string{"a", "lobby-1", "A_b", strings.Repeat("n", api.MaxNetworkNameLen)} {
		if !ValidNetworkName(ok) {
			t.Errorf("ValidNetworkName(%q) = false", ok)
		}
	}
	for _, bad := range []string{"", "a.b", "a b", "a~b", strings.Repeat("n", api.MaxNetworkNameLen+1)} {
		if ValidNetworkName(bad) {
			t.Errorf("ValidNetworkName(%q) = true", bad)
		}
	}
}
