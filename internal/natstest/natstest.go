package natstest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/backbone"
)

// DefaultConnectTimeout bounds the connection to the server in [Start] and
// [Server.Connect].
const DefaultConnectTimeout = 10 * time.Second

// Server is an embedded NATS server of one test.
type Server struct {
	t testing.TB
	// Embedded is the server.
	Embedded *backbone.Embedded
}

// Start starts an embedded NATS server storing in a t.TempDir and returns
// it with a connection to it made with cfg (URL is set; a nil Logger
// discards). Both are closed at the end of the test; a failure fails the
// test at once.
func Start(t testing.TB, cfg backbone.Config) (*Server, *backbone.Conn) {
	t.Helper()
	emb, err := backbone.StartEmbedded(backbone.EmbeddedConfig{DataDir: t.TempDir(), Logger: discard()})
	if err != nil {
		t.Fatalf("natstest: %v", err)
	}
	t.Cleanup(emb.Shutdown)
	s := &Server{t: t, Embedded: emb}
	return s, s.Connect(cfg)
}

// URL returns the server's client URL.
func (s *Server) URL() string { return s.Embedded.ClientURL() }

// Connect opens one more connection with cfg (URL is set, and
// CredentialsFile when empty; a nil Logger discards), closed at the end
// of the test.
func (s *Server) Connect(cfg backbone.Config) *backbone.Conn {
	s.t.Helper()
	cfg.URL = s.Embedded.ClientURL()
	if cfg.CredentialsFile == "" {
		cfg.CredentialsFile = s.Embedded.CredentialsFile()
	}
	if cfg.Logger == nil {
		cfg.Logger = discard()
	}
	ctx, cancel := context.WithTimeout(context.Background(), DefaultConnectTimeout)
	defer cancel()
	c, err := backbone.Connect(ctx, cfg)
	if err != nil {
		s.t.Fatalf("natstest: %v", err)
	}
	s.t.Cleanup(c.Close)
	return c
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
