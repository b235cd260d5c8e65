package rooms

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// waitLimit keeps a broken test from hanging; no assertion depends on it.
const waitLimit = 10 * time.Second

// testClock is an injectable clock that moves only when told.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock() *testClock { return &testClock{t: time.UnixMilli(time.Now().UnixMilli())} }

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v, ok := <-ch:
		if !ok {
			t.Fatalf("%s: channel closed", what)
		}
		return v
	case <-time.After(waitLimit):
		t.Fatalf("%s: nothing after %s", what, waitLimit)
	}
	panic("unreachable")
}

// fakeNode is a game node speaking real WebSocket (gobwas, server side) on
// 127.0.0.1:0. Each accepted connection, once its handshake is read, goes to
// conns; the test answers it.
type fakeNode struct {
	t     *testing.T
	ln    net.Listener
	url   string
	conns chan *nodeConn
	wg    sync.WaitGroup
	mu    sync.Mutex
	open  []*nodeConn
}

func newFakeNode(t *testing.T) *fakeNode {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &fakeNode{t: t, ln: ln, url: "ws://" + ln.Addr().String() + "/game/v1/ws", conns: make(chan *nodeConn, 16)}
	n.wg.Add(1)
	go n.accept()
	t.Cleanup(n.close)
	return n
}

func (n *fakeNode) accept() {
	defer n.wg.Done()
	for {
		nc, err := n.ln.Accept()
		if err != nil {
			return
		}
		n.wg.Add(1)
		go n.serve(nc)
	}
}

func (n *fakeNode) serve(nc net.Conn) {
	defer n.wg.Done()
	up := ws.Upgrader{Protocol: func(p []byte) bool { return string(p) == roomwire.Subprotocol }}
	if _, err := up.Upgrade(nc); err != nil {
		nc.Close()
		return
	}
	c := &nodeConn{nc: nc, in: make(chan roomwire.Message, 1024), pings: make(chan roomwire.Ping, 1024), closed: make(chan struct{})}
	c.rw = lockedRW{r: nc, w: &c.wmu, nc: nc}
	data, err := wsutil.ReadClientBinary(c.rw)
	if err != nil {
		nc.Close()
		return
	}
	hs, err := roomwire.ParseHandshake(data)
	if err != nil {
		nc.Close()
		return
	}
	hs.Token = append([]byte(nil), hs.Token...)
	c.hs = hs
	n.mu.Lock()
	n.open = append(n.open, c)
	n.mu.Unlock()
	n.conns <- c
	defer close(c.closed)
	for {
		data, err := wsutil.ReadClientBinary(c.rw)
		if err != nil {
			nc.Close()
			return
		}
		m, err := roomwire.Decode(data)
		if err != nil {
			continue
		}
		m = clone(m)
		if p, ok := m.(*roomwire.Ping); ok {
			select {
			case c.pings <- *p:
			default:
			}
			continue
		}
		select {
		case c.in <- m:
		default:
		}
	}
}

func (n *fakeNode) close() {
	n.ln.Close()
	n.mu.Lock()
	for _, c := range n.open {
		c.nc.Close()
	}
	n.mu.Unlock()
	// Connections still waiting to be handed over.
	go func() {
		for c := range n.conns {
			c.nc.Close()
		}
	}()
	n.wg.Wait()
	close(n.conns)
}

// next returns the next connection after its handshake.
func (n *fakeNode) next() *nodeConn {
	n.t.Helper()
	return recv(n.t, n.conns, "node connection")
}

// expectNoConn checks that no connection is waiting.
func (n *fakeNode) expectNoConn() {
	n.t.Helper()
	select {
	case c := <-n.conns:
		n.t.Fatalf("unexpected connection with handshake kind %d", c.hs.Kind)
	default:
	}
}

type lockedRW struct {
	r  io.Reader
	w  *sync.Mutex
	nc net.Conn
}

func (l lockedRW) Read(p []byte) (int, error) { return l.r.Read(p) }
func (l lockedRW) Write(p []byte) (int, error) {
	l.w.Lock()
	defer l.w.Unlock()
	return l.nc.Write(p)
}

// nodeConn is one client connection as the fake node sees it.
type nodeConn struct {
	nc     net.Conn
	rw     lockedRW
	wmu    sync.Mutex
	hs     roomwire.Handshake
	in     chan roomwire.Message // client messages but PING
	pings  chan roomwire.Ping
	closed chan struct{} // the client's side is gone
}

func (c *nodeConn) send(t *testing.T, m roomwire.Message) {
	t.Helper()
	b, err := roomwire.Append(nil, m)
	if err != nil {
		t.Fatalf("encode %s: %v", m.Type(), err)
	}
	_ = wsutil.WriteServerBinary(c.rw, b) // the client may be gone already
}

func (c *nodeConn) sendRaw(b []byte) { _ = wsutil.WriteServerBinary(c.rw, b) }

// recvType returns the next client message of type t, skipping others.
func (c *nodeConn) recvType(t *testing.T, typ roomwire.Type) roomwire.Message {
	t.Helper()
	for {
		m := recv(t, c.in, "client message "+typ.String())
		if m.Type() == typ {
			return m
		}
	}
}

func (c *nodeConn) kill() { c.nc.Close() }

func clone(m roomwire.Message) roomwire.Message {
	b, _ := roomwire.Append(nil, m)
	out, _ := roomwire.Decode(b) // fresh bytes: nothing aliases the read buffer
	return out
}

// welcome is a WELCOME for seat 0 of a 2-seat frame room.
func welcome(frame uint32, token string) *roomwire.Welcome {
	return &roomwire.Welcome{
		Seat: 0, SyncMode: roomwire.SyncFrame, TickRate: 30, RoomState: roomwire.StatePlaying,
		StartFrame: 1, Frame: frame, ResumeToken: []byte(token), ServerTimeMS: 1_800_000_000_000,
		SnapshotSeat: -1, MaxPlayers: 2,
		Members: []roomwire.MemberInfo{{Seat: 0, Username: "alice", Online: true}, {Seat: 1, Username: "bob", Online: true}},
	}
}

func tick(n uint32, inputs ...roomwire.SeatInput) roomwire.TickFrame {
	return roomwire.TickFrame{Number: n, Inputs: inputs}
}

// fakeControl serves C0–C3 for the fake node.
type fakeControl struct {
	t   *testing.T
	srv *httptest.Server

	mu         sync.Mutex
	nodeURL    string
	udp        map[string]any // connect fields of the UDP channel; nil: none
	window     int
	joins      []map[string]string // request bodies
	leaves     int
	tickets    int
	joinErrors []apiErrorJSON // answered (and consumed) before joins succeed
}

type apiErrorJSON struct {
	Status       int
	Code, Reason string
}

func newFakeControl(t *testing.T, nodeURL string) *fakeControl {
	t.Helper()
	fc := &fakeControl{t: t, nodeURL: nodeURL, window: 60}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /client/v1/sessions", func(w http.ResponseWriter, r *http.Request) {
		writeTestJSON(w, 201, map[string]any{
			"access_token": "at-1", "refresh_token": "rt-1", "expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano),
			"session_id": "s-1", "user": map[string]string{"username": "alice"},
		})
	})
	mux.HandleFunc("POST /client/v1/game/rooms/{id}/join", func(w http.ResponseWriter, r *http.Request) {
		var body map[string]string
		_ = json.NewDecoder(r.Body).Decode(&body)
		fc.mu.Lock()
		fc.joins = append(fc.joins, body)
		if len(fc.joinErrors) > 0 {
			e := fc.joinErrors[0]
			fc.joinErrors = fc.joinErrors[1:]
			fc.mu.Unlock()
			writeTestError(w, e.Status, e.Code, e.Reason)
			return
		}
		fc.tickets++
		ticket := fmt.Sprintf("ticket-%d", fc.tickets)
		status := 201
		if len(fc.joins) > 1 {
			status = 200
		}
		url, window := fc.nodeURL, fc.window
		connect := map[string]any{"node_id": "n1", "ws_url": url, "connect_ticket": ticket, "protocol_version": 1, "expires_at": "2026-11-10T08:01:00.000Z", "session_key": "c2VjcmV0"}
		for k, v := range fc.udp {
			connect[k] = v
		}
		fc.mu.Unlock()
		writeTestJSON(w, status, map[string]any{
			"room":    map[string]any{"room_id": r.PathValue("id"), "status": "open", "sync_mode": "frame", "tick_rate": 30, "max_players": 2, "reconnect_window_seconds": window},
			"member":  map[string]any{"seat": 0, "username": "alice", "status": "joined"},
			"connect": connect,
		})
	})
	mux.HandleFunc("POST /client/v1/game/rooms/{id}/leave", func(w http.ResponseWriter, r *http.Request) {
		fc.mu.Lock()
		fc.leaves++
		fc.mu.Unlock()
		writeTestJSON(w, 200, map[string]any{"member": map[string]any{"seat": 0, "username": "alice", "status": "left"}})
	})
	fc.srv = httptest.NewServer(mux)
	t.Cleanup(fc.srv.Close)
	return fc
}

func (fc *fakeControl) joinBodies() []map[string]string {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return append([]map[string]string(nil), fc.joins...)
}

func writeTestJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeTestError(w http.ResponseWriter, status int, code, reason string) {
	e := map[string]any{"code": code, "message": strings.ReplaceAll(code, "_", " ")}
	if reason != "" {
		e["details"] = map[string]string{"reason": reason}
	}
	writeTestJSON(w, status, map[string]any{"error": e})
}

// testConfig is a Config with short intervals, a discarding logger, a
// private HTTP transport and the test clock.
func testConfig(t *testing.T, clk *testClock) *Config {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &Config{
		HTTPClient: &http.Client{Transport: tr, Timeout: waitLimit},
		Logger:     slog.New(slog.DiscardHandler),
		Now:        clk.Now,
		Heartbeat:  10 * time.Millisecond,
		Backoff:    func(int) time.Duration { return 0 },
	}
}

// setup logs in against a fake control and node.
func setup(t *testing.T, mutate func(*Config)) (*Client, *fakeControl, *fakeNode, *testClock) {
	t.Helper()
	node := newFakeNode(t)
	fc := newFakeControl(t, node.url)
	clk := newTestClock()
	cfg := testConfig(t, clk)
	if mutate != nil {
		mutate(cfg)
	}
	c, err := Login(t.Context(), fc.srv.URL, "alice", "auth", cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, fc, node, clk
}

// connect connects a room and answers its HELLO with w.
func connect(t *testing.T, c *Client, node *fakeNode, w *roomwire.Welcome) (*Room, *nodeConn) {
	t.Helper()
	type result struct {
		r   *Room
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := c.Connect(t.Context(), "rank-8812", JoinOptions{Ticket: "gtk_1", ClientSessionID: "join-6f2a01b7-468e"})
		done <- result{r, err}
	}()
	var nc *nodeConn
	select {
	case nc = <-node.conns:
	case res := <-done:
		t.Fatalf("Connect before the handshake: %v", res.err)
	case <-time.After(waitLimit):
		t.Fatal("no handshake")
	}
	if nc.hs.Kind != roomwire.KindHello {
		t.Fatalf("handshake kind %d, want HELLO", nc.hs.Kind)
	}
	nc.send(t, w)
	res := recv(t, done, "Connect")
	if res.err != nil {
		t.Fatalf("Connect: %v", res.err)
	}
	t.Cleanup(func() { res.r.Close() })
	return res.r, nc
}

// nextEvent returns the next event of kind k, skipping others.
func nextEvent(t *testing.T, r *Room, k EventKind) Event {
	t.Helper()
	for {
		ev := recv(t, r.Events(), "event "+k.String())
		if ev.Kind == k {
			return ev
		}
	}
}

// frameNumbers reads n frames and returns their numbers.
func frameNumbers(t *testing.T, r *Room, n int) []uint32 {
	t.Helper()
	var got []uint32
	for range n {
		f := recv(t, r.Frames(), "frame")
		got = append(got, f.Number)
	}
	return got
}
