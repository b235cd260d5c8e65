package p2papi

import (
	"errors"
	"testing"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/control/internal/httpapi"
)

// TestConfigDefaults checks that Config fills the shared limits with
// httpapi's defaults, as the rooms API does, and that New refuses a
// Config without its required fields. The API itself is tested through
// control's mux (control/p2p_test.go).
func TestConfigDefaults(t *testing.T) {
	c := Config{}.withDefaults()
	if want := (httpapi.Limits{}).WithDefaults(); c.Limits != want {
		t.Errorf("Limits: got %+v, want %+v", c.Limits, want)
	}
	if c.MaxPeers != api.DefaultMaxPeers {
		t.Errorf("MaxPeers: got %d, want %d", c.MaxPeers, api.DefaultMaxPeers)
	}
	if c.Logger == nil {
		t.Error("Logger: got nil, want slog.Default()")
	}
	if _, err := New(Config{}); !errors.Is(err, ErrConfig) {
		t.Fatalf("New(Config{}): got %v, want ErrConfig", err)
	}
}
