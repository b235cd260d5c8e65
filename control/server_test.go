package control

import (
	"github.com/switchboardgg/switchboard/api"

	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/tokens"
)

func TestNewConfig(t *testing.T) {
	e := newEnv(t)
	signer, _ := tokens.NewSigner([]byte("0123456789abcdef"))
	base := Config{DB: e.db, Backbone: e.bb, ServerKey: testServerKey, Signer: signer}

	s, err := New(base)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	got := s.cfg
	checks := []struct {
		name      string
		got, want any
	}{
		{"AccessTokenTTL", got.AccessTokenTTL, time.Hour},
		{"JoinTicketTTL", got.JoinTicketTTL, 300 * time.Second},
		{"MaxJoinTicketTTL", got.MaxJoinTicketTTL, 24 * time.Hour},
		{"AuthTokenTTL", got.AuthTokenTTL, 10 * time.Minute},
		{"MaxAuthTokenTTL", got.MaxAuthTokenTTL, 24 * time.Hour},
		{"MaxRoomDuration", got.MaxRoomDuration, 24 * time.Hour},
		{"MaxSnapshotIntervalFrames", got.MaxSnapshotIntervalFrames, 3600},
		{"MaxBodyBytes", got.MaxBodyBytes, int64(64 << 10)},
		{"CommandTimeout", got.CommandTimeout, 2 * time.Second},
		{"RequestTimeout", got.RequestTimeout, 10 * time.Second},
		{"LoginRate", got.LoginRate, 2.0},
		{"LoginBurst", got.LoginBurst, 20},
		{"JoinRate", got.JoinRate, 2.0},
		{"JoinBurst", got.JoinBurst, 10},
		{"MaxRateLimitKeys", got.MaxRateLimitKeys, 10000},
		{"ConnectTicketTTL", api.ConnectTicketTTL, 60 * time.Second},
		{"AllowAnonymous", got.AllowAnonymous, false},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	if base.AccessTokenTTL != 0 || base.Logger != nil {
		t.Error("New changed the caller's Config")
	}

	bad := []struct {
		name string
		f    func(*Config)
	}{
		{"no DB", func(c *Config) { c.DB = nil }},
		{"no Backbone", func(c *Config) { c.Backbone = nil }},
		{"no Signer", func(c *Config) { c.Signer = nil }},
		{"short ServerKey", func(c *Config) { c.ServerKey = "short" }},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			tc.f(&cfg)
			if _, err := New(cfg); !errors.Is(err, ErrConfig) {
				t.Fatalf("got %v, want ErrConfig", err)
			}
		})
	}
}

func TestRouting(t *testing.T) {
	e := newEnv(t)
	r := e.do("GET", "/nope", "", nil)
	want(t, r, http.StatusNotFound, "not_found")
	r = e.do("GET", "/client/v1/game/rooms/x/join", "", nil)
	want(t, r, http.StatusMethodNotAllowed, "invalid_argument")
	if got := r.header.Get("Allow"); got != "POST" {
		t.Errorf("Allow: got %q, want POST", got)
	}
	r = e.do("PUT", "/server/v1/game/rooms", testServerKey, nil)
	want(t, r, http.StatusMethodNotAllowed, "invalid_argument")
	if got := r.header.Get("Allow"); got != "GET, POST" {
		t.Errorf("Allow: got %q, want \"GET, POST\"", got)
	}
}

func TestServerAPIAuth(t *testing.T) {
	e := newEnv(t)
	routes := []struct{ method, path string }{
		{"POST", "/server/v1/game/rooms"},
		{"GET", "/server/v1/game/rooms"},
		{"GET", "/server/v1/game/rooms/r1"},
		{"POST", "/server/v1/game/rooms/r1/tickets"},
		{"POST", "/server/v1/game/rooms/r1/start"},
		{"POST", "/server/v1/game/rooms/r1/close"},
		{"POST", "/server/v1/game/rooms/r1/members/0/kick"},
		{"POST", "/server/v1/auth-tokens"},
	}
	for _, rt := range routes {
		for _, key := range []string{"", "wrong-key-wrong-key", testServerKey + "x", strings.ToUpper(testServerKey)} {
			r := e.do(rt.method, rt.path, key, "{}")
			want(t, r, http.StatusUnauthorized, "unauthenticated")
		}
	}
	// The scheme is case-insensitive.
	req, _ := http.NewRequest("GET", e.url+"/server/v1/game/rooms", nil)
	req.Header.Set("Authorization", "bearer "+testServerKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("got %d, want 200", res.StatusCode)
	}
}

func TestClientAPIAuth(t *testing.T) {
	e := newEnv(t)
	expired, _ := e.signer.SignAccessToken(tokens.AccessToken{SessionID: "s1", Username: "a", ExpiresMS: e.clock.Now().Add(-time.Second).UnixMilli()})
	noSession, _ := e.signer.SignAccessToken(tokens.AccessToken{SessionID: "s1", Username: "a", ExpiresMS: e.clock.Now().Add(time.Hour).UnixMilli()})
	routes := []struct{ method, path string }{
		{"POST", "/client/v1/game/rooms/r1/join"},
		{"POST", "/client/v1/game/rooms/r1/leave"},
		{"GET", "/client/v1/game/current"},
		{"DELETE", "/client/v1/sessions/current"},
	}
	for _, rt := range routes {
		for _, tok := range []string{"", "garbage", testServerKey, expired, noSession} {
			r := e.do(rt.method, rt.path, tok, nil)
			want(t, r, http.StatusUnauthorized, "unauthenticated")
		}
	}
}

func TestHealthz(t *testing.T) {
	e := newEnv(t)
	r := e.do("GET", "/healthz", "", nil)
	want(t, r, http.StatusOK)
	if r.body["status"] != "ok" {
		t.Fatalf("got %s", r.raw)
	}
	e.bb.Close()
	r = e.do("GET", "/healthz", "", nil)
	want(t, r, http.StatusServiceUnavailable, "unavailable")
}

func TestMetrics(t *testing.T) {
	e := newEnv(t)
	e.do("GET", "/healthz", "", nil)
	e.do("GET", "/healthz", "", nil) // the route's counter, resolved by the first
	e.do("GET", "/nope", "", nil)
	e.do("GET", "/server/v1/game/rooms", "bad-key", nil)
	families, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]float64{}
	n := 0
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch f.GetName() {
			case "switchboard_control_requests_total":
				counts[labels["route"]+" "+labels["code"]] = m.GetCounter().GetValue()
			case "switchboard_control_request_duration_seconds":
				n++
			}
		}
	}
	for k, want := range map[string]float64{"GET /healthz 200": 2, routeUnmatched + " 404": 1, "GET /server/v1/game/rooms 401": 1} {
		if counts[k] != want {
			t.Errorf("requests_total{%s}: got %v, want %v", k, counts[k], want)
		}
	}
	if n != len(e.srv.routes())+1 {
		t.Errorf("duration series: got %d, want one per route (%d)", n, len(e.srv.routes())+1)
	}
}

func TestServe(t *testing.T) {
	e := newEnv(t)
	ln, err := listen(t)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- e.srv.Serve(ln) }()
	res, err := http.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("got %d", res.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve: got %v, want ErrServerClosed", err)
	}
	_ = e.srv.Close()
}

// TestNullBody: null is not an object, though encoding/json reads it as
// {}; it used to be accepted where {} is.
func TestNullBody(t *testing.T) {
	e := newEnv(t)
	for _, path := range []string{"/game/rooms/nope/close", "/game/rooms/nope/start", "/game/rooms/nope/members/0/kick"} {
		want(t, e.server("POST", path, "{}"), 404, "not_found")
		for _, body := range []string{"null", " null\n", `"x"`, "1", "true"} {
			want(t, e.server("POST", path, body), 400, "invalid_argument")
		}
	}
}

func TestBodies(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxBodyBytes = 1024 })
	e.addNode(store.Node{NodeID: "n1"}, true)
	cases := []struct {
		name, body string
		reason     string
	}{
		{"malformed", `{"sync_mode":`, ""},
		{"not JSON", `hello`, ""},
		{"array", `[1,2]`, ""},
		{"unknown field", `{"sync_mode":"frame","tick_rate":30,"max_players":2,"start_mode":"auto","color":"red"}`, ""},
		{"wrong type string", `{"sync_mode":1}`, ""},
		{"wrong type number", `{"max_players":"2"}`, ""},
		{"fraction", `{"max_players":2.5}`, ""},
		{"two objects", `{"sync_mode":"frame"}{}`, ""},
		{"oversize", `{"metadata":{"x":"` + strings.Repeat("a", 2000) + `"}}`, "body_too_large"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.server("POST", "/game/rooms", tc.body)
			want(t, r, http.StatusBadRequest, "invalid_argument", tc.reason)
			if strings.Contains(string(r.raw), "goroutine") || strings.Contains(string(r.raw), testServerKey) {
				t.Fatalf("answer leaks: %s", r.raw)
			}
		})
	}
}
