package httpapi

import (
	"testing"
	"time"
)

// TestLimitsDefaults checks the documented defaults of Limits, which the
// rooms and P2P APIs and control's Config all take, and that set fields
// (a negative JoinRate turns the limiter off) are kept.
func TestLimitsDefaults(t *testing.T) {
	l := Limits{}.WithDefaults()
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"MaxBodyBytes", l.MaxBodyBytes, int64(64 << 10)},
		{"CommandTimeout", l.CommandTimeout, 2 * time.Second},
		{"JoinRate", l.JoinRate, 2.0},
		{"JoinBurst", l.JoinBurst, 10},
		{"MaxRateLimitKeys", l.MaxRateLimitKeys, 10000},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	set := Limits{MaxBodyBytes: 1, CommandTimeout: time.Second, JoinRate: -1, JoinBurst: 3, MaxRateLimitKeys: 4}
	if got := set.WithDefaults(); got != set {
		t.Errorf("WithDefaults of set fields: got %+v, want %+v", got, set)
	}
	if got := set.JoinLimiter(); got != nil {
		t.Errorf("JoinLimiter with JoinRate -1: got %v, want nil (no limit)", got)
	}
	if l.JoinLimiter() == nil {
		t.Error("JoinLimiter with the defaults: got nil, want a limiter")
	}
}
