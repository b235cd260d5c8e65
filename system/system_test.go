package system_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboardgg/switchboard/internal/kcploop"

	"github.com/switchboardgg/switchboard/client/backend"
	"github.com/switchboardgg/switchboard/client/rooms"
	"github.com/switchboardgg/switchboard/control"
	"github.com/switchboardgg/switchboard/node"
	"github.com/switchboardgg/switchboard/system"
)

func TestMain(m *testing.M) {
	// kcp-go starts its scheduler at init (system imports node/udp).
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction(kcploop.KCPSchedulerGoroutine))
}

var discard = slog.New(slog.DiscardHandler)

// testConfig is every role on 127.0.0.1 with free ports in dir.
func testConfig(dir string) system.Config {
	return system.Config{
		DataDir: dir,
		NATS:    system.NATSConfig{Addr: "127.0.0.1:0"},
		API:     system.APIConfig{Addr: "127.0.0.1:0", Control: control.Config{LoginRate: -1, JoinRate: -1}},
		Node:    system.NodeConfig{Addr: "127.0.0.1:0"},
		Logger:  discard,
	}
}

// start starts cfg and closes it at the end of the test.
func start(t *testing.T, cfg system.Config) *system.System {
	t.Helper()
	s, err := system.Start(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestStartServesEveryRole(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Admin.Addr = "127.0.0.1:0"
	cfg.ReadyFile = filepath.Join(t.TempDir(), "ready.json")
	cfg.API.PublishServerKey = true
	s := start(t, cfg)
	r := s.Ready()
	for name, got := range map[string]string{"api": r.API, "node_ws": r.NodeWS, "admin": r.Admin, "nats": r.NATS, "server_key": r.ServerKey, "node_id": r.NodeID} {
		if got == "" || strings.Contains(got, ":0/") || strings.HasSuffix(got, ":0") {
			t.Errorf("Ready %s = %q, want a real value", name, got)
		}
	}
	if !strings.HasPrefix(r.NodeWS, "ws://") || !strings.HasSuffix(r.NodeWS, node.Path) {
		t.Errorf("Ready node_ws = %q, want ws://…%s", r.NodeWS, node.Path)
	}
	if len(r.TLS) != 0 || r.TLSFingerprint != "" {
		t.Errorf("Ready says TLS without TLS: %v %q", r.TLS, r.TLSFingerprint)
	}
	if _, err := os.Stat(cfg.ReadyFile); err != nil {
		t.Errorf("ready file: %v", err)
	}
	for _, u := range []string{r.API + "/healthz", r.Admin + "/metrics"} {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %s", u, resp.Status)
		}
	}
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()

	// A room on the node, through the API: the roles found each other.
	be, err := backend.New(r.API, r.ServerKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	room := createRoom(t, be)
	if room.NodeID != r.NodeID {
		t.Errorf("room on node %q, want %q", room.NodeID, r.NodeID)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Drain(ctx); err != nil {
		t.Errorf("Drain: %v", err)
	}
	if _, err := os.Stat(cfg.ReadyFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ready file after Drain: %v, want it removed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close after Drain: %v", err)
	}
	if s.Err() != nil {
		t.Errorf("Err = %v after a clean drain", s.Err())
	}
}

// createRoom creates a relay room, retrying until the node registered.
func createRoom(t *testing.T, be *backend.Client) *backend.Room {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for {
		room, err := be.CreateRoom(ctx, backend.CreateRoomRequest{SyncMode: "relay", MaxPlayers: new(2), StartMode: "auto"})
		if err == nil {
			return room
		}
		if !errors.Is(err, rooms.ErrGameNodeUnavailable) || ctx.Err() != nil {
			t.Fatalf("create room: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestDataDirLock(t *testing.T) {
	dir := t.TempDir()
	first := start(t, testConfig(dir))
	_, err := system.Start(t.Context(), testConfig(dir))
	var le *system.LockedError
	if !errors.Is(err, system.ErrLocked) || !errors.As(err, &le) {
		t.Fatalf("second Start on one data dir: got %v, want a LockedError", err)
	}
	if le.PID != os.Getpid() || le.Lock != filepath.Join(dir, system.LockFile) {
		t.Errorf("LockedError = %+v, want pid %d and lock %s", le, os.Getpid(), filepath.Join(dir, system.LockFile))
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	start(t, testConfig(dir)) // the lock is free again
}

func TestNodeIDKeptInDataDir(t *testing.T) {
	dir := t.TempDir()
	s := start(t, testConfig(dir))
	id := s.Ready().NodeID
	if err := system.ValidNodeID(id); err != nil {
		t.Fatalf("derived node id: %v", err)
	}
	s.Close()
	if got := start(t, testConfig(dir)).Ready().NodeID; got != id {
		t.Errorf("node id after restart = %q, want %q", got, id)
	}
}

func TestNodeIDInvalid(t *testing.T) {
	dir := t.TempDir()
	readyFile := filepath.Join(t.TempDir(), "ready.json")
	cfg := testConfig(dir)
	cfg.ReadyFile = readyFile
	cfg.Node.ID = "ip-10-0-0-1.ec2.internal"
	if _, err := system.Start(t.Context(), cfg); !errors.Is(err, system.ErrConfig) {
		t.Errorf("Start with node id %q: got %v, want ErrConfig", cfg.Node.ID, err)
	}
	// An id broken by hand in the data dir is not replaced silently.
	if err := os.WriteFile(filepath.Join(dir, system.NodeIDFile), []byte("-bad\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Node.ID = ""
	if _, err := system.Start(t.Context(), cfg); !errors.Is(err, system.ErrConfig) {
		t.Errorf("Start with a bad node-id file: got %v, want ErrConfig", err)
	}
	if _, err := os.Stat(readyFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ready file after a failed start: %v, want none", err)
	}
}

// TestNATSPortInUse checks that the cause of an embedded server that
// cannot start is in the error, and that a failed start frees the data
// dir.
func TestNATSPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.NATS.Addr = ln.Addr().String()
	if _, err := system.Start(t.Context(), cfg); !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("Start with the NATS port taken: got %v, want EADDRINUSE", err)
	}
	start(t, testConfig(dir))
}

// TestStartClosesGivenListeners checks that Start takes over the
// listeners in Config, on error too.
func TestStartClosesGivenListeners(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t.TempDir())
	cfg.Node.Listener = ln
	cfg.TLS.CertFile = "half-a-pair.pem"
	if _, err := system.Start(t.Context(), cfg); !errors.Is(err, system.ErrConfig) {
		t.Fatalf("Start with half a key pair: got %v, want ErrConfig", err)
	}
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("given listener after a failed Start: Accept = %v, want ErrClosed", err)
	}
}

// TestAPIHardened checks that the API is served with control's hardened
// http.Server: a header over the cap is refused, a trickled body and an
// idle keep-alive connection are cut off by their timeouts.
func TestAPIHardened(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Roles = system.RoleControl
	cfg.API.ServerKey = "system-test-server-key-0123456789"
	cfg.API.Control.ReadTimeout = 300 * time.Millisecond
	cfg.API.Control.IdleTimeout = 300 * time.Millisecond
	addr := strings.TrimPrefix(start(t, cfg).Ready().API, "http://")

	t.Run("1 MB header", func(t *testing.T) {
		c := dial(t, addr)
		go func() {
			_, _ = fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n", strings.Repeat("a", 1<<20))
		}()
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("read response: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("got %s, want 431", resp.Status)
		}
	})
	t.Run("trickled body", func(t *testing.T) {
		c := dial(t, addr)
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			if _, err := io.WriteString(c, "POST /client/v1/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"); err != nil {
				return
			}
			t := time.NewTicker(50 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					if _, err := io.WriteString(c, " "); err != nil {
						return
					}
				}
			}
		}()
		waitClosed(t, c)
	})
	t.Run("idle keep-alive", func(t *testing.T) {
		c := dial(t, addr)
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("read response: %v", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.Close {
			t.Fatalf("server closed the connection after the response; want keep-alive")
		}
		waitClosed(t, c)
	})
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitClosed reads c until the server closes it; a connection still open
// after 10 s fails the test (the timeouts under test are 300 ms).
func waitClosed(t *testing.T, c net.Conn) {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection still open after 10 s")
	}
}

// TestZeroConfig checks the documented defaults: every role, embedded
// NATS, loopback listeners on free ports, data in DefaultDataDir.
func TestZeroConfig(t *testing.T) {
	t.Chdir(t.TempDir())
	s := start(t, system.Config{Logger: discard})
	r := s.Ready()
	for name, u := range map[string]string{"api": r.API, "node_ws": r.NodeWS, "nats": r.NATS} {
		if !strings.Contains(u, "://127.0.0.1:") {
			t.Errorf("Ready %s = %q, want 127.0.0.1", name, u)
		}
	}
	if r.Admin != "" || r.ServerKey != "" {
		t.Errorf("Ready admin %q, server key set %v; want no admin listener and the key unpublished", r.Admin, r.ServerKey != "")
	}
	for _, f := range []string{system.LockFile, system.NodeIDFile, system.ServerKeyFile, "nats"} {
		if _, err := os.Stat(filepath.Join(system.DefaultDataDir, f)); err != nil {
			t.Errorf("data dir: %v", err)
		}
	}
}
