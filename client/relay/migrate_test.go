package relay_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/client/relay"
	"github.com/switchboardgg/switchboard/client/session"
)

// The host of TestMigrateAfterHostProcessDies runs in a process of its
// own (this test binary again, running TestHostProcessHelper), so that the
// test can kill it: no CLOSE, no goodbye, the relay times it out.
const (
	envHelperAPI   = "SWITCHBOARD_TEST_RELAY_HOST_API"
	envHelperUser  = "SWITCHBOARD_TEST_RELAY_HOST_USER"
	envHelperToken = "SWITCHBOARD_TEST_RELAY_HOST_TOKEN"
)

// TestHostProcessHelper is not a test: run by TestMigrateAfterHostProcessDies
// in a child process, it hosts a session with host migration, prints
// "CODE <join code>", and echoes every message until it is killed.
func TestHostProcessHelper(t *testing.T) {
	api := os.Getenv(envHelperAPI)
	if api == "" {
		t.Skip("a helper process of TestMigrateAfterHostProcessDies")
	}
	ctx := context.Background()
	sc, err := session.Login(ctx, api, os.Getenv(envHelperUser), os.Getenv(envHelperToken), &session.Config{Logger: discard})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	rc := relay.New(sc, &relay.Config{Logger: discard, Retransmit: 100 * time.Millisecond})
	host, err := rc.Host(ctx, relay.AllocateRequest{MaxConnections: 4, Region: "local", HostMigration: true})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	fmt.Println("CODE", host.JoinCode())
	buf := make([]byte, relay.DefaultMaxPayload)
	for {
		n, from, err := host.Recv(ctx, buf)
		if err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		_ = host.Send(ctx, from, append([]byte("echo "), buf[:n]...))
	}
}

// startHostProcess starts the helper host for user and returns its join
// code and the process.
func startHostProcess(t *testing.T, s *stack, user string) (string, *exec.Cmd) {
	t.Helper()
	tok, err := s.Backend.CreateAuthToken(t.Context(), user, 0)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostProcessHelper$", "-test.v=false")
	cmd.Env = append(os.Environ(), envHelperAPI+"="+s.API, envHelperUser+"="+user, envHelperToken+"="+tok)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "CODE ") || strings.HasPrefix(l, "ERR ") {
				lines <- l
				break
			}
		}
		close(lines)
	}()
	select {
	case l := <-lines:
		code, ok := strings.CutPrefix(l, "CODE ")
		if !ok {
			t.Fatalf("host process: %q", l)
		}
		return code, cmd
	case <-time.After(30 * time.Second):
		t.Fatal("the host process printed no join code")
	}
	return "", nil
}

// TestMigrateAfterHostProcessDies: a host process that opted in to host
// migration is killed; its two peers learn it from the relay (which times
// it out), both call Migrate at once, one takes the session over as its
// host with the same join code, the other reconnects to it, and they talk.
func TestMigrateAfterHostProcessDies(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the relay's 10 s idle timeout")
	}
	s := startStack(t)
	code, host := startHostProcess(t, s, "hoster")
	ctx := ctxT(t)
	clients := map[string]*relay.Client{"alice": s.client(t, "alice", nil), "bob": s.client(t, "bob", nil)}
	peers := map[string]*relay.Conn{}
	for name, rc := range clients {
		p, err := rc.Join(ctx, code)
		if err != nil {
			t.Fatalf("%s join: %v", name, err)
		}
		t.Cleanup(func() { p.Close() })
		if err := p.Send(ctx, p.HostID(), []byte("hi from "+name)); err != nil {
			t.Fatal(err)
		}
		if got, _ := recv(t, p); got != "echo hi from "+name {
			t.Fatalf("%s got %q from the host", name, got)
		}
		peers[name] = p
	}

	killed := time.Now()
	if err := host.Process.Kill(); err != nil { // no CLOSE: the relay must time it out
		t.Fatal(err)
	}
	_ = host.Wait()
	for name, p := range peers {
		select {
		case <-p.Done():
		case <-time.After(30 * time.Second):
			t.Fatalf("%s never learned that the host died", name)
		}
		if !errors.Is(p.Err(), relay.ErrHostGone) && !errors.Is(p.Err(), relay.ErrAllocationIDNotFound) {
			t.Fatalf("%s ended with %v, want the host gone", name, p.Err())
		}
	}

	// Both race to take over.
	learned := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	after := map[string]*relay.Conn{}
	for name, rc := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := rc.Migrate(ctx, peers[name], relay.AllocateRequest{MaxConnections: 4})
			if err != nil {
				t.Errorf("%s migrate: %v", name, err)
				return
			}
			mu.Lock()
			after[name] = c
			mu.Unlock()
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	t.Logf("host killed → peers told %s (the relay's idle timeout); → both migrated %s",
		learned.Sub(killed).Round(time.Millisecond), time.Since(learned).Round(time.Millisecond))
	var newHost, joiner *relay.Conn
	for _, c := range after {
		t.Cleanup(func() { c.Close() })
		if c.JoinCode() != code {
			t.Errorf("join code after migration %q, want %q", c.JoinCode(), code)
		}
		if c.IsHost() {
			newHost = c
		} else {
			joiner = c
		}
	}
	if newHost == nil || joiner == nil {
		t.Fatalf("after migration: host %v, joiner %v; want one of each", newHost, joiner)
	}
	if joiner.HostID() != newHost.ID() {
		t.Fatalf("the joiner's host %s, the new host %s", joiner.HostID(), newHost.ID())
	}
	if ev := waitEvent(t, newHost, relay.EventPeerConnected); ev.Peer != joiner.ID() {
		t.Fatalf("the new host heard of %s, want %s", ev.Peer, joiner.ID())
	}
	if err := joiner.Send(ctx, newHost.ID(), []byte("same session")); err != nil {
		t.Fatal(err)
	}
	if got, from := recv(t, newHost); got != "same session" || from != joiner.ID() {
		t.Fatalf("new host got %q from %s", got, from)
	}
	if err := newHost.Send(ctx, joiner.ID(), []byte("welcome back")); err != nil {
		t.Fatal(err)
	}
	if got, _ := recv(t, joiner); got != "welcome back" {
		t.Fatalf("joiner got %q", got)
	}
}

// TestMigrateWithoutOptIn: a host that did not opt in takes its code with
// it; Migrate fails with ErrJoinCodeNotFound.
func TestMigrateWithoutOptIn(t *testing.T) {
	s := startStack(t)
	ctx := ctxT(t)
	host, err := s.client(t, "hoster", nil).Host(ctx, relay.AllocateRequest{MaxConnections: 2, Region: "local"})
	if err != nil {
		t.Fatal(err)
	}
	rc := s.client(t, "alice", nil)
	p, err := rc.Join(ctx, host.JoinCode())
	if err != nil {
		t.Fatal(err)
	}
	host.Close()
	<-p.Done()
	if !errors.Is(p.Err(), relay.ErrHostGone) {
		t.Fatalf("joiner ended with %v", p.Err())
	}
	// The relay's release report reaches the store soon after the
	// DISCONNECT: until then the claim is "not held" and Migrate retries.
	if c, err := rc.Migrate(ctx, p, relay.AllocateRequest{MaxConnections: 2}); !errors.Is(err, relay.ErrJoinCodeNotFound) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("Migrate = %v, want ErrJoinCodeNotFound", err)
	}
	if _, err := rc.Migrate(ctx, host, relay.AllocateRequest{MaxConnections: 2}); err == nil {
		t.Fatal("Migrate of a host's Conn succeeded")
	}
}

// TestMigrateWhileHostAlive: a joiner that lost its own allocation (here:
// closed) while the host lives finds the claim refused as not held, and
// joins the same host again.
func TestMigrateWhileHostAlive(t *testing.T) {
	s := startStack(t)
	ctx := ctxT(t)
	host, err := s.client(t, "hoster", nil).Host(ctx, relay.AllocateRequest{MaxConnections: 2, Region: "local", HostMigration: true})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	rc := s.client(t, "alice", nil)
	p, err := rc.Join(ctx, host.JoinCode())
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	c, err := rc.Migrate(ctx, p, relay.AllocateRequest{MaxConnections: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.IsHost() || c.HostID() != host.ID() || c.JoinCode() != host.JoinCode() {
		t.Fatalf("after Migrate: host %v, its host %s (want %s), code %q", c.IsHost(), c.HostID(), host.ID(), c.JoinCode())
	}
	if err := c.Send(ctx, host.ID(), []byte("back")); err != nil {
		t.Fatal(err)
	}
	for {
		if got, from := recv(t, host); got == "back" && from == c.ID() {
			break
		}
	}
}
