package e2e_test

import (
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestDevSecureByDefault: dev's embedded NATS wants the nkey from the data
// dir, pprof wants the admin key (in dev, the server key) while metrics and
// health stay open, and --allow-anonymous is warned about at start.
func TestDevSecureByDefault(t *testing.T) {
	dir := t.TempDir()
	p := start(t, "dev", "--api", "127.0.0.1:0", "--node", "127.0.0.1:0", "--admin", "127.0.0.1:0",
		"--nats", "127.0.0.1:0", "--data-dir", dir, "--allow-anonymous")
	r := p.ready

	t.Run("nats needs the data dir's nkey", func(t *testing.T) {
		nc, err := nats.Connect(r.NATS, nats.MaxReconnects(0), nats.Timeout(5*time.Second))
		if err == nil {
			nc.Close()
			t.Fatal("connected to dev's NATS without credentials")
		}
		if !errors.Is(err, nats.ErrAuthorization) {
			t.Errorf("connect without credentials: got %v, want nats.ErrAuthorization", err)
		}
		opt, err := nats.NkeyOptionFromSeed(filepath.Join(dir, "nats-user.nk"))
		if err != nil {
			t.Fatal(err)
		}
		nc, err = nats.Connect(r.NATS, opt, nats.Timeout(5*time.Second))
		if err != nil {
			t.Fatalf("connect with the data dir's nkey: %v", err)
		}
		nc.Close()
	})

	t.Run("pprof needs the admin key", func(t *testing.T) {
		for _, tc := range []struct {
			path, auth string
			want       int
		}{
			{"/debug/pprof/cmdline", "", http.StatusUnauthorized},
			{"/debug/pprof/goroutine?debug=1", "", http.StatusUnauthorized},
			{"/debug/pprof/cmdline", "Bearer wrong-key", http.StatusUnauthorized},
			{"/debug/pprof/cmdline", "Bearer " + r.ServerKey, http.StatusOK},
			{"/metrics", "", http.StatusOK},
			{"/healthz", "", http.StatusOK},
		} {
			req, err := http.NewRequest(http.MethodGet, r.Admin+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("GET %s with %q: got %d, want %d", tc.path, tc.auth, resp.StatusCode, tc.want)
			}
		}
	})

	p.stop(10 * time.Second)
	out := p.out.String()
	if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "allow-anonymous") {
		t.Errorf("no warning about --allow-anonymous at start:\n%s", out)
	}
}
