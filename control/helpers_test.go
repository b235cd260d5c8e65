package control

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/switchboardgg/switchboard/backbone"
	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/tokens"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var discard = slog.New(slog.DiscardHandler)

const testServerKey = "test-server-key-0123456789"

// clock is the injected time of a test.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Now().UnixNano())
	return c
}

func (c *clock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// env is one control server on 127.0.0.1 with a real embedded NATS and a
// real store.
type env struct {
	t      *testing.T
	nats   *backbone.Embedded
	bb     *backbone.Conn
	db     *store.DB
	signer *tokens.Signer
	clock  *clock
	reg    *prometheus.Registry
	srv    *Server
	url    string
}

func newEnv(t *testing.T, tweak ...func(*Config)) *env {
	t.Helper()
	e := &env{t: t, clock: newClock(), reg: prometheus.NewRegistry()}
	var err error
	e.nats, err = backbone.StartEmbedded(backbone.EmbeddedConfig{DataDir: t.TempDir(), Logger: discard})
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	t.Cleanup(e.nats.Shutdown)
	e.bb = e.connect()
	ctx := context.Background()
	e.db, err = store.Open(ctx, e.bb, store.Config{Logger: discard})
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	key, err := e.db.SigningKey(ctx)
	if err != nil {
		t.Fatalf("SigningKey: %v", err)
	}
	if e.signer, err = tokens.NewSigner(key); err != nil {
		t.Fatalf("NewSigner: %v", err)
	}
	cfg := Config{
		DB:             e.db,
		Backbone:       e.bb,
		ServerKey:      testServerKey,
		Signer:         e.signer,
		Logger:         discard,
		Registerer:     e.reg,
		Now:            e.clock.Now,
		CommandTimeout: 500 * time.Millisecond,
		LoginRate:      -1,
		JoinRate:       -1,
	}
	for _, f := range tweak {
		f(&cfg)
	}
	if e.srv, err = New(cfg); err != nil {
		t.Fatalf("New: %v", err)
	}
	hs := httptest.NewServer(e.srv.Handler())
	t.Cleanup(hs.Close)
	e.url = hs.URL
	return e
}

// connect opens another backbone connection, closed at the end of the
// test (before the embedded server shuts down).
func (e *env) connect() *backbone.Conn {
	e.t.Helper()
	c, err := backbone.Connect(context.Background(), backbone.Config{URL: e.nats.ClientURL(), CredentialsFile: e.nats.CredentialsFile(), Logger: discard})
	if err != nil {
		e.t.Fatalf("Connect: %v", err)
	}
	e.t.Cleanup(c.Close)
	return c
}

// resp is a decoded answer.
type resp struct {
	status int
	header http.Header
	body   map[string]any
	raw    []byte
}

// reason returns error.details.reason ("" when absent).
func (r resp) reason() string {
	d, _ := r.errObj()["details"].(map[string]any)
	s, _ := d["reason"].(string)
	return s
}

func (r resp) code() string {
	s, _ := r.errObj()["code"].(string)
	return s
}

func (r resp) errObj() map[string]any {
	m, _ := r.body["error"].(map[string]any)
	return m
}

// obj returns the object at a path of keys.
func (r resp) obj(keys ...string) map[string]any {
	m := r.body
	for _, k := range keys {
		m, _ = m[k].(map[string]any)
	}
	return m
}

// do sends a request; body is a string (sent as is), nil (no body) or a
// value encoded as JSON. auth is the bearer credential ("" for none).
func (e *env) do(method, path, auth string, body any) resp {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewReader([]byte(b))
	default:
		data, err := json.Marshal(b)
		if err != nil {
			e.t.Fatalf("encode: %v", err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		e.t.Fatalf("NewRequest: %v", err)
	}
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatalf("read: %v", err)
	}
	r := resp{status: res.StatusCode, header: res.Header, raw: raw}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &r.body); err != nil {
			e.t.Fatalf("%s %s: answer is not a JSON object: %q", method, path, raw)
		}
		if res.Header.Get("Content-Type") != "application/json" {
			e.t.Errorf("%s %s: Content-Type %q", method, path, res.Header.Get("Content-Type"))
		}
	}
	return r
}

// server calls the server API with the server key.
func (e *env) server(method, path string, body any) resp {
	e.t.Helper()
	return e.do(method, "/server/v1"+path, testServerKey, body)
}

// want fails the test unless r has status (and, for errors, code and
// reason).
func want(t *testing.T, r resp, status int, codeReason ...string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("got status %d, want %d; body %s", r.status, status, r.raw)
	}
	if len(codeReason) > 0 && r.code() != codeReason[0] {
		t.Fatalf("got code %q, want %q; body %s", r.code(), codeReason[0], r.raw)
	}
	wantReason := ""
	if len(codeReason) > 1 {
		wantReason = codeReason[1]
	}
	if len(codeReason) > 0 && r.reason() != wantReason {
		t.Fatalf("got reason %q, want %q; body %s", r.reason(), wantReason, r.raw)
	}
	if len(codeReason) > 0 && wantReason == "" {
		if _, ok := r.errObj()["details"]; ok {
			t.Fatalf("details present without a reason: %s", r.raw)
		}
	}
}

// authToken mints an auth token for username with the server key.
func (e *env) authToken(username string, ttl time.Duration) string {
	e.t.Helper()
	s, err := tokens.NewSigner([]byte(testServerKey))
	if err != nil {
		e.t.Fatal(err)
	}
	tok, err := s.SignAuthToken(tokens.AuthToken{Username: username, Expires: e.clock.Now().Add(ttl).Unix()})
	if err != nil {
		e.t.Fatal(err)
	}
	return tok
}

// login opens a login session for username and returns its access token.
func (e *env) login(username string) string {
	e.t.Helper()
	r := e.do("POST", "/client/v1/sessions", "", map[string]any{"username": username, "auth_token": e.authToken(username, time.Minute)})
	want(e.t, r, http.StatusCreated)
	return r.body["access_token"].(string)
}

// room creates a room with the given fields over defaults (frame, 30 Hz,
// 4 players, all_ready) and returns its id.
func (e *env) room(fields map[string]any) string {
	e.t.Helper()
	body := map[string]any{"sync_mode": "frame", "tick_rate": 30, "max_players": 4, "start_mode": "all_ready"}
	for k, v := range fields {
		body[k] = v
	}
	r := e.server("POST", "/game/rooms", body)
	want(e.t, r, http.StatusCreated)
	return r.obj("room")["room_id"].(string)
}

// ticket issues a join ticket; seat < 0 means none.
func (e *env) ticket(roomID, username string, seat int) string {
	e.t.Helper()
	body := map[string]any{"username": username}
	if seat >= 0 {
		body["seat"] = seat
	}
	r := e.server("POST", "/game/rooms/"+roomID+"/tickets", body)
	want(e.t, r, http.StatusCreated)
	return r.body["ticket"].(string)
}

// join calls C1.
func (e *env) join(access, roomID, ticket, csid string) resp {
	e.t.Helper()
	body := map[string]any{"client_session_id": csid, "transport": "ws"}
	if ticket != "" {
		body["ticket"] = ticket
	}
	return e.do("POST", "/client/v1/game/rooms/"+roomID+"/join", access, body)
}

// getRoom reads a room record directly.
func (e *env) getRoom(id string) *store.Room {
	e.t.Helper()
	r, err := e.db.GetRoom(context.Background(), id)
	if err != nil {
		e.t.Fatalf("GetRoom: %v", err)
	}
	return r
}

// fakeNode is a game node's command side, answering over real NATS and
// writing the record as the node does. The real node is tested in
// package node.
type fakeNode struct {
	db       *store.DB
	admitErr *store.CommandError // answered to admit when set; set before use

	mu     sync.Mutex
	admits []store.AdmitRequest
	verbs  []string
}

// addNode registers node id and, when serve is set, answers its commands.
func (e *env) addNode(n store.Node, serve bool) *fakeNode {
	e.t.Helper()
	if n.WSURL == "" {
		n.WSURL = "ws://127.0.0.1:1/game/v1/ws"
	}
	if err := e.db.PutNode(context.Background(), &n); err != nil {
		e.t.Fatalf("PutNode: %v", err)
	}
	f := &fakeNode{db: e.db}
	if serve {
		stop, err := store.ServeCommands(e.connect(), n.NodeID, f)
		if err != nil {
			e.t.Fatalf("ServeCommands: %v", err)
		}
		e.t.Cleanup(func() { _ = stop() })
	}
	return f
}

func (f *fakeNode) record(verb string) {
	f.mu.Lock()
	f.verbs = append(f.verbs, verb)
	f.mu.Unlock()
}

func (f *fakeNode) Verbs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.verbs...)
}

func (f *fakeNode) Admits() []store.AdmitRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]store.AdmitRequest(nil), f.admits...)
}

func (f *fakeNode) Admit(_ context.Context, req *store.AdmitRequest) (*store.CommandReply, error) {
	f.record(store.VerbAdmit)
	f.mu.Lock()
	f.admits = append(f.admits, *req)
	f.mu.Unlock()
	if f.admitErr != nil {
		return nil, f.admitErr
	}
	return nil, nil
}

func (f *fakeNode) Start(ctx context.Context, req *store.StartRequest) (*store.CommandReply, error) {
	f.record(store.VerbStart)
	r, err := f.db.UpdateRoom(ctx, req.Room.RoomID, func(r *store.Room) error {
		if r.State != store.StateWaiting {
			return &store.CommandError{Code: store.CodeConflict, Message: "already started"}
		}
		r.State = store.StatePlaying
		now := time.Now().UTC()
		r.StartedAt = &now
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &store.CommandReply{Room: r}, nil
}

func (f *fakeNode) Close(ctx context.Context, req *store.CloseRequest) (*store.CommandReply, error) {
	f.record(store.VerbClose)
	_, err := f.db.UpdateRoom(ctx, req.RoomID, func(r *store.Room) error {
		r.Status, r.State = store.StatusClosed, store.StateEnding
		now := time.Now().UTC()
		r.ClosedAt = &now
		return nil
	})
	return nil, err
}

func (f *fakeNode) release(ctx context.Context, roomID string, seat int) error {
	_, err := f.db.UpdateRoom(ctx, roomID, func(r *store.Room) error {
		r.RemoveSeat(seat)
		return nil
	})
	return err
}

func (f *fakeNode) Kick(ctx context.Context, req *store.KickRequest) (*store.CommandReply, error) {
	f.record(store.VerbKick)
	return nil, f.release(ctx, req.RoomID, req.Seat)
}

func (f *fakeNode) Leave(ctx context.Context, req *store.LeaveRequest) (*store.CommandReply, error) {
	f.record(store.VerbLeave)
	return nil, f.release(ctx, req.RoomID, req.Seat)
}

func (f *fakeNode) Drain(context.Context, *store.DrainRequest) (*store.CommandReply, error) {
	f.record(store.VerbDrain)
	return nil, nil
}

func listen(t *testing.T) (net.Listener, error) {
	t.Helper()
	return net.Listen("tcp", "127.0.0.1:0")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func newSignerFor(key string) (*tokens.Signer, error) { return tokens.NewSigner([]byte(key)) }

func authTokenFor(username string, exp time.Time) tokens.AuthToken {
	return tokens.AuthToken{Username: username, Expires: exp.Unix()}
}

func hashOf(tok string) string { return tokens.Hash(tok) }
