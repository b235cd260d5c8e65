package admin_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/switchboardgg/switchboard/internal/admin"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const key = "admin-key-0123456789abcdef"

// serve starts the handler of cfg on a real socket.
func serve(t *testing.T, cfg admin.Config) *httptest.Server {
	t.Helper()
	h, err := admin.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url, auth string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

func TestPprofNeedsKey(t *testing.T) {
	srv := serve(t, admin.Config{Key: key})
	paths := []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/goroutine?debug=1",
		"/debug/pprof/symbol", "/debug/pprof/heap", "/debug/pprof/profile?seconds=1"}
	for _, tc := range []struct {
		name, auth string
		want       int
	}{
		{"no header", "", http.StatusUnauthorized},
		{"wrong key", "Bearer not-the-key", http.StatusUnauthorized},
		{"key prefix", "Bearer " + key[:len(key)-1], http.StatusUnauthorized},
		{"key and more", "Bearer " + key + "x", http.StatusUnauthorized},
		{"basic scheme", "Basic " + key, http.StatusUnauthorized},
		{"bare key", key, http.StatusUnauthorized},
		{"admin key", "Bearer " + key, http.StatusOK},
		{"scheme in lower case", "bearer " + key, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, p := range paths {
				if tc.want == http.StatusOK && strings.Contains(p, "profile") && testing.Short() {
					continue
				}
				code, hdr, body := get(t, srv.URL+p, tc.auth)
				if code != tc.want {
					t.Errorf("GET %s: got %d, want %d", p, code, tc.want)
				}
				if code == http.StatusUnauthorized {
					if got := hdr.Get("WWW-Authenticate"); got != `Bearer realm="`+admin.Realm+`"` {
						t.Errorf("GET %s: WWW-Authenticate %q", p, got)
					}
					if strings.Contains(body, "switchboard") || strings.Contains(body, "admin.test") {
						t.Errorf("GET %s: a 401 leaks the profile: %q", p, body)
					}
				}
			}
		})
	}
}

// TestPprofWithoutKey: with no admin key configured, pprof is closed, not
// open; an empty bearer token is no key.
// TestKeyNotKept: the handler keeps the key's digest only, so that no
// dump or log of it can show the key.
func TestKeyNotKept(t *testing.T) {
	h, err := admin.New(admin.Config{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprintf("%#v", h); strings.Contains(s, key) {
		t.Errorf("the handler holds the key: %s", s)
	}
}

func TestPprofWithoutKey(t *testing.T) {
	srv := serve(t, admin.Config{})
	for _, auth := range []string{"", "Bearer ", "Bearer  "} {
		if code, _, _ := get(t, srv.URL+"/debug/pprof/cmdline", auth); code != http.StatusUnauthorized {
			t.Errorf("cmdline with %q and no key configured: got %d, want 401", auth, code)
		}
	}
}

func TestProfileSecondsCapped(t *testing.T) {
	srv := serve(t, admin.Config{Key: key})
	for _, s := range []string{"0", "-1", "x", fmt.Sprint(admin.MaxProfileSeconds + 1), "1e9"} {
		for _, p := range []string{"/debug/pprof/profile", "/debug/pprof/trace", "/debug/pprof/heap"} {
			if code, _, _ := get(t, srv.URL+p+"?seconds="+s, "Bearer "+key); code != http.StatusBadRequest {
				t.Errorf("GET %s?seconds=%s: got %d, want 400", p, s, code)
			}
		}
	}
}

// TestMetricsAndHealthOpen: Prometheus and health checks need no key.
func TestMetricsAndHealthOpen(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "switchboard_test_things_total", Help: "Things."})
	reg.MustRegister(c)
	c.Inc()
	var unhealthy error
	srv := serve(t, admin.Config{Key: key, Gatherer: reg,
		Health: func(ctx context.Context) error {
			if _, ok := ctx.Deadline(); !ok {
				return errors.New("no deadline")
			}
			return unhealthy
		}})

	code, _, body := get(t, srv.URL+"/metrics", "")
	if code != http.StatusOK || !strings.Contains(body, "switchboard_test_things_total 1") {
		t.Errorf("GET /metrics: got %d %q, want 200 with the counter", code, body)
	}
	// The API's answers: api.HealthResponse, and api.ErrorBody.
	code, h, body := get(t, srv.URL+"/healthz", "")
	if code != http.StatusOK || body != `{"status":"ok"}`+"\n" || h.Get("Content-Type") != "application/json" {
		t.Errorf("GET /healthz: got %d %q (%s), want 200 {\"status\":\"ok\"} as JSON", code, body, h.Get("Content-Type"))
	}
	unhealthy = errors.New("store: not writable")
	code, h, body = get(t, srv.URL+"/healthz", "")
	if want := `{"error":{"code":"unavailable","message":"store: not writable"}}` + "\n"; code != http.StatusServiceUnavailable || body != want || h.Get("Content-Type") != "application/json" {
		t.Errorf("GET /healthz while unhealthy: got %d %q (%s), want 503 %s as JSON", code, body, h.Get("Content-Type"), want)
	}
}

func TestZeroConfig(t *testing.T) {
	srv := serve(t, admin.Config{})
	if code, _, _ := get(t, srv.URL+"/metrics", ""); code != http.StatusOK {
		t.Errorf("GET /metrics with the zero Config: got %d, want 200", code)
	}
	if code, _, _ := get(t, srv.URL+"/healthz", ""); code != http.StatusOK {
		t.Errorf("GET /healthz with the zero Config: got %d, want 200", code)
	}
	if _, err := admin.New(admin.Config{HealthTimeout: -1}); err == nil {
		t.Error("New with a negative HealthTimeout: got nil error")
	}
	if admin.DefaultHealthTimeout.Seconds() != 2 || admin.MaxProfileSeconds != 60 {
		t.Error("documented defaults changed")
	}
}
