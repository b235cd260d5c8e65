package node_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/goleak"

	"github.com/switchboardgg/switchboard/backbone"
	"github.com/switchboardgg/switchboard/internal/faultproxy"
	"github.com/switchboardgg/switchboard/node"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/tokens"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var discard = slog.New(slog.DiscardHandler)

// env is one game node on 127.0.0.1:0; with NATS it has a real embedded
// NATS, store and the command path.
type env struct {
	t      *testing.T
	signer *tokens.Signer
	srv    *node.Server
	url    string
	reg    *prometheus.Registry
	served chan error
	bb     *backbone.Conn
	db     *store.DB
	proxy  *faultproxy.Proxy // newEnvProxied: between the node and NATS
}

func newEnv(t *testing.T, withNATS bool, tweak func(*node.Config)) *env {
	t.Helper()
	return newEnvProxied(t, withNATS, false, tweak)
}

// newEnvProxied is newEnv; with proxied, the node reaches NATS through
// e.proxy, whose blackout (SetBlackout) cuts the node off.
func newEnvProxied(t *testing.T, withNATS, proxied bool, tweak func(*node.Config)) *env {
	t.Helper()
	e := &env{t: t, reg: prometheus.NewRegistry(), served: make(chan error, 1)}
	cfg := node.Config{ID: "node-test", Logger: discard, Registerer: e.reg}
	if withNATS {
		emb, err := backbone.StartEmbedded(backbone.EmbeddedConfig{DataDir: t.TempDir(), Logger: discard})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(emb.Shutdown)
		ctx := context.Background()
		e.bb, err = backbone.Connect(ctx, backbone.Config{URL: emb.ClientURL(), CredentialsFile: emb.CredentialsFile(), Logger: discard})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.bb.Close() })
		if e.db, err = store.Open(ctx, e.bb, store.Config{Logger: discard}); err != nil {
			t.Fatal(err)
		}
		key, err := e.db.SigningKey(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if e.signer, err = tokens.NewSigner(key); err != nil {
			t.Fatal(err)
		}
		cfg.DB, cfg.Backbone = e.db, e.bb
		if proxied {
			addr := startProxy(t, e, strings.TrimPrefix(emb.ClientURL(), "nats://"))
			bb, err := backbone.Connect(ctx, backbone.Config{
				URL: "nats://" + addr, CredentialsFile: emb.CredentialsFile(), Logger: discard,
				ReconnectWait: 10 * time.Millisecond, MaxReconnectWait: 50 * time.Millisecond,
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { bb.Close() })
			if cfg.DB, err = store.Open(ctx, bb, store.Config{Logger: discard}); err != nil {
				t.Fatal(err)
			}
			cfg.Backbone = bb
		}
	} else {
		key := make([]byte, 32)
		_, _ = rand.Read(key)
		e.signer, _ = tokens.NewSigner(key)
	}
	cfg.Signer = e.signer
	if tweak != nil {
		tweak(&cfg)
	}
	srv, err := node.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.url = "ws://" + ln.Addr().String() + node.Path
	go func() { e.served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := <-e.served; !errors.Is(err, node.ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
	if withNATS { // wait for the command subscriptions
		waitFor(t, "registry entry", func() bool {
			_, err := e.db.GetNode(context.Background(), "node-test")
			return err == nil
		})
	}
	return e
}

// startProxy serves e.proxy, a fault proxy to target, on 127.0.0.1:0
// until the test ends, and returns its address.
func startProxy(t *testing.T, e *env, target string) string {
	t.Helper()
	p, err := faultproxy.New(faultproxy.Config{Target: target, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(ln) }()
	t.Cleanup(func() {
		_ = p.Close()
		if err := <-served; !errors.Is(err, faultproxy.ErrServerClosed) {
			t.Errorf("proxy Serve returned %v, want ErrServerClosed", err)
		}
	})
	e.proxy = p
	return ln.Addr().String()
}

// record is a room record as control creates it.
func record(id string, mod func(*store.Room)) *store.Room {
	r := &store.Room{
		RoomID: id, Status: store.StatusOpen, State: store.StateWaiting,
		SyncMode: store.SyncFrame, TickRate: 30, MaxPlayers: 4, StartMode: store.StartAuto,
		Access: store.AccessTicket, ReconnectWindowSeconds: 60, MaxDurationSeconds: 3600,
		CreatedAt: time.Now().UTC(), NodeID: "node-test",
	}
	if mod != nil {
		mod(r)
	}
	return r
}

func session(seat int) string { return fmt.Sprintf("sess-%d", seat) }

// admit seats session(seat) in room rec: through NATS and the records when
// the env has them, else by calling the command handler.
func (e *env) admit(rec *store.Room, seat int) {
	e.t.Helper()
	ctx := context.Background()
	req := &store.AdmitRequest{Room: rec, Seat: seat, Username: fmt.Sprintf("user%d", seat), SessionID: session(seat)}
	if e.db == nil {
		if _, err := e.srv.Commands().Admit(ctx, req); err != nil {
			e.t.Fatalf("admit: %v", err)
		}
		return
	}
	if _, err := e.db.GetRoom(ctx, rec.RoomID); errors.Is(err, store.ErrNotFound) {
		if err := e.db.CreateRoom(ctx, rec); err != nil {
			e.t.Fatal(err)
		}
	}
	if _, err := e.db.UpdateRoom(ctx, rec.RoomID, func(r *store.Room) error {
		r.PutSeat(store.Seat{Seat: seat, Username: req.Username, SessionID: req.SessionID, Status: store.SeatJoined, JoinedAt: time.Now().UTC()})
		return nil
	}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := store.SendCommand(ctx, e.bb, "node-test", store.VerbAdmit, req); err != nil {
		e.t.Fatalf("admit: %v", err)
	}
}

// ticket mints a connect ticket for session(seat).
func (e *env) ticket(room string, seat int, mod func(*tokens.ConnectTicket)) string {
	e.t.Helper()
	ct := tokens.ConnectTicket{
		RoomID: room, Seat: seat, Username: fmt.Sprintf("user%d", seat), SessionID: session(seat),
		ClientSessionID: "client-session-1", ExpiresMS: time.Now().Add(time.Minute).UnixMilli(), ID: tokens.NewID(),
	}
	if mod != nil {
		mod(&ct)
	}
	s, err := e.signer.SignConnectTicket(ct)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// join admits seat in rec, connects and returns the client and its WELCOME.
func (e *env) join(rec *store.Room, seat int) (*client, *roomwire.Welcome) {
	e.t.Helper()
	e.admit(rec, seat)
	c := e.dial()
	c.hello(e.ticket(rec.RoomID, seat, nil))
	return c, expect[*roomwire.Welcome](c)
}

// counter returns the value of a counter of the node's registry.
func (e *env) counter(name string, labels ...string) float64 {
	e.t.Helper()
	fams, err := e.reg.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				if !hasLabel(m, labels[i], labels[i+1]) {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			}
		}
	}
	return 0
}

func hasLabel(m *dto.Metric, k, v string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == k && l.GetValue() == v {
			return true
		}
	}
	return false
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// client is a bare im.game.v1 WebSocket client.
type client struct {
	t  *testing.T
	nc net.Conn
	rw io.ReadWriter
	mu sync.Mutex // serializes writes (ReadServerData answers pings)
}

type lockedWriter struct{ c *client }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	return w.c.nc.Write(p)
}

func (e *env) dial() *client { return e.dialWith(nil) }

// dialWith dials the node; netDial may shape the TCP connection.
func (e *env) dialWith(netDial func(ctx context.Context, network, addr string) (net.Conn, error)) *client {
	e.t.Helper()
	d := ws.Dialer{Protocols: []string{node.Subprotocol}, Timeout: 5 * time.Second, NetDial: netDial}
	nc, br, _, err := d.Dial(context.Background(), e.url)
	if err != nil {
		e.t.Fatalf("dial: %v", err)
	}
	c := &client{t: e.t, nc: nc}
	var r io.Reader = nc
	if br != nil {
		r = br
	}
	c.rw = struct {
		io.Reader
		io.Writer
	}{bufio.NewReader(r), lockedWriter{c}}
	e.t.Cleanup(func() { nc.Close() })
	return c
}

func (c *client) sendRaw(p []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return wsutil.WriteClientBinary(c.nc, p)
}

func (c *client) send(m roomwire.Message) {
	c.t.Helper()
	b, err := roomwire.Append(nil, m)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := c.sendRaw(b); err != nil {
		c.t.Fatalf("send %s: %v", m.Type(), err)
	}
}

func (c *client) hello(ticket string) {
	c.t.Helper()
	b, err := roomwire.AppendHandshake(nil, roomwire.KindHello, []byte(ticket), &roomwire.Hello{ClientNonce: 1, SDKVersion: "test/1"})
	if err != nil {
		c.t.Fatal(err)
	}
	if err := c.sendRaw(b); err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) resume(token []byte, last uint32) {
	c.t.Helper()
	b, err := roomwire.AppendHandshake(nil, roomwire.KindResume, token, &roomwire.Resume{ClientNonce: 2, LastFrame: last})
	if err != nil {
		c.t.Fatal(err)
	}
	if err := c.sendRaw(b); err != nil {
		c.t.Fatal(err)
	}
}

// read returns the next message, or an error when the connection ends
// (a wsutil.ClosedError for a close frame) or 5 s pass.
func (c *client) read() (roomwire.Message, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		p, op, err := wsutil.ReadServerData(c.rw)
		if err != nil {
			return nil, err
		}
		if op != ws.OpBinary {
			c.t.Errorf("node sent a %v frame", op)
			continue
		}
		m, err := roomwire.Decode(p)
		if err != nil {
			c.t.Errorf("node sent an undecodable message % x: %v", p, err)
			continue
		}
		return m, nil
	}
}

// next returns the next message that is not a FRAME, PONG or MEMBER unless
// T asks for one.
func expect[T roomwire.Message](c *client) T {
	c.t.Helper()
	for {
		m, err := c.read()
		if err != nil {
			var zero T
			c.t.Fatalf("waiting for %T: %v", zero, err)
		}
		if v, ok := m.(T); ok {
			return v
		}
		switch m.Type() {
		case roomwire.TypeFrame, roomwire.TypePong, roomwire.TypeMember, roomwire.TypeRoomState:
			continue
		}
		var zero T
		c.t.Fatalf("got %s (%+v), want %T", m.Type(), m, zero)
	}
}

// expectError reads until an ERROR, which must have code, then until the
// connection ends.
func (c *client) expectError(code uint8) *roomwire.Error {
	c.t.Helper()
	e := expect[*roomwire.Error](c)
	if e.Code != code {
		c.t.Fatalf("ERROR %d %s (reason %q), want code %d", e.Code, e.Message, e.Reason, code)
	}
	c.expectClosed()
	return e
}

// expectClosed reads until the connection ends, ignoring messages.
func (c *client) expectClosed() {
	c.t.Helper()
	for {
		_, err := c.read()
		if err == nil {
			continue
		}
		var ce wsutil.ClosedError
		var ne net.Error
		if errors.As(err, &ce) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
			errors.Is(err, net.ErrClosed) || strings.Contains(err.Error(), "reset by peer") {
			return
		}
		if errors.As(err, &ne) && ne.Timeout() {
			c.t.Fatal("connection still open")
		}
		return
	}
}
