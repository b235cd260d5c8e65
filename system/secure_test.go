package system_test

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/switchboardgg/switchboard/backbone"
	"github.com/switchboardgg/switchboard/system"
)

// lockedBuffer is a log destination for concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestAllowAnonymousWarns: AllowAnonymous is logged at warn when control
// starts, and nothing is said without it.
func TestAllowAnonymousWarns(t *testing.T) {
	for _, anon := range []bool{true, false} {
		var logs lockedBuffer
		cfg := testConfig(t.TempDir())
		cfg.Roles = system.RoleControl
		cfg.API.Control.AllowAnonymous = anon
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
		s := start(t, cfg)
		got := strings.Contains(logs.String(), "level=WARN") && strings.Contains(logs.String(), "allow-anonymous")
		if got != anon {
			t.Errorf("AllowAnonymous %v: warned %v, want %v; logs:\n%s", anon, got, anon, logs.String())
		}
		s.Close()
	}
}

// TestEmbeddedNATSNeedsCredentials: the roles connect with the data dir's
// nkey; a client without it is refused.
func TestEmbeddedNATSNeedsCredentials(t *testing.T) {
	dir := t.TempDir()
	s := start(t, testConfig(dir))
	nc, err := nats.Connect(s.Ready().NATS, nats.MaxReconnects(0), nats.Timeout(5*time.Second))
	if err == nil {
		nc.Close()
		t.Fatal("connected to the embedded NATS server without credentials")
	}
	if !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("connect without credentials: got %v, want nats.ErrAuthorization", err)
	}
	opt, err := nats.NkeyOptionFromSeed(filepath.Join(dir, backbone.CredentialsFileName))
	if err != nil {
		t.Fatal(err)
	}
	nc, err = nats.Connect(s.Ready().NATS, opt, nats.Timeout(5*time.Second))
	if err != nil {
		t.Fatalf("connect with the data dir's nkey: %v", err)
	}
	nc.Close()
}

// TestAdminListener: pprof needs the admin key (the server key by
// default), metrics and health do not, and health asks the store probe.
func TestAdminListener(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Admin.Addr = "127.0.0.1:0"
	cfg.API.ServerKey = "system-test-server-key-0123456789"
	s := start(t, cfg)
	if err := s.Health(t.Context()); err != nil {
		t.Errorf("Health after Start: %v", err)
	}
	admin := s.Ready().Admin
	for _, tc := range []struct {
		path, key string
		want      int
	}{
		{"/debug/pprof/cmdline", "", http.StatusUnauthorized},
		{"/debug/pprof/cmdline", "wrong", http.StatusUnauthorized},
		{"/debug/pprof/cmdline", cfg.API.ServerKey, http.StatusOK},
		{"/metrics", "", http.StatusOK},
		{"/healthz", "", http.StatusOK},
	} {
		req, err := http.NewRequest(http.MethodGet, admin+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tc.key != "" {
			req.Header.Set("Authorization", "Bearer "+tc.key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("GET %s with key %q: got %d, want %d", tc.path, tc.key, resp.StatusCode, tc.want)
		}
	}
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
}

// TestWarnLooseModes: a data dir or a secret in it that other users may
// read is logged at warn when the system starts; the modes System itself
// creates are not.
func TestWarnLooseModes(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix permission bits")
	}
	dir := filepath.Join(t.TempDir(), "data") // System creates it
	cfg := testConfig(dir)
	cfg.Roles = system.RoleControl
	var quiet lockedBuffer
	cfg.Logger = slog.New(slog.NewTextHandler(&quiet, &slog.HandlerOptions{Level: slog.LevelWarn}))
	start(t, cfg).Close() // creates the dir, the nkey and the server key
	if strings.Contains(quiet.String(), "open to other users") {
		t.Errorf("got a warning for the modes System created:\n%s", quiet.String())
	}
	for _, name := range []string{".", backbone.CredentialsFileName, system.ServerKeyFile} {
		if err := os.Chmod(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var logs lockedBuffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	start(t, cfg).Close()
	for _, name := range []string{backbone.CredentialsFileName, system.ServerKeyFile} {
		if !strings.Contains(logs.String(), filepath.Join(dir, name)) {
			t.Errorf("got no warning for %s; logs:\n%s", name, logs.String())
		}
	}
	if n := strings.Count(logs.String(), "open to other users"); n != 3 {
		t.Errorf("got %d warnings, want 3 (the dir, the nkey, the server key); logs:\n%s", n, logs.String())
	}
}
