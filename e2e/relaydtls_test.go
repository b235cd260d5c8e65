package e2e_test

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// startRelayVerb runs `switchboard relay ARGS…` with stdin and stdout
// piped, as a person at a terminal would.
func startRelayVerb(t *testing.T, args ...string) *chatProc {
	t.Helper()
	c := &chatProc{t: t, out: new(syncBuffer), done: make(chan struct{})}
	c.cmd = exec.Command(binary, append([]string{"relay"}, args...)...)
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
	var err error
	if c.in, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.err = c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		select {
		case <-c.done:
		default:
			_ = c.cmd.Process.Kill()
			<-c.done
		}
		if t.Failed() {
			t.Logf("output of relay %v:\n%s", args, c.out.String())
		}
	})
	return c
}

// TestRelayChatDTLS: two terminals chat through `switchboard dev`'s relay
// over DTLS (`--transport dtls`): the host prints its join code and the
// DTLS endpoint, the joiner connects, lines go both ways, the host sees
// the peer join and leave, and both exit 0 at end of input.
func TestRelayChatDTLS(t *testing.T) {
	help, err := exec.Command(binary, "relay", "host", "--help").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(help), "dtls") {
		t.Fatalf("relay host --help does not offer dtls:\n%s", help)
	}
	p := start(t, "dev", "--api", "127.0.0.1:0", "--node", "127.0.0.1:0", "--admin", "", "--nats", "127.0.0.1:0",
		"--data-dir", t.TempDir(), "--relay", "127.0.0.1:0", "--relay-ws", "127.0.0.1:0")
	rf := p.readyFile

	host := startRelayVerb(t, "host", "--transport", "dtls", "--ready-file", rf)
	code := host.wait(`join code (\S+) \(region \S*, dtls 127\.0\.0\.1:\d+\)`)
	peer := startRelayVerb(t, "join", code, "--transport", "dtls", "--ready-file", rf)
	peerID := peer.wait(`joined \S+ \(region \S*, dtls 127\.0\.0\.1:\d+\) as peer (\S+)`)
	host.wait(`\* peer ` + regexp.QuoteMeta(peerID) + ` joined`)

	peer.say("hello host, over DTLS")
	host.wait(`(?m)^hello host, over DTLS$`)
	host.say("hello peer")
	peer.wait(`(?m)^hello peer$`)

	_ = peer.in.Close()
	if code := peer.exit(); code != 0 {
		t.Fatalf("join at end of input exited %d", code)
	}
	host.wait(`\* peer ` + regexp.QuoteMeta(peerID) + ` left`)
	_ = host.in.Close()
	if code := host.exit(); code != 0 {
		t.Fatalf("host at end of input exited %d", code)
	}
	p.stop(10 * time.Second)
}
