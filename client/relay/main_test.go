package relay_test

import (
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboardgg/switchboard/client/relay"
	"github.com/switchboardgg/switchboard/client/session"
	"github.com/switchboardgg/switchboard/internal/kcploop"
	"github.com/switchboardgg/switchboard/internal/teststack"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction(kcploop.KCPSchedulerGoroutine)) // kcp-go starts it at init (system imports node/udp)
}

var discard = slog.New(slog.DiscardHandler)

// stack is a deployment with a relay node, in this process.
type stack struct {
	*teststack.Stack
	hc *http.Client
}

func startStack(t testing.TB) *stack {
	t.Helper()
	s, err := teststack.Start(t.Context(), t.TempDir(), teststack.Config{Relay: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &stack{Stack: s, hc: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
}

// client logs username in and returns a relay client with cfg (nil: a
// fast test config) on transport.
func (s *stack) client(t testing.TB, username string, cfg *relay.Config) *relay.Client {
	t.Helper()
	tok, err := s.Backend.CreateAuthToken(t.Context(), username, 0)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := session.Login(t.Context(), s.API, username, tok, &session.Config{HTTPClient: s.hc, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	if cfg == nil {
		cfg = &relay.Config{}
	}
	cfg.Logger = discard
	if cfg.Retransmit == 0 {
		cfg.Retransmit = 100 * time.Millisecond
	}
	return relay.New(sc, cfg)
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitEvent returns the next event of c of type typ, skipping others.
func waitEvent(t *testing.T, c *relay.Conn, typ relay.EventType) relay.Event {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-c.Events():
			if !ok {
				t.Fatalf("events closed waiting for %v: %v", typ, c.Err())
			}
			if ev.Type == typ {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %v event", typ)
		}
	}
}

// recv returns the next message of c.
func recv(t testing.TB, c *relay.Conn) (string, relay.AllocationID) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	buf := make([]byte, relay.DefaultMaxPayload)
	n, from, err := c.Recv(ctx, buf)
	if err != nil {
		t.Fatalf("recv: %v", err)
	}
	return string(buf[:n]), from
}
