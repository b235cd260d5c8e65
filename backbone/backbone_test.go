package backbone

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var discard = slog.New(slog.DiscardHandler)

// startServer starts an embedded server in a temp dir and a connection to
// it, both closed at the end of the test.
func startServer(t *testing.T) (*Embedded, *Conn) {
	t.Helper()
	e, err := StartEmbedded(EmbeddedConfig{DataDir: t.TempDir(), Logger: discard})
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	t.Cleanup(e.Shutdown)
	c := connect(t, e)
	return e, c
}

func connect(t *testing.T, e *Embedded) *Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Connect(ctx, Config{URL: e.ClientURL(), CredentialsFile: e.CredentialsFile(), Logger: discard,
		ReconnectWait: 20 * time.Millisecond, MaxReconnectWait: 100 * time.Millisecond, RequestTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestEmbeddedStartStop(t *testing.T) {
	e, err := StartEmbedded(EmbeddedConfig{DataDir: t.TempDir(), Logger: discard})
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	u, err := url.Parse(e.ClientURL())
	if err != nil {
		t.Fatalf("ClientURL %q: %v", e.ClientURL(), err)
	}
	if u.Hostname() != DefaultEmbeddedHost || u.Port() == "0" || u.Port() == "" {
		t.Errorf("ClientURL = %q, want %s and a real port", e.ClientURL(), DefaultEmbeddedHost)
	}
	c := connect(t, e)
	if !c.NATS().IsConnected() {
		t.Errorf("connection not connected")
	}
	c.Close()
	c.Close() // idempotent
	e.Shutdown()
	e.Shutdown() // idempotent
}

func TestEmbeddedBadPort(t *testing.T) {
	for _, port := range []int{-1, 65536} {
		if _, err := StartEmbedded(EmbeddedConfig{DataDir: t.TempDir(), Port: port, Logger: discard}); err == nil {
			t.Errorf("StartEmbedded(port %d) = nil error, want one", port)
		}
	}
}

func TestConfigDefaults(t *testing.T) {
	_, c := startServer(t)
	c2, err := Connect(context.Background(), Config{URL: c.cfg.URL, CredentialsFile: c.cfg.CredentialsFile})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer c2.Close()
	got := c2.cfg
	if got.Name != DefaultName || got.ReconnectWait != DefaultReconnectWait ||
		got.MaxReconnectWait != DefaultMaxReconnectWait || got.RequestTimeout != DefaultRequestTimeout ||
		got.MaxConcurrentHandlers != DefaultMaxConcurrentHandlers || got.Logger == nil {
		t.Errorf("defaults not applied: %+v", got)
	}
	if DefaultRequestTimeout != 2*time.Second || DefaultURL != "nats://127.0.0.1:4222" {
		t.Errorf("documented defaults changed")
	}
}

func TestConnectGivesUpWithContext(t *testing.T) {
	// A port nobody listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = Connect(ctx, Config{URL: "nats://" + addr, Logger: discard, ReconnectWait: 10 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Connect to nothing: got %v, want context.DeadlineExceeded", err)
	}
}

func TestBackoff(t *testing.T) {
	c := &Conn{cfg: Config{ReconnectWait: 100 * time.Millisecond, MaxReconnectWait: time.Second}}
	for n := 1; n <= 40; n++ {
		want := min(100*time.Millisecond<<min(n-1, 10), time.Second)
		got := c.backoff(n)
		if got > want || got < want*3/4 {
			t.Errorf("backoff(%d) = %v, want in [%v, %v]", n, got, want*3/4, want)
		}
	}
}

func TestRedactURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"nats://127.0.0.1:4222", "nats://127.0.0.1:4222"},
		{"nats://user:secret@host:4222", "nats://***@host:4222"},
		{"nats://a:b@h1:1,nats://h2:2", "nats://***@h1:1,nats://h2:2"},
		{"tok@host", "***@host"},
	} {
		if got := redactURL(tc.in); got != tc.want {
			t.Errorf("redactURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

type echoReq struct {
	N    int    `json:"n"`
	Mode string `json:"mode"`
}

type echoResp struct {
	N int `json:"n"`
}

func TestRequestHandle(t *testing.T) {
	_, c := startServer(t)
	stop, err := c.Handle("test.echo", "q", func(ctx context.Context, data []byte) (any, error) {
		var req echoReq
		if err := jsonUnmarshal(data, &req); err != nil {
			return nil, err
		}
		switch req.Mode {
		case "fail":
			return nil, errors.New("secret detail")
		case "slow":
			<-ctx.Done()
			return nil, ctx.Err()
		case "nil":
			return nil, nil
		}
		return echoResp{N: req.N + 1}, nil
	})
	if err != nil {
		t.Fatalf("Handle: %v", err)
	}

	t.Run("round trip", func(t *testing.T) {
		var resp echoResp
		if err := c.Request(context.Background(), "test.echo", echoReq{N: 41}, &resp); err != nil {
			t.Fatalf("Request: %v", err)
		}
		if resp.N != 42 {
			t.Errorf("got %d, want 42", resp.N)
		}
	})
	t.Run("nil reply", func(t *testing.T) {
		var resp map[string]any
		if err := c.Request(context.Background(), "test.echo", echoReq{Mode: "nil"}, &resp); err != nil {
			t.Fatalf("Request: %v", err)
		}
		if len(resp) != 0 {
			t.Errorf("got %v, want {}", resp)
		}
	})
	t.Run("handler error", func(t *testing.T) {
		var resp struct {
			Error struct{ Code, Message string }
		}
		if err := c.Request(context.Background(), "test.echo", echoReq{Mode: "fail"}, &resp); err != nil {
			t.Fatalf("Request: %v", err)
		}
		if resp.Error.Code != "internal" || resp.Error.Message != "internal error" {
			t.Errorf("got %+v, want the internal error reply", resp.Error)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		err := c.Request(ctx, "test.echo", echoReq{Mode: "slow"}, nil)
		if !errors.Is(err, ErrTimeout) {
			t.Fatalf("got %v, want ErrTimeout", err)
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("got %v, want a net.Error with Timeout()", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := c.Request(ctx, "test.echo", echoReq{}, nil); !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
	})
	t.Run("no responders", func(t *testing.T) {
		if err := c.Request(context.Background(), "test.nobody", echoReq{}, nil); !errors.Is(err, ErrNoResponders) {
			t.Errorf("got %v, want ErrNoResponders", err)
		}
	})

	if err := stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	if err := stop(); err != nil {
		t.Errorf("second stop: %v", err)
	}
	if err := c.Request(context.Background(), "test.echo", echoReq{}, nil); !errors.Is(err, ErrNoResponders) {
		t.Errorf("after stop: got %v, want ErrNoResponders", err)
	}
	c.Close()
	if err := c.Request(context.Background(), "test.echo", echoReq{}, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: got %v, want ErrClosed", err)
	}
}

func TestHandleConcurrencyLimit(t *testing.T) {
	e, _ := startServer(t)
	ctx := context.Background()
	c, err := Connect(ctx, Config{URL: e.ClientURL(), CredentialsFile: e.CredentialsFile(), Logger: discard, MaxConcurrentHandlers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var mu sync.Mutex
	running, peak := 0, 0
	release := make(chan struct{})
	stop, err := c.Handle("test.limit", "", func(ctx context.Context, _ []byte) (any, error) {
		mu.Lock()
		running++
		peak = max(peak, running)
		mu.Unlock()
		<-release
		mu.Lock()
		running--
		mu.Unlock()
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			if err := c.Request(ctx, "test.limit", nil, nil); err != nil {
				t.Errorf("Request: %v", err)
			}
		})
	}
	// Let the handlers run in turns, two at a time.
	for range 6 {
		release <- struct{}{}
	}
	wg.Wait()
	if err := stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	if peak > 2 {
		t.Errorf("peak concurrent handlers = %d, want <= 2", peak)
	}
}

func TestKeyValueRace(t *testing.T) {
	e, _ := startServer(t)
	cfg := jetstream.KeyValueConfig{Bucket: "race", History: 1, TTL: time.Hour}
	var wg sync.WaitGroup
	kvs := make([]jetstream.KeyValue, 4)
	for i := range kvs {
		c := connect(t, e)
		wg.Go(func() {
			kv, err := c.KeyValue(context.Background(), cfg)
			if err != nil {
				t.Errorf("KeyValue #%d: %v", i, err)
				return
			}
			kvs[i] = kv
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	ctx := context.Background()
	if _, err := kvs[0].Put(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	got, err := kvs[3].Get(ctx, "k")
	if err != nil || string(got.Value()) != "v" {
		t.Errorf("Get through another handle: %v, %v", got, err)
	}
	// Updating the config of an existing bucket works too.
	cfg.TTL = 2 * time.Hour
	kv, err := connect(t, e).KeyValue(ctx, cfg)
	if err != nil {
		t.Fatalf("KeyValue update: %v", err)
	}
	st, err := kv.Status(ctx)
	if err != nil || st.TTL() != 2*time.Hour {
		t.Errorf("TTL after update = %v (%v), want 2h", st.TTL(), err)
	}
}

// TestReconnectAfterRestart restarts the embedded server on the same port
// and data dir: the client reconnects and the data is still there.
func TestReconnectAfterRestart(t *testing.T) {
	dir := t.TempDir()
	e, err := StartEmbedded(EmbeddedConfig{DataDir: dir, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(e.ClientURL())
	port, _ := strconv.Atoi(u.Port())
	c := connect(t, e)
	ctx := context.Background()
	kv, err := c.KeyValue(ctx, jetstream.KeyValueConfig{Bucket: "persist"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	reconnected := make(chan struct{}, 1)
	c.NATS().SetReconnectHandler(func(_ *natsConn) { reconnected <- struct{}{} })
	e.Shutdown()

	e, err = StartEmbedded(EmbeddedConfig{DataDir: dir, Port: port, Logger: discard})
	if err != nil {
		t.Skipf("restart on port %d: %v", port, err)
	}
	defer e.Shutdown()
	select {
	case <-reconnected:
	case <-time.After(10 * time.Second):
		t.Fatal("client did not reconnect")
	}
	got, err := kv.Get(ctx, "k")
	if err != nil || string(got.Value()) != "v" {
		t.Errorf("Get after restart: %v, %v", got, err)
	}
	c.Close()
}
