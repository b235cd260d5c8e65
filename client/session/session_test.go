package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboardgg/switchboard/internal/kcploop"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/client/session"
	"github.com/switchboardgg/switchboard/internal/teststack"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction(kcploop.KCPSchedulerGoroutine)) // kcp-go starts it at init (system imports node/udp)
}

var discard = slog.New(slog.DiscardHandler)

// deployment is control and a game node in this process, on a real
// embedded NATS, on 127.0.0.1:0.
type deployment struct {
	*teststack.Stack
	hc *http.Client
}

func start(t *testing.T) *deployment {
	t.Helper()
	s, err := teststack.Start(t.Context(), t.TempDir(), teststack.Config{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &deployment{Stack: s, hc: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
}

// login logs username in with an auth token from the server API.
func (d *deployment) login(t *testing.T, username string, cfg *session.Config) *session.Client {
	t.Helper()
	tok, err := d.Backend.CreateAuthToken(t.Context(), username, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := session.Login(t.Context(), d.API, username, tok, d.config(cfg))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// config returns cfg (or a new one) with the deployment's HTTP client.
func (d *deployment) config(cfg *session.Config) *session.Config {
	if cfg == nil {
		cfg = &session.Config{}
	}
	cfg.HTTPClient, cfg.Logger = d.hc, discard
	return cfg
}

func current(ctx context.Context, c *session.Client) (*api.CurrentResponse, error) {
	var res api.CurrentResponse
	_, err := c.Do(ctx, http.MethodGet, "/client/v1/game/current", nil, &res)
	return &res, err
}

func TestLoginCallLogout(t *testing.T) {
	d := start(t)
	c := d.login(t, "alice", nil)
	s := c.Session()
	if s.Username != "alice" || s.SessionID == "" || !strings.HasPrefix(s.AccessToken, "at1.") || s.RefreshToken == "" {
		t.Fatalf("session %v", s)
	}
	if until := time.Until(s.ExpiresAt); until < 59*time.Minute || until > time.Hour {
		t.Errorf("access token expires in %v, want about an hour", until)
	}
	cur, err := current(t.Context(), c)
	if err != nil || cur.Room != nil {
		t.Fatalf("current: %+v, %v; want no room", cur, err)
	}
	if err := c.Logout(t.Context()); err != nil {
		t.Fatal(err)
	}
	// The session is gone: the access token is refused, and so is the
	// refresh the client tries next.
	_, err = current(t.Context(), c)
	if !errors.Is(err, session.ErrUnauthenticated) {
		t.Fatalf("after logout: got %v, want ErrUnauthenticated", err)
	}
}

func TestLoginErrors(t *testing.T) {
	d := start(t)
	tok, err := d.Backend.CreateAuthToken(t.Context(), "alice", 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = session.Login(t.Context(), d.API, "bob", tok, d.config(nil))
	var ae *session.APIError
	if !errors.Is(err, session.ErrUnauthenticated) || !errors.As(err, &ae) || ae.Status != 401 {
		t.Fatalf("token of another user: got %v, want a 401 APIError", err)
	}
	// The text names the call and the answer, no Go package.
	if got := err.Error(); !strings.Contains(got, "POST /client/v1/sessions: http 401 unauthenticated") || strings.Contains(got, "session:") {
		t.Errorf("error text %q", got)
	}
	if _, err := session.Login(t.Context(), d.API, "bad name", tok, d.config(nil)); !errors.Is(err, session.ErrInvalidArgument) {
		t.Fatalf("bad username: got %v, want ErrInvalidArgument", err)
	}
	if _, err := session.Login(t.Context(), "ftp://x", "alice", tok, nil); err == nil {
		t.Fatal("ftp base URL accepted")
	}
	if _, err := session.New(d.API, session.Session{}, nil); err == nil {
		t.Fatal("New without tokens accepted")
	}
}

// TestRefreshRotates: a refresh gives new tokens; the old refresh token
// is spent.
func TestRefreshRotates(t *testing.T) {
	d := start(t)
	var changed []session.Session
	c := d.login(t, "alice", &session.Config{SessionChanged: func(s session.Session) { changed = append(changed, s) }})
	old := c.Session()
	if err := c.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	now := c.Session()
	if now.AccessToken == old.AccessToken || now.RefreshToken == old.RefreshToken || now.SessionID != old.SessionID {
		t.Fatalf("refresh kept a token or changed the session: %v → %v", old, now)
	}
	if len(changed) != 1 || changed[0] != now {
		t.Errorf("SessionChanged got %v, want the new session once", changed)
	}
	stale, err := session.New(d.API, session.Session{RefreshToken: old.RefreshToken}, d.config(nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := stale.Refresh(t.Context()); !errors.Is(err, session.ErrUnauthenticated) {
		t.Fatalf("spent refresh token: got %v, want ErrUnauthenticated", err)
	}
}

// TestRefreshBeforeExpiry: a call within RefreshBefore of the access
// token's expiry refreshes first.
func TestRefreshBeforeExpiry(t *testing.T) {
	d := start(t)
	var shift atomic.Int64
	var refreshes atomic.Int32
	c := d.login(t, "alice", &session.Config{
		Now:            func() time.Time { return time.Now().Add(time.Duration(shift.Load())) },
		SessionChanged: func(session.Session) { refreshes.Add(1) },
	})
	if _, err := current(t.Context(), c); err != nil || refreshes.Load() != 0 {
		t.Fatalf("fresh token: %v, %d refreshes; want none", err, refreshes.Load())
	}
	shift.Store(int64(time.Hour - session.DefaultRefreshBefore + time.Second))
	// Four calls at once: one refresh (a second would use the rotated,
	// spent refresh token and fail).
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			_, err := current(t.Context(), c)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := refreshes.Load(); n != 1 {
		t.Errorf("%d refreshes, want 1", n)
	}
}

// TestRetryOn401: an access token the server refuses is refreshed and
// the call retried once.
func TestRetryOn401(t *testing.T) {
	d := start(t)
	real := d.login(t, "alice", nil).Session()
	var refreshes atomic.Int32
	c, err := session.New(d.API, session.Session{SessionID: real.SessionID, Username: "alice", AccessToken: "at1.forged", RefreshToken: real.RefreshToken},
		d.config(&session.Config{SessionChanged: func(session.Session) { refreshes.Add(1) }}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := current(t.Context(), c); err != nil {
		t.Fatalf("call with a refused access token: %v", err)
	}
	if n := refreshes.Load(); n != 1 {
		t.Errorf("%d refreshes, want 1", n)
	}
}

func TestSessionHidesTokens(t *testing.T) {
	s := session.Session{SessionID: "s1", Username: "alice", AccessToken: "at1.secret", RefreshToken: "rf1_s1.secret", ExpiresAt: time.Unix(1e9, 0)}
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back session.Session
	if err := json.Unmarshal(data, &back); err != nil || !back.ExpiresAt.Equal(s.ExpiresAt) || back.AccessToken != s.AccessToken {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	var sb strings.Builder
	slog.New(slog.NewTextHandler(&sb, nil)).Info("x", "session", s)
	for _, out := range []string{fmt.Sprint(s), fmt.Sprintf("%v %+v", s, s), sb.String()} {
		if strings.Contains(out, "secret") {
			t.Errorf("token in %q", out)
		}
	}
}

// TestCallerLimitsAnswers: an answer over MaxResponseBytes is an error,
// not a truncated decode.
func TestCallerLimitsAnswers(t *testing.T) {
	d := start(t)
	caller, err := session.NewCaller(d.API, &session.Config{HTTPClient: d.hc, MaxResponseBytes: 8})
	if err != nil {
		t.Fatal(err)
	}
	_, err = caller.Do(t.Context(), http.MethodGet, "/healthz", "", nil, &api.HealthResponse{})
	if err == nil || !strings.Contains(err.Error(), "GET /healthz: answer over 8 bytes") {
		t.Fatalf("got %v, want an answer-size error", err)
	}
	caller, _ = session.NewCaller(d.API, &session.Config{HTTPClient: d.hc})
	var h api.HealthResponse
	if status, err := caller.Do(t.Context(), http.MethodGet, "/healthz", "", nil, &h); err != nil || status != 200 || h.Status != "ok" {
		t.Fatalf("healthz: %d %+v %v", status, h, err)
	}
}

func TestAPIErrorMatch(t *testing.T) {
	e := session.ParseAPIError(409, []byte(`{"error":{"code":"conflict","message":"room is full","details":{"reason":"room_full"}}}`))
	roomFull := &session.Match{Reason: api.ReasonRoomFull, Text: "room full"}
	if !errors.Is(e, session.ErrConflict) || !errors.Is(e, roomFull) || errors.Is(e, session.ErrNotFound) {
		t.Errorf("%v: wrong matches", e)
	}
	if got, want := e.Error(), "http 409 conflict (room_full): room is full"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	proxy := session.ParseAPIError(502, []byte("<html>bad gateway</html>"))
	if proxy.Code != "" || proxy.Message != "Bad Gateway" || !proxy.Temporary() || errors.Is(proxy, session.ErrUnavailable) {
		t.Errorf("proxy page: %+v", proxy)
	}
	if !errors.Is(session.ParseAPIError(401, []byte("nope")), session.ErrUnauthenticated) {
		t.Error("a bare 401 does not match ErrUnauthenticated")
	}
}
