package rooms

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/client/session"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// authServer is a control plane for the token tests: access tokens
// "at-N" expire at the time the test says; refresh rotates tokens.
type authServer struct {
	mu        sync.Mutex
	n         int
	valid     string // the only access token accepted
	refresh   string // the only refresh token accepted
	expiresAt time.Time
	refreshes int
	calls     []string // "METHOD path token"
	srv       *httptest.Server
}

func newAuthServer(t *testing.T, expiresAt time.Time) *authServer {
	a := &authServer{expiresAt: expiresAt}
	mux := http.NewServeMux()
	issue := func(w http.ResponseWriter, status int) {
		a.n++
		a.valid = fmt.Sprintf("at-%d", a.n)
		a.refresh = fmt.Sprintf("rf-%d", a.n)
		writeTestJSON(w, status, map[string]any{
			"access_token": a.valid, "refresh_token": a.refresh, "expires_at": a.expiresAt.UTC().Format(time.RFC3339Nano),
			"session_id": "s-1", "user": map[string]string{"username": "alice"},
		})
	}
	mux.HandleFunc("POST /client/v1/sessions", func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		defer a.mu.Unlock()
		issue(w, 201)
	})
	mux.HandleFunc("POST /client/v1/sessions/refresh", func(w http.ResponseWriter, r *http.Request) {
		var body map[string]string
		_ = json.NewDecoder(r.Body).Decode(&body)
		a.mu.Lock()
		defer a.mu.Unlock()
		if r.Header.Get("Authorization") != "" {
			writeTestError(w, 400, "invalid_argument", "")
			return
		}
		if body["refresh_token"] != a.refresh {
			writeTestError(w, 401, "unauthenticated", "")
			return
		}
		a.refreshes++
		issue(w, 200)
	})
	mux.HandleFunc("/client/v1/game/", func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		defer a.mu.Unlock()
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		a.calls = append(a.calls, r.Method+" "+r.URL.Path+" "+tok)
		if tok != a.valid {
			writeTestError(w, 401, "unauthenticated", "")
			return
		}
		switch {
		case r.URL.Path == "/client/v1/game/current":
			writeTestJSON(w, 200, map[string]any{"room": map[string]any{"room_id": "r1", "status": "open"}, "member": map[string]any{"seat": 2, "username": "alice", "status": "offline"}})
		case strings.HasSuffix(r.URL.Path, "/leave"):
			writeTestJSON(w, 200, map[string]any{"member": nil})
		default:
			http.NotFound(w, r)
		}
	})
	a.srv = httptest.NewServer(mux)
	t.Cleanup(a.srv.Close)
	return a
}

// expire makes the current access token stale on the server only.
func (a *authServer) expire() {
	a.mu.Lock()
	a.valid = "revoked"
	a.mu.Unlock()
}

func TestLoginAndCalls(t *testing.T) {
	clk := newTestClock()
	a := newAuthServer(t, clk.Now().Add(time.Hour))
	c, err := Login(t.Context(), a.srv.URL+"/", "alice", "sat1.x", testConfig(t, clk))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Session()
	if s.AccessToken != "at-1" || s.RefreshToken != "rf-1" || s.SessionID != "s-1" || s.Username != "alice" || !s.ExpiresAt.Equal(clk.Now().Add(time.Hour)) {
		t.Errorf("session %+v", s)
	}
	cur, err := c.Current(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if cur.Room == nil || cur.Room.RoomID != "r1" || cur.Member == nil || cur.Member.Seat != 2 {
		t.Errorf("current %+v", cur)
	}
	m, err := c.Leave(t.Context(), "r1")
	if err != nil || m != nil {
		t.Errorf("Leave: %v, %v; want nil member", m, err)
	}
	if a.refreshes != 0 {
		t.Errorf("%d refreshes, want 0", a.refreshes)
	}
}

func TestRefreshBeforeExpiry(t *testing.T) {
	clk := newTestClock()
	a := newAuthServer(t, clk.Now().Add(time.Hour))
	var saved []Session
	cfg := testConfig(t, clk)
	cfg.SessionChanged = func(s Session) { saved = append(saved, s) }
	c, err := Login(t.Context(), a.srv.URL, "alice", "x", cfg)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour - DefaultRefreshBefore + time.Second) // inside the refresh margin
	if _, err := c.Current(t.Context()); err != nil {
		t.Fatal(err)
	}
	if a.refreshes != 1 {
		t.Errorf("%d refreshes, want 1", a.refreshes)
	}
	if len(a.calls) != 1 || !strings.HasSuffix(a.calls[0], " at-2") {
		t.Errorf("calls %v, want one with at-2", a.calls)
	}
	if len(saved) != 1 || saved[0].RefreshToken != "rf-2" || saved[0].AccessToken != "at-2" {
		t.Errorf("SessionChanged got %v", saved)
	}
}

func TestRefreshOn401RetriesOnce(t *testing.T) {
	clk := newTestClock()
	a := newAuthServer(t, clk.Now().Add(time.Hour))
	c, err := Login(t.Context(), a.srv.URL, "alice", "x", testConfig(t, clk))
	if err != nil {
		t.Fatal(err)
	}
	a.expire()
	if _, err := c.Current(t.Context()); err != nil {
		t.Fatalf("Current after a server-side expiry: %v", err)
	}
	if a.refreshes != 1 || len(a.calls) != 2 {
		t.Errorf("%d refreshes, calls %v; want 1 refresh and a retry", a.refreshes, a.calls)
	}

	// A refresh token the server no longer takes: one try, then
	// ErrUnauthenticated.
	a.mu.Lock()
	a.valid, a.refresh = "revoked", "revoked"
	a.calls = nil
	a.mu.Unlock()
	_, err = c.Current(t.Context())
	if !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("got %v, want ErrUnauthenticated", err)
	}
	if len(a.calls) != 1 {
		t.Errorf("calls %v, want exactly one", a.calls)
	}
}

func TestConcurrentRefreshIsSingle(t *testing.T) {
	clk := newTestClock()
	a := newAuthServer(t, clk.Now().Add(time.Hour))
	c, err := Login(t.Context(), a.srv.URL, "alice", "x", testConfig(t, clk))
	if err != nil {
		t.Fatal(err)
	}
	a.expire()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			_, err := c.Current(t.Context())
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
	if a.refreshes != 1 {
		t.Errorf("%d refreshes, want 1 (the rotated refresh token would fail a second)", a.refreshes)
	}
}

func TestSessionRoundTrip(t *testing.T) {
	clk := newTestClock()
	a := newAuthServer(t, clk.Now().Add(time.Hour))
	c, err := Login(t.Context(), a.srv.URL, "alice", "x", testConfig(t, clk))
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(c.Session())
	if err != nil {
		t.Fatal(err)
	}
	var s Session
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	c2, err := NewClient(a.srv.URL, s, testConfig(t, clk))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Current(t.Context()); err != nil {
		t.Fatalf("restored client: %v", err)
	}
	if got := c2.Session(); got != c.Session() {
		t.Errorf("restored %+v, want %+v", got, c.Session())
	}

	// The tokens never show in fmt or slog output.
	var sb strings.Builder
	slog.New(slog.NewTextHandler(&sb, nil)).Info("x", "session", s)
	for _, out := range []string{fmt.Sprint(s), fmt.Sprintf("%v %+v", s, s), sb.String()} {
		if strings.Contains(out, s.AccessToken) || strings.Contains(out, s.RefreshToken) {
			t.Errorf("token in %q", out)
		}
	}
}

func TestNewClientRejects(t *testing.T) {
	tests := []struct {
		name string
		base string
		s    Session
	}{
		{"no tokens", "http://127.0.0.1:1", Session{}},
		{"bad url", "127.0.0.1:1", Session{AccessToken: "x"}},
		{"ws url", "ws://127.0.0.1:1", Session{AccessToken: "x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewClient(tc.base, tc.s, nil); err == nil {
				t.Error("got nil error")
			}
		})
	}
}

func TestJoinClientSessionID(t *testing.T) {
	clk := newTestClock()
	fc := newFakeControl(t, "ws://127.0.0.1:1/game/v1/ws")
	c, err := Login(t.Context(), fc.srv.URL, "alice", "x", testConfig(t, clk))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		csid string
		ok   bool
	}{
		{"generated", "", true},
		{"given", "join-6f2a01b7-468e", true},
		{"short", "1234567", false},
		{"long", strings.Repeat("x", 65), false},
		{"space", "join 6f2a01b7", false},
		{"non-ascii", "join-é-12345", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			jr, err := c.Join(t.Context(), "r1", JoinOptions{ClientSessionID: tc.csid})
			if !tc.ok {
				if !errors.Is(err, ErrInvalidArgument) {
					t.Errorf("got %v, want ErrInvalidArgument", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if checkClientSessionID(jr.ClientSessionID) != nil || (tc.csid != "" && jr.ClientSessionID != tc.csid) {
				t.Errorf("client_session_id %q", jr.ClientSessionID)
			}
			if jr.Connect.ConnectTicket == "" || jr.Room.ReconnectWindowSeconds != 60 || jr.Connect.ProtocolVersion != 1 {
				t.Errorf("join result %+v", jr)
			}
		})
	}
	if b := fc.joinBodies(); len(b) != 2 || b[0]["client_session_id"] == "" {
		t.Errorf("bodies %v", b)
	}
}

// behavior is the part of testdata/roomwire/behavior.json these tests read.
type behavior struct {
	Timing map[string]struct {
		Value int `json:"value"`
	} `json:"timing"`
	Backoff struct {
		Seconds []int   `json:"seconds"`
		Never   []uint8 `json:"never_reconnect_after_codes"`
	} `json:"reconnect_backoff"`
	C1Errors []struct {
		Status  int      `json:"status"`
		Code    string   `json:"code"`
		Reasons []string `json:"reasons"`
		Action  string   `json:"action"`
	} `json:"c1_errors"`
	NodeErrors []struct {
		Code   uint8  `json:"code"`
		Name   string `json:"name"`
		Action string `json:"action"`
	} `json:"node_errors"`
}

func loadBehavior(t *testing.T) behavior {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "roomwire", "behavior.json"))
	if err != nil {
		t.Fatal(err)
	}
	var b behavior
	if err := json.Unmarshal(data, &b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBehaviorTiming(t *testing.T) {
	b := loadBehavior(t)
	tests := []struct {
		key  string
		have time.Duration
	}{
		{"heartbeat_interval_seconds", DefaultHeartbeat},
		{"client_disconnect_detection_seconds", DefaultSilenceTimeout},
		{"handshake_timeout_seconds", DefaultHandshakeTimeout},
		{"reconnect_window_seconds_default", DefaultReconnectWindow},
	}
	for _, tc := range tests {
		if want := time.Duration(b.Timing[tc.key].Value) * time.Second; tc.have != want || want == 0 {
			t.Errorf("%s: have %v, behavior.json says %v", tc.key, tc.have, want)
		}
	}
	if got := b.Timing["rtt_median_window"].Value; got != rttSamples {
		t.Errorf("rtt window %d, behavior.json says %d", rttSamples, got)
	}
}

func TestDefaultBackoff(t *testing.T) {
	b := loadBehavior(t)
	if len(b.Backoff.Seconds) == 0 {
		t.Fatal("no backoff in behavior.json")
	}
	for i, s := range b.Backoff.Seconds {
		if got, want := DefaultBackoff(i), time.Duration(s)*time.Second; got != want {
			t.Errorf("DefaultBackoff(%d) = %v, want %v", i, got, want)
		}
	}
	last := time.Duration(b.Backoff.Seconds[len(b.Backoff.Seconds)-1]) * time.Second
	if got := DefaultBackoff(1000); got != last {
		t.Errorf("DefaultBackoff(1000) = %v, want %v", got, last)
	}
}

func TestNodeErrorActions(t *testing.T) {
	b := loadBehavior(t)
	if len(b.NodeErrors) != 11 {
		t.Fatalf("%d node errors in behavior.json, want 11", len(b.NodeErrors))
	}
	for _, ne := range b.NodeErrors {
		err := error(newNodeError(&roomwire.Error{Code: ne.Code, Message: "m"}))
		var got string
		switch {
		case isTerminal(err):
			got = "end"
		case needsRejoin(err):
			got = "retry_c1"
		default:
			got = "resume"
		}
		if got != ne.Action {
			t.Errorf("code %d %s: SDK does %s, behavior.json says %s", ne.Code, ne.Name, got, ne.Action)
		}
		if sentinel := codeSentinel(ne.Code); !errors.Is(err, sentinel) || sentinel == errUnknownNodeCode {
			t.Errorf("code %d: errors.Is with its sentinel fails", ne.Code)
		}
		if !strings.Contains(err.Error(), ne.Name) {
			t.Errorf("code %d: message %q does not name %s", ne.Code, err, ne.Name)
		}
	}
	for _, code := range b.Backoff.Never {
		if !isTerminal(newNodeError(&roomwire.Error{Code: code})) {
			t.Errorf("code %d must never reconnect", code)
		}
	}
}

func TestAPIErrorMapping(t *testing.T) {
	b := loadBehavior(t)
	// The sentinel each seed action and reason maps to.
	want := func(code, reason string) error {
		switch reason {
		case "room_not_open":
			return ErrRoomNotOpen
		case "room_full":
			return ErrRoomFull
		case "seat_taken":
			return ErrSeatTaken
		case "joined_on_other_device":
			return ErrJoinedOnOtherDevice
		case "game_node_unavailable":
			return ErrGameNodeUnavailable
		}
		switch code {
		case "unauthenticated":
			return ErrUnauthenticated
		case "permission_denied":
			return ErrPermissionDenied
		case "not_found":
			return ErrNotFound
		case "invalid_argument":
			return ErrInvalidArgument
		}
		return nil
	}
	all := []error{ErrUnauthenticated, ErrPermissionDenied, ErrNotFound, ErrRoomNotOpen, ErrRoomFull, ErrSeatTaken,
		ErrJoinedOnOtherDevice, ErrGameNodeUnavailable, ErrInvalidArgument, ErrRateLimited}
	for _, ce := range b.C1Errors {
		reasons := ce.Reasons
		if len(reasons) == 0 {
			reasons = []string{""}
		}
		for _, reason := range reasons {
			body := map[string]any{"code": ce.Code, "message": "m"}
			if reason != "" {
				body["details"] = map[string]string{"reason": reason}
			}
			data, _ := json.Marshal(map[string]any{"error": body})
			err := error(session.ParseAPIError(ce.Status, data))
			var ae *APIError
			if !errors.As(err, &ae) || ae.Status != ce.Status || ae.Code != ce.Code || ae.Reason != reason || ae.Message != "m" {
				t.Errorf("%d %s %s: parsed %+v", ce.Status, ce.Code, reason, ae)
				continue
			}
			target := want(ce.Code, reason)
			if target == nil {
				t.Errorf("%d %s %s: no sentinel", ce.Status, ce.Code, reason)
				continue
			}
			for _, s := range all {
				// A reason's sentinel and its code's sentinel both match
				// (room_full is also a conflict, not a separate sentinel).
				expect := s == target || s == want(ce.Code, "")
				if errors.Is(err, s) != expect {
					t.Errorf("%d %s %s: errors.Is(%v) = %v, want %v", ce.Status, ce.Code, reason, s, !expect, expect)
				}
			}
		}
	}
	// A proxy's HTML page keeps the status.
	err := session.ParseAPIError(502, []byte("<html>bad gateway</html>"))
	if err.Status != 502 || err.Code != "" || err.Message != "Bad Gateway" {
		t.Errorf("html answer: %+v", err)
	}
	if !session.ParseAPIError(401, []byte("nope")).Is(ErrUnauthenticated) {
		t.Error("bare 401 does not match ErrUnauthenticated")
	}
}

func TestMedian(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, n := range v {
			out[i] = time.Duration(n) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		in   []time.Duration
		want time.Duration
	}{
		{nil, 0},
		{ms(7), 7 * time.Millisecond},
		{ms(40, 10), 25 * time.Millisecond},
		{ms(5, 1, 9), 5 * time.Millisecond},
		{ms(10, 90, 20, 80, 30, 70, 40, 60, 50, 1000), 55 * time.Millisecond},
	}
	for _, tc := range tests {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestClockKeepsLastTenSamples(t *testing.T) {
	var k clock
	now := time.UnixMilli(1_000_000)
	for i := range 15 { // RTTs 1..15 ms; the last ten are 6..15
		sent := now
		now = now.Add(time.Duration(i+1) * time.Millisecond)
		k.pong(now, uint64(sent.UnixMilli()), uint64(now.UnixMilli()))
	}
	if got, want := k.rtt(), 10500*time.Microsecond; got != want {
		t.Errorf("rtt %v, want %v (median of 6..15 ms)", got, want)
	}
	// Samples from the future or a minute back are ignored.
	k.pong(now, uint64(now.Add(time.Second).UnixMilli()), 0)
	k.pong(now, uint64(now.Add(-2*maxRTT).UnixMilli()), 0)
	if got := k.rtt(); got != 10500*time.Microsecond {
		t.Errorf("rtt %v after bad samples", got)
	}
}

func TestConfigDefaults(t *testing.T) {
	got, err := (*Config)(nil).resolve()
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"Heartbeat", got.Heartbeat, DefaultHeartbeat},
		{"SilenceTimeout", got.SilenceTimeout, DefaultSilenceTimeout},
		{"HandshakeTimeout", got.HandshakeTimeout, DefaultHandshakeTimeout},
		{"WriteTimeout", got.WriteTimeout, DefaultWriteTimeout},
		{"RefreshBefore", got.RefreshBefore, DefaultRefreshBefore},
		{"FrameBuffer", got.FrameBuffer, DefaultFrameBuffer},
		{"EventBuffer", got.EventBuffer, DefaultEventBuffer},
		{"MaxSendQueueBytes", got.MaxSendQueueBytes, DefaultMaxSendQueueBytes},
		{"MaxMessageSize", got.MaxMessageSize, DefaultMaxMessageSize},
		{"MaxResponseBytes", got.MaxResponseBytes, int64(DefaultMaxResponseBytes)},
		{"SDKVersion", got.SDKVersion, DefaultSDKVersion},
		{"HTTP timeout", got.HTTPClient.Timeout, DefaultHTTPTimeout},
		{"Dialer timeout", got.Dialer.Timeout, DefaultHandshakeTimeout},
		{"Backoff(3)", got.Backoff(3), DefaultBackoff(3)},
		{"SnapshotInterval", got.SnapshotInterval, uint32(0)},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if len(got.Dialer.Protocols) != 1 || got.Dialer.Protocols[0] != roomwire.Subprotocol {
		t.Errorf("Protocols %v", got.Dialer.Protocols)
	}
	if got.Logger == nil || got.Now == nil {
		t.Error("nil Logger or Now")
	}

	// resolve does not touch the caller's Config.
	cfg := &Config{Heartbeat: -1}
	if _, err := cfg.resolve(); err != nil || cfg.Heartbeat != -1 || cfg.Dialer != nil {
		t.Errorf("caller's config changed: %+v", cfg)
	}
	if _, err := (&Config{SDKVersion: strings.Repeat("v", 65)}).resolve(); err == nil {
		t.Error("65-byte SDK version accepted")
	}
}
