package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/node"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

func TestShutdownDrains(t *testing.T) {
	e := newEnv(t, false, nil)
	rec := record("dr", nil)
	a, _ := e.join(rec, 0)
	pending := e.dial() // connected, no handshake yet
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- e.srv.Shutdown(ctx) }()
	a.expectError(roomwire.CodeNodeDraining)
	pending.expectError(roomwire.CodeNodeDraining)
	if err := <-errc; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// TestDrainDuringUpgrade: a connection upgraded while the node starts
// draining, before the node registered it, still gets ERROR 10 at once,
// and Shutdown does not wait for its handshake timeout.
func TestDrainDuringUpgrade(t *testing.T) {
	e := newEnv(t, false, func(c *node.Config) { c.HandshakeTimeout = 30 * time.Second })
	upgraded, proceed := make(chan struct{}), make(chan struct{})
	e.srv.SetUpgradeHook(func() {
		close(upgraded)
		<-proceed
	})
	c := e.dial() // upgraded, then silent
	<-upgraded
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- e.srv.Shutdown(ctx) }()
	waitFor(t, "draining", e.srv.Engine().Draining)
	close(proceed)
	c.expectError(roomwire.CodeNodeDraining)
	if err := <-errc; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}
