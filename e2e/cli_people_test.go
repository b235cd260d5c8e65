package e2e_test

import (
	"bytes"
	"errors"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/client/backend"
)

// cliAll runs the binary with args and returns its standard output and
// error and its exit error.
func cliAll(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var o, e bytes.Buffer
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("switchboard %v: %v", args, err)
	}
	return o.String(), e.String(), err
}

// TestCLIForPeople walks the client verbs as a new user following the
// README did, through the items the foundation issue lists: room watch names
// states and member kinds; failures are printed with their reasons, counted,
// and exit non-zero; error text says what failed without naming our
// packages.
func TestCLIForPeople(t *testing.T) {
	dir := t.TempDir()
	// Logins refill once every 1,000 s: the bucket's burst (20) is all
	// there is, as when bench rooms met dev's login limit.
	p := start(t, "dev", "--api", "127.0.0.1:0", "--node", "127.0.0.1:0", "--admin", "", "--nats", "127.0.0.1:0",
		"--data-dir", dir, "--login-rate", "0.001")
	rf := dir + "/ready-cli.json"
	if err := writeReady(rf, p.ready); err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t, 60*time.Second)
	be, err := backend.New(p.ready.API, p.ready.ServerKey, nil)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("room watch", func(t *testing.T) {
		tick := 10
		if _, err := be.CreateRoom(ctx, backend.CreateRoomRequest{RoomID: "watch-1", SyncMode: "frame", TickRate: tick, MaxPlayers: 2, StartMode: "auto"}); err != nil {
			t.Fatal(err)
		}
		out := new(syncBuffer)
		cmd := exec.Command(binary, "room", "watch", "watch-1", "--every", "5", "--ready-file", rf)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		for !strings.Contains(out.String(), "frame 10") {
			select {
			case err := <-done:
				t.Fatalf("room watch exited early: %v\n%s", err, out)
			case <-ctx.Done():
				t.Fatalf("room watch printed no frame 10:\n%s", out)
			case <-time.After(50 * time.Millisecond):
			}
		}
		if err := be.CloseRoom(ctx, "watch-1", "", []byte(`{"winner":"nobody"}`)); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("room watch after the room closed: %v\n%s", err, out)
			}
		case <-ctx.Done():
			t.Fatalf("room watch still running after the room closed:\n%s", out)
		}
		got := out.String()
		for _, want := range []string{
			"joined room watch-1 in seat 0 of 2 (frame sync at 10 Hz); room waiting\n",
			"room playing from frame 1\n",
			"room ending closed_by_server result {\"winner\":\"nobody\"}\n",
			"room closed closed_by_server result {\"winner\":\"nobody\"}\n",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("room watch output lacks %q:\n%s", want, got)
			}
		}
		if regexp.MustCompile(`state \d`).MatchString(got) {
			t.Errorf("room watch prints a raw state number:\n%s", got)
		}
	})

	t.Run("room watch error text", func(t *testing.T) {
		_, stderr, err := cliAll(t, "room", "watch", "no-such-room", "--ready-file", rf)
		if err == nil {
			t.Fatal("room watch of a missing room exited 0")
		}
		if !strings.HasPrefix(stderr, "switchboard: room watch no-such-room: getting a join ticket: ") || strings.Contains(stderr, "bench:") {
			t.Errorf("room watch of a missing room: %q, want the step that failed and no package name", stderr)
		}
	})

	t.Run("bots that all fail", func(t *testing.T) {
		stdout, stderr, err := cliAll(t, "bots", "--room", "no-such-room", "-n", "3", "--duration", "30s", "--ready-file", rf)
		if err == nil {
			t.Fatalf("bots exited 0 when every bot failed:\n%s", stdout)
		}
		if !strings.Contains(stdout, "3 of 3 bots failed, by reason:\n  3 × getting a join ticket: ") {
			t.Errorf("bots output lacks the reasons, counted:\n%s", stdout)
		}
		if !strings.Contains(stderr, "3 of 3 bots failed") {
			t.Errorf("bots error: %q", stderr)
		}
	})

	t.Run("bench rooms over the login limit", func(t *testing.T) {
		// 32 players: more than the logins left in the bucket.
		stdout, stderr, err := cliAll(t, "bench", "rooms", "--rooms", "8", "--players", "4", "--tick", "10", "--duration", "1s", "--ready-file", rf)
		if err == nil {
			t.Fatalf("bench rooms exited 0 with players over the login limit:\n%s", stdout)
		}
		if !regexp.MustCompile(`players failed, by reason:\n  \d+ × logging in: .*429`).MatchString(stdout) {
			t.Errorf("bench rooms output lacks the reason, counted:\n%s", stdout)
		}
		if !regexp.MustCompile(`^switchboard: bench rooms: \d+ of 32 players failed`).MatchString(stderr) {
			t.Errorf("bench rooms error: %q", stderr)
		}
	})
}
