package faultproxy_test

import (
	"errors"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/internal/faultproxy"
)

func TestDefaults(t *testing.T) {
	p, err := faultproxy.New(faultproxy.Config{Target: "127.0.0.1:1", Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	got := faultproxy.EffectiveConfig(p)
	checks := []struct {
		name      string
		got, want any
	}{
		{"DialTimeout", got.DialTimeout, faultproxy.DefaultDialTimeout},
		{"MaxConns", got.MaxConns, faultproxy.DefaultMaxConns},
		{"ChunkSize", got.ChunkSize, faultproxy.DefaultChunkSize},
		{"QueueDepth", got.QueueDepth, faultproxy.DefaultQueueDepth},
		{"FaultInterval", got.FaultInterval, faultproxy.DefaultFaultInterval},
		{"Faults", got.Faults, faultproxy.Faults{StallMax: faultproxy.DefaultStallMax}},
		{"Logger", got.Logger, slog.Default()},
		{"Seed", p.Seed(), int64(7)},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}

	r, err := faultproxy.New(faultproxy.Config{Target: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Seed() == 0 {
		t.Error("Seed: got 0 for a zero Config.Seed, want a random nonzero seed")
	}
}

func TestInvalidConfig(t *testing.T) {
	ok := faultproxy.Config{Target: "127.0.0.1:1"}
	tests := []struct {
		name string
		edit func(*faultproxy.Config)
	}{
		{"no target", func(c *faultproxy.Config) { c.Target = "" }},
		{"negative sever rate", func(c *faultproxy.Config) { c.Faults.SeverRate = -1 }},
		{"NaN stall rate", func(c *faultproxy.Config) { c.Faults.StallRate = math.NaN() }},
		{"infinite sever rate", func(c *faultproxy.Config) { c.Faults.SeverRate = math.Inf(1) }},
		{"stall min above max", func(c *faultproxy.Config) { c.Faults.StallMin, c.Faults.StallMax = 2*time.Second, time.Second }},
		{"delay min above max", func(c *faultproxy.Config) { c.Faults.DelayMin, c.Faults.DelayMax = 2*time.Second, time.Second }},
		{"negative delay", func(c *faultproxy.Config) { c.Faults.DelayMin = -1 }},
		{"chunk too large", func(c *faultproxy.Config) { c.ChunkSize = faultproxy.MaxChunkSize + 1 }},
		{"queue too deep", func(c *faultproxy.Config) { c.QueueDepth = faultproxy.MaxQueueDepth + 1 }},
		{"negative max conns", func(c *faultproxy.Config) { c.MaxConns = -1 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			tc.edit(&cfg)
			p, err := faultproxy.New(cfg)
			if !errors.Is(err, faultproxy.ErrInvalidConfig) {
				if p != nil {
					p.Close()
				}
				t.Fatalf("New: got %v, want ErrInvalidConfig", err)
			}
			if cfg.Target != "" {
				good, err := faultproxy.New(ok)
				if err != nil {
					t.Fatal(err)
				}
				defer good.Close()
				if err := good.SetFaults(cfg.Faults); (err != nil) != (cfg.Faults != faultproxy.Faults{}) {
					t.Errorf("SetFaults(%+v): got %v", cfg.Faults, err)
				}
			}
		})
	}
}
