package e2e_test

import (
	"errors"
	"io"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// relayProc is a running `switchboard relay host` or `relay join`: its
// stdout (what peers sent) and stderr (status lines) apart.
type relayProc struct {
	t        *testing.T
	args     []string
	cmd      *exec.Cmd
	in       io.WriteCloser
	out, log *syncBuffer
	done     chan struct{}
	err      error // valid after done
}

func startRelayCLI(t *testing.T, args ...string) *relayProc {
	t.Helper()
	p := &relayProc{t: t, args: args, out: new(syncBuffer), log: new(syncBuffer), done: make(chan struct{})}
	p.cmd = exec.Command(binary, append([]string{"relay"}, args...)...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.log
	var err error
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
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
			t.Logf("relay %v:\nstdout:\n%s\nstderr:\n%s", args, p.out.String(), p.log.String())
		}
	})
	return p
}

// wait waits until buf matches re and returns the last submatch.
func (p *relayProc) wait(buf *syncBuffer, re string) string {
	p.t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if m := rx.FindStringSubmatch(buf.String()); m != nil {
			return m[len(m)-1]
		}
		select {
		case <-p.done:
			if m := rx.FindStringSubmatch(buf.String()); m != nil {
				return m[len(m)-1]
			}
			p.t.Fatalf("relay %v exited (%v) before %q", p.args, p.err, re)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("relay %v: no %q after 20 s", p.args, re)
		}
	}
}

func (p *relayProc) say(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

// exit waits for the process and returns its exit code.
func (p *relayProc) exit() int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		p.t.Fatalf("relay %v still running", p.args)
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		p.t.Fatal(p.err)
	}
	return 0
}

const uuidRE = `[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`

// TestRelayCLIChat: two terminals, one join code. `relay host` prints the
// code; `relay join CODE` connects over UDP, then another over
// WebSocket, then one over DTLS; lines typed on one side come out on the other's stdout, and
// stderr says who joined and left. End of input exits 0; a host that
// leaves ends its joiners non-zero with the reason.
func TestRelayCLIChat(t *testing.T) {
	dir := t.TempDir()
	p := start(t, "dev", "--api", "127.0.0.1:0", "--node", "127.0.0.1:0", "--admin", "", "--nats", "127.0.0.1:0",
		"--data-dir", dir, "--relay", "127.0.0.1:0", "--relay-ws", "127.0.0.1:0")
	rf := p.readyFile

	regions, stderr, err := cliAll(t, "relay", "regions", "--ready-file", rf)
	if err != nil || !regexp.MustCompile(`(?m)^-\s+\d[\d.]*[µm]?s\s+1/1$`).MatchString(regions) {
		t.Fatalf("relay regions: %v\n%s%s", err, regions, stderr)
	}

	host := startRelayCLI(t, "host", "--ready-file", rf, "--username", "alice")
	code := host.wait(host.log, `join code ([6789BCDFGHJKLMNPQRTW]{6}) \(udp 127\.0\.0\.1:\d+\)`)

	for _, transport := range []string{"udp", "ws", "dtls"} {
		peer := startRelayCLI(t, "join", strings.ToLower(code), "--transport", transport, "--ready-file", rf)
		id := peer.wait(peer.log, `joined `+code+` \(`+transport+` 127\.0\.0\.1:\d+\) as peer (`+uuidRE+`)`)
		peer.wait(peer.log, `\* connected to host `+uuidRE)
		host.wait(host.log, `\* peer `+id+` joined`)

		peer.say("hello over " + transport)
		host.wait(host.out, `(?m)^hello over `+transport+`$`)
		host.say("welcome, " + transport)
		peer.wait(peer.out, `(?m)^welcome, `+transport+`$`)

		_ = peer.in.Close()
		if code := peer.exit(); code != 0 {
			t.Fatalf("join at end of input exited %d", code)
		}
		host.wait(host.log, `\* peer `+id+` left`)
	}

	// A joiner whose host leaves (Ctrl-C) exits non-zero, saying so.
	peer := startRelayCLI(t, "join", code, "--ready-file", rf)
	id := peer.wait(peer.log, `as peer (`+uuidRE+`)`)
	host.wait(host.log, `\* peer `+id+` joined`)
	if err := host.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := host.exit(); code != 0 {
		t.Fatalf("host on Ctrl-C exited %d", code)
	}
	if code := peer.exit(); code == 0 || !strings.Contains(peer.log.String(), "the host left") {
		t.Fatalf("joiner of a host that left exited %d:\n%s", code, peer.log.String())
	}
	// Said once, for people: no SDK log record in the chat's terminal.
	if log := peer.log.String(); strings.Contains(log, "INFO") ||
		!strings.HasSuffix(log, "\nswitchboard: relay join: the host left\n") {
		t.Fatalf("joiner of a host that left said:\n%s", log)
	}

	// Failures exit non-zero with the reason.
	_, stderr, err = cliAll(t, "relay", "join", code, "--ready-file", rf)
	if err == nil || !strings.Contains(stderr, "join code not found: no such join code") {
		t.Fatalf("join of a dead code: %v\n%s", err, stderr)
	}
	_, stderr, err = cliAll(t, "relay", "host", "--transport", "pigeon", "--ready-file", rf)
	if err == nil || !strings.Contains(stderr, `transport "pigeon" (want dtls, udp, ws)`) {
		t.Fatalf("host over an unknown transport: %v\n%s", err, stderr)
	}
	_, stderr, err = cliAll(t, "relay", "host", "--region", "mars", "--ready-file", rf)
	if err == nil || !strings.Contains(stderr, "region not found") {
		t.Fatalf("host in an unknown region: %v\n%s", err, stderr)
	}
	_, stderr, err = cliAll(t, "relay", "host", "--idle-timeout", "1500ms", "--ready-file", rf)
	if err == nil || !strings.Contains(stderr, "give whole seconds") {
		t.Fatalf("host with a fractional idle timeout: %v\n%s", err, stderr)
	}
	p.stop(10 * time.Second)
}

// TestRelayCLIMigrate: `relay host --migrate` opts in to host migration;
// its process is killed (no CLOSE: the relay times it out), and of two
// `relay join --migrate` peers one takes the session over as its host
// with the same join code while the other reconnects to it; lines typed
// then go between them as before.
func TestRelayCLIMigrate(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the relay's 10 s idle timeout")
	}
	dir := t.TempDir()
	p := start(t, "dev", "--api", "127.0.0.1:0", "--node", "127.0.0.1:0", "--admin", "", "--nats", "127.0.0.1:0",
		"--data-dir", dir, "--relay", "127.0.0.1:0")
	rf := p.readyFile

	host := startRelayCLI(t, "host", "--migrate", "--ready-file", rf, "--username", "hoster")
	code := host.wait(host.log, `join code ([6789BCDFGHJKLMNPQRTW]{6}) \(`)
	peers := map[string]*relayProc{}
	for _, name := range []string{"alice", "bob"} {
		peer := startRelayCLI(t, "join", code, "--migrate", "--ready-file", rf, "--username", name)
		id := peer.wait(peer.log, `as peer (`+uuidRE+`)`)
		host.wait(host.log, `\* peer `+id+` joined`)
		peers[name] = peer
	}

	if err := host.cmd.Process.Kill(); err != nil { // no CLOSE
		t.Fatal(err)
	}
	host.exit()
	var newHost, joiner *relayProc
	for deadline := time.Now().Add(40 * time.Second); newHost == nil || joiner == nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no peer took the session over, or the other never reconnected, in 40 s")
		}
		newHost, joiner = nil, nil
		for _, peer := range peers {
			log := peer.log.String()
			switch {
			case strings.Contains(log, "* took the session over: hosting join code "+code+" ("):
				newHost = peer
			case strings.Contains(log, "* another peer took the session over: joined "+code+" ("):
				joiner = peer
			}
		}
	}
	id := joiner.wait(joiner.log, `another peer took the session over: joined `+code+` \([^)]*\) as peer (`+uuidRE+`)`)
	newHost.wait(newHost.log, `\* peer `+id+` joined`)
	joiner.say("still here")
	newHost.wait(newHost.out, `(?m)^still here$`)
	newHost.say("welcome back")
	joiner.wait(joiner.out, `(?m)^welcome back$`)

	// End of input: both leave, exit 0 (the joiner first: a new host
	// leaving first would be taken over again, by it).
	_ = joiner.in.Close()
	if code := joiner.exit(); code != 0 {
		t.Fatalf("joiner at end of input exited %d", code)
	}
	_ = newHost.in.Close()
	if code := newHost.exit(); code != 0 {
		t.Fatalf("new host at end of input exited %d", code)
	}
	p.stop(10 * time.Second)
}
