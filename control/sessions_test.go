package control

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestLogin(t *testing.T) {
	e := newEnv(t)
	r := e.do("POST", "/client/v1/sessions", "", map[string]any{"username": "alice", "auth_token": e.authToken("alice", time.Minute)})
	want(t, r, http.StatusCreated)
	for _, k := range []string{"access_token", "refresh_token", "expires_at", "session_id"} {
		if s, _ := r.body[k].(string); s == "" {
			t.Errorf("%s missing: %s", k, r.raw)
		}
	}
	if r.obj("user")["username"] != "alice" {
		t.Errorf("user: %s", r.raw)
	}
	if got, want := r.body["expires_at"], timeJSON(e.clock.Now().Add(time.Hour)); got != want {
		t.Errorf("expires_at: got %v, want %v", got, want)
	}
	at, err := e.signer.VerifyAccessToken(r.body["access_token"].(string), e.clock.Now())
	if err != nil || at.Username != "alice" || at.SessionID != r.body["session_id"] {
		t.Errorf("access token: %+v, %v", at, err)
	}
	// Each login is a new session.
	r2 := e.do("POST", "/client/v1/sessions", "", map[string]any{"username": "alice", "auth_token": e.authToken("alice", time.Minute)})
	want(t, r2, http.StatusCreated)
	if r2.body["session_id"] == r.body["session_id"] {
		t.Error("second login reused the session")
	}

	other, _ := newSignerFor("another-server-key-0123")
	foreign, _ := other.SignAuthToken(authTokenFor("alice", e.clock.Now().Add(time.Minute)))
	cases := []struct {
		name   string
		body   any
		status int
		code   string
	}{
		{"no auth token", map[string]any{"username": "alice"}, 401, "unauthenticated"},
		{"empty auth token", map[string]any{"username": "alice", "auth_token": ""}, 401, "unauthenticated"},
		{"garbage auth token", map[string]any{"username": "alice", "auth_token": "sat1.x.y"}, 401, "unauthenticated"},
		{"other key", map[string]any{"username": "alice", "auth_token": foreign}, 401, "unauthenticated"},
		{"other username", map[string]any{"username": "bob", "auth_token": e.authToken("alice", time.Minute)}, 401, "unauthenticated"},
		{"expired", map[string]any{"username": "alice", "auth_token": e.authToken("alice", -time.Second)}, 401, "unauthenticated"},
		{"no username", map[string]any{"auth_token": e.authToken("alice", time.Minute)}, 400, "invalid_argument"},
		{"username too long", map[string]any{"username": strings.Repeat("a", 65)}, 400, "invalid_argument"},
		{"username space", map[string]any{"username": "a b"}, 400, "invalid_argument"},
		{"username unicode", map[string]any{"username": "ålice"}, 400, "invalid_argument"},
		{"username number", map[string]any{"username": 7}, 400, "invalid_argument"},
		{"unknown field", map[string]any{"username": "alice", "password": "x"}, 400, "invalid_argument"},
		{"auth token too long", map[string]any{"username": "alice", "auth_token": strings.Repeat("a", 3000)}, 400, "invalid_argument"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want(t, e.do("POST", "/client/v1/sessions", "", tc.body), tc.status, tc.code)
		})
	}
	// The longest and most varied valid username.
	name := strings.Repeat("a", 60) + "_.-Z"
	want(t, e.do("POST", "/client/v1/sessions", "", map[string]any{"username": name, "auth_token": e.authToken(name, time.Minute)}), 201)
}

func TestLoginAnonymous(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.AllowAnonymous = true })
	r := e.do("POST", "/client/v1/sessions", "", map[string]any{"username": "guest-1"})
	want(t, r, http.StatusCreated)
	// A given auth token is still checked.
	want(t, e.do("POST", "/client/v1/sessions", "", map[string]any{"username": "guest-1", "auth_token": "sat1.x.y"}), 401, "unauthenticated")
}

func TestAuthTokenOfflineFormat(t *testing.T) {
	e := newEnv(t)
	// Mint a token as docs/api.md tells a backend to, without package tokens.
	payload := []byte(`{"sub":"carol","exp":` + itoa(e.clock.Now().Add(time.Minute).Unix()) + `}`)
	mac := hmac.New(sha256.New, []byte(testServerKey))
	mac.Write([]byte("sat1."))
	mac.Write(payload)
	b64 := base64.RawURLEncoding
	tok := "sat1." + b64.EncodeToString(payload) + "." + b64.EncodeToString(mac.Sum(nil))
	want(t, e.do("POST", "/client/v1/sessions", "", map[string]any{"username": "carol", "auth_token": tok}), 201)

	// And from the server API.
	r := e.server("POST", "/auth-tokens", map[string]any{"username": "dave", "ttl_seconds": 30})
	want(t, r, http.StatusCreated)
	if got, want := r.body["expires_at"], timeJSON(e.clock.Now().Add(30*time.Second).Truncate(time.Second)); got != want {
		t.Errorf("expires_at: got %v, want %v", got, want)
	}
	want(t, e.do("POST", "/client/v1/sessions", "", map[string]any{"username": "dave", "auth_token": r.body["auth_token"]}), 201)
	e.clock.Advance(31 * time.Second)
	want(t, e.do("POST", "/client/v1/sessions", "", map[string]any{"username": "dave", "auth_token": r.body["auth_token"]}), 401, "unauthenticated")

	bad := []map[string]any{
		{},
		{"username": "a b"},
		{"username": "dave", "ttl_seconds": 0},
		{"username": "dave", "ttl_seconds": 86401},
		{"username": "dave", "ttl_seconds": "10"},
		{"username": "dave", "extra": 1},
	}
	for _, b := range bad {
		want(t, e.server("POST", "/auth-tokens", b), 400, "invalid_argument")
	}
}

func TestRefreshAndLogout(t *testing.T) {
	e := newEnv(t)
	r := e.do("POST", "/client/v1/sessions", "", map[string]any{"username": "alice", "auth_token": e.authToken("alice", time.Minute)})
	want(t, r, 201)
	access, refresh, sid := r.body["access_token"].(string), r.body["refresh_token"].(string), r.body["session_id"]

	// The access token expires after an hour.
	e.clock.Advance(time.Hour)
	want(t, e.do("GET", "/client/v1/game/current", access, nil), 401, "unauthenticated")

	r = e.do("POST", "/client/v1/sessions/refresh", "", map[string]any{"refresh_token": refresh})
	want(t, r, http.StatusOK)
	if r.body["session_id"] != sid || r.obj("user")["username"] != "alice" {
		t.Fatalf("refresh changed the session: %s", r.raw)
	}
	access2, refresh2 := r.body["access_token"].(string), r.body["refresh_token"].(string)
	if refresh2 == refresh {
		t.Fatal("refresh token not rotated")
	}
	want(t, e.do("GET", "/client/v1/game/current", access2, nil), 200)
	// The old refresh token is spent.
	want(t, e.do("POST", "/client/v1/sessions/refresh", "", map[string]any{"refresh_token": refresh}), 401, "unauthenticated")

	for _, b := range []any{map[string]any{}, map[string]any{"refresh_token": 5}, `{"refresh_token":"x","y":1}`} {
		want(t, e.do("POST", "/client/v1/sessions/refresh", "", b), 400, "invalid_argument")
	}
	for _, tok := range []string{"x", "rf1_", "rf1_abc", "rf1_abc.def", refresh2 + "x", strings.Replace(refresh2, ".", "x.", 1)} {
		want(t, e.do("POST", "/client/v1/sessions/refresh", "", map[string]any{"refresh_token": tok}), 401, "unauthenticated")
	}

	r = e.do("DELETE", "/client/v1/sessions/current", access2, nil)
	want(t, r, http.StatusNoContent)
	want(t, e.do("GET", "/client/v1/game/current", access2, nil), 401, "unauthenticated")
	want(t, e.do("DELETE", "/client/v1/sessions/current", access2, nil), 401, "unauthenticated")
	want(t, e.do("POST", "/client/v1/sessions/refresh", "", map[string]any{"refresh_token": refresh2}), 401, "unauthenticated")
}

func TestLoginRateLimit(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.LoginRate, c.LoginBurst = 0.25, 3 })
	body := map[string]any{"username": "alice", "auth_token": e.authToken("alice", time.Minute)}
	for range 3 {
		want(t, e.do("POST", "/client/v1/sessions", "", body), 201)
	}
	// A 429 says when a token is back: 4 s at 0.25 per second, then 2 s.
	retryAfter := func(r resp, secs string) {
		t.Helper()
		want(t, r, http.StatusTooManyRequests, "rate_limited")
		if got := r.header.Get("Retry-After"); got != secs {
			t.Errorf("Retry-After %q, want %q", got, secs)
		}
	}
	retryAfter(e.do("POST", "/client/v1/sessions", "", body), "4")
	retryAfter(e.do("POST", "/client/v1/sessions/refresh", "", map[string]any{"refresh_token": "x"}), "4")
	e.clock.Advance(2 * time.Second)
	retryAfter(e.do("POST", "/client/v1/sessions", "", body), "2")
	e.clock.Advance(2 * time.Second)
	want(t, e.do("POST", "/client/v1/sessions", "", body), 201)
}

// Refresh keeps a login session alive 30 days after each refresh, but not
// past its absolute lifetime (90 days after login).
func TestRefreshAbsoluteLifetime(t *testing.T) {
	e := newEnv(t)
	r := e.do("POST", "/client/v1/sessions", "", map[string]any{"username": "alice", "auth_token": e.authToken("alice", time.Minute)})
	want(t, r, 201)
	refresh := r.body["refresh_token"].(string)
	for day := 29; day < 90; day += 29 {
		e.clock.Advance(29 * 24 * time.Hour)
		r = e.do("POST", "/client/v1/sessions/refresh", "", map[string]any{"refresh_token": refresh})
		want(t, r, 200)
		refresh = r.body["refresh_token"].(string)
	}
	e.clock.Advance(4 * 24 * time.Hour) // day 91: inside 30 days of the last refresh
	want(t, e.do("POST", "/client/v1/sessions/refresh", "", map[string]any{"refresh_token": refresh}), 401, "unauthenticated")
}
