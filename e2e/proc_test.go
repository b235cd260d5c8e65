package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binary is the switchboard binary under test, built once by TestMain
// unless $SWITCHBOARD_BIN names one.
var binary string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	binary = os.Getenv("SWITCHBOARD_BIN")
	if binary == "" {
		dir, err := os.MkdirTemp("", "switchboard-e2e-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		binary = filepath.Join(dir, "switchboard")
		cmd := exec.Command("go", "build", "-o", binary, "../cmd/switchboard")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build switchboard:", err)
			return 1
		}
	}
	return m.Run()
}

// ready is the --ready-file JSON.
type ready struct {
	API       string   `json:"api"`
	NodeWS    string   `json:"node_ws"`
	Admin     string   `json:"admin"`
	NATS      string   `json:"nats"`
	ServerKey string   `json:"server_key"`
	NodeID    string   `json:"node_id"`
	TLS       []string `json:"tls"`
	TLSSHA256 string   `json:"tls_fingerprint_sha256"`
	Hub       string   `json:"hub"`
	HubID     string   `json:"hub_id"`
	HubSHA256 string   `json:"hub_tls_fingerprint_sha256"`
}

// proc is a running switchboard process.
type proc struct {
	t     *testing.T
	cmd   *exec.Cmd
	out   *syncBuffer
	done  chan struct{}
	err   error // valid after done
	ready ready
	// readyFile is the --ready-file path.
	readyFile string
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start runs the binary with args plus --ready-file and waits for the ready
// file. The process is killed at the end of the test if still running.
func start(t *testing.T, args ...string) *proc {
	t.Helper()
	return startWrapped(t, nil, args...)
}

// startWrapped is start with the binary run by wrapper (argv, the binary
// and args appended), such as unshare.
func startWrapped(t *testing.T, wrapper []string, args ...string) *proc {
	t.Helper()
	readyFile := filepath.Join(t.TempDir(), "ready.json")
	args = append(args, "--ready-file", readyFile, "--log-level", "warn")
	p := &proc{t: t, out: new(syncBuffer), done: make(chan struct{}), readyFile: readyFile}
	argv := append(append(append([]string(nil), wrapper...), binary), args...)
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %v: %v", args, err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("output of %v:\n%s", args, p.out.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(readyFile)
		if err == nil {
			if err := json.Unmarshal(b, &p.ready); err != nil {
				t.Fatalf("ready file: %v: %s", err, b)
			}
			return p
		}
		select {
		case <-p.done:
			t.Fatalf("switchboard %v exited before it was ready: %v\n%s", args, p.err, p.out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("switchboard %v: no ready file after 30 s\n%s", args, p.out.String())
		}
	}
}

// stop sends SIGTERM and waits for the exit, which must be 0.
func (p *proc) stop(timeout time.Duration) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.t.Fatalf("SIGTERM: %v", err)
	}
	select {
	case <-p.done:
		var ee *exec.ExitError
		if errors.As(p.err, &ee) || p.err != nil {
			p.t.Fatalf("exit after SIGTERM: %v\n%s", p.err, p.out.String())
		}
	case <-time.After(timeout):
		p.t.Fatalf("still running %v after SIGTERM", timeout)
	}
}

func testContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// writeReady writes r as a ready file, for the CLI verbs' --ready-file.
func writeReady(path string, r ready) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}
