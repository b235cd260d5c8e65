package roomsapi

import (
	"errors"
	"testing"
	"time"
)

// TestConfigDefaults checks the documented defaults of Config, and that
// New refuses a Config without its required fields. The API itself is
// tested through control's mux (control/rooms_test.go, join_test.go),
// which owns the login its client routes need.
func TestConfigDefaults(t *testing.T) {
	c := Config{}.withDefaults()
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"JoinTicketTTL", c.JoinTicketTTL, 300 * time.Second},
		{"MaxJoinTicketTTL", c.MaxJoinTicketTTL, 24 * time.Hour},
		{"MaxRoomDuration", c.MaxRoomDuration, 24 * time.Hour},
		{"MaxSnapshotIntervalFrames", c.MaxSnapshotIntervalFrames, 3600},
		{"MaxBodyBytes", c.MaxBodyBytes, int64(64 << 10)},
		{"CommandTimeout", c.CommandTimeout, 2 * time.Second},
		{"JoinRate", c.JoinRate, 2.0},
		{"JoinBurst", c.JoinBurst, 10},
		{"MaxRateLimitKeys", c.MaxRateLimitKeys, 10000},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if c.Logger == nil {
		t.Error("Logger: got nil, want slog.Default()")
	}
	if _, err := New(Config{}); !errors.Is(err, ErrConfig) {
		t.Fatalf("New(Config{}): got %v, want ErrConfig", err)
	}
}
