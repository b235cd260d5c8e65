package backbone

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"testing"
	"time"
)

// TestProbeReportsAndRecovers: a probe through a connection to a NATS
// server that went away reports ErrUnwritable, and nil again once the
// server is back; it is not a restart of this process that heals it.
func TestProbeReportsAndRecovers(t *testing.T) {
	dir := t.TempDir()
	e, err := StartEmbedded(EmbeddedConfig{DataDir: dir, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	c := connect(t, e)
	p, err := NewProbe(ProbeConfig{Conn: c, Timeout: 200 * time.Millisecond, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := p.Check(ctx); err != nil {
		t.Errorf("Check before the first probe: %v", err)
	}
	if err := p.Probe(ctx); err != nil {
		t.Fatalf("Probe: %v", err)
	}
	if err := e.Check(); err != nil {
		t.Errorf("Embedded.Check on a healthy server: %v", err)
	}
	u, _ := url.Parse(e.ClientURL())
	port, _ := strconv.Atoi(u.Port())
	e.Shutdown()
	if err := p.Probe(ctx); !errors.Is(err, ErrUnwritable) || errors.Is(err, ErrRestartRequired) {
		t.Errorf("Probe with the server gone: got %v, want ErrUnwritable only", err)
	}
	if err := p.Check(ctx); !errors.Is(err, ErrUnwritable) {
		t.Errorf("Check with the server gone: got %v, want ErrUnwritable", err)
	}
	e, err = StartEmbedded(EmbeddedConfig{DataDir: dir, Port: port, Logger: discard})
	if err != nil {
		t.Skipf("restart on port %d: %v", port, err)
	}
	defer e.Shutdown()
	var perr error
	for range 50 {
		if perr = p.Probe(ctx); perr == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if perr != nil || p.Check(ctx) != nil {
		t.Errorf("Probe with the server back: %v", perr)
	}

	// Run returns when its ctx ends.
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(rctx) }()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run after cancel: %v", err)
	}
	c.Close()
}

func TestProbeConfig(t *testing.T) {
	if _, err := NewProbe(ProbeConfig{}); err == nil {
		t.Error("NewProbe without Conn: nil error")
	}
	_, c := startServer(t)
	if _, err := NewProbe(ProbeConfig{Conn: c, Interval: -1}); err == nil {
		t.Error("NewProbe with a negative interval: nil error")
	}
	p, err := NewProbe(ProbeConfig{Conn: c})
	if err != nil {
		t.Fatal(err)
	}
	if p.cfg.Interval != DefaultProbeInterval || p.cfg.Timeout != DefaultProbeTimeout || p.cfg.Bucket != DefaultProbeBucket || p.cfg.Key == "" {
		t.Errorf("defaults not applied: %+v", p.cfg)
	}
	if DefaultProbeInterval != 5*time.Second || DefaultProbeTimeout != 2*time.Second || DefaultProbeBucket != "sb_health" {
		t.Error("documented defaults changed")
	}
}
