package system

import (
	"errors"
	"strings"
	"testing"
)

func TestNodeIDFromHostname(t *testing.T) {
	tests := []struct {
		host, want string
	}{
		{"ip-10-0-0-1.ec2.internal", "ip-10-0-0-1-ec2-internal-x7k2"},
		{"Build-Box", "build-box-x7k2"},
		{"-leading.dash-", "leading-dash-x7k2"},
		{"...", "node-x7k2"},
		{"", "node-x7k2"},
		{"ünïcode", "n-code-x7k2"},
		{"under_score", "under-score-x7k2"},
		{"a--b..c", "a-b-c-x7k2"},
		{"a123456789012345678901234567890123456789012345678901234567890", "a123456789012345678901234567890123456789-x7k2"},
	}
	for _, tc := range tests {
		t.Run(tc.host, func(t *testing.T) {
			got := NodeIDFromHostname(tc.host, "x7k2")
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if err := ValidNodeID(got); err != nil {
				t.Errorf("derived id is not valid: %v", err)
			}
		})
	}
}

func TestValidNodeID(t *testing.T) {
	tests := []struct {
		id string
		ok bool
	}{
		{"node-1", true},
		{"Node_1", true},
		{"1node", true},
		{"", false},
		{"-node", false},
		{"_node", false},
		{"a.b", false},
		{"a b", false},
		{string(make([]byte, MaxNodeIDLen+1)), false},
	}
	for _, tc := range tests {
		if err := ValidNodeID(tc.id); (err == nil) != tc.ok {
			t.Errorf("ValidNodeID(%q) = %v, want ok %v", tc.id, err, tc.ok)
		}
	}
}

// TestConfigErrorSaysPackageOnce: an error wrapping ErrConfig names the
// package once ("system: invalid config: node id …"), not twice.
func TestConfigErrorSaysPackageOnce(t *testing.T) {
	err := ValidNodeID("a.b")
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("got %v, want an error wrapping ErrConfig", err)
	}
	if n := strings.Count(err.Error(), "system:"); n != 1 {
		t.Errorf("got %q, want \"system:\" once", err)
	}
}

func TestNodeIDSuffix(t *testing.T) {
	for range 100 {
		s, err := nodeIDSuffix()
		if err != nil {
			t.Fatal(err)
		}
		if len(s) != 6 || ValidNodeID(s) != nil {
			t.Fatalf("suffix %q: want 6 letters and digits", s)
		}
	}
}
