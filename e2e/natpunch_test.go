package e2e_test

import (
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/internal/natlab"
)

// Hole punching through real NAT (issue 11, "Through real NAT"): the hub
// runs as `switchboard dev --hub` in the lab's hub namespace, two
// `switchboard p2p chat` processes behind the two NATs are driven over
// stdin/stdout, and the hub namespace's nftables counter shows what still
// reaches the hub.

const labHubPort = "7800"

// natChat is a chat process in a lab namespace.
type natChat struct {
	*chatProc
	id string
}

// startLab builds a lab of mode, starts the hub in it and joins alice
// (behind natA) and bob (behind natB) to one network.
func startLab(t *testing.T, mode natlab.Mode) (*natlab.Lab, *natChat, *natChat) {
	t.Helper()
	l := natlab.New(t, mode)
	hubHost := natlab.HubAddr.String()
	p := startWrapped(t, []string{"ip", "netns", "exec", l.Hub}, "dev",
		"--api", hubHost+":7700", "--node", hubHost+":0", "--node-udp", "", "--admin", "", "--nats", "127.0.0.1:0",
		"--hub", "--hub-addr", hubHost+":"+labHubPort, "--data-dir", t.TempDir())
	a := startNATChat(t, l, natlab.A, "alice", p.readyFile)
	b := startNATChat(t, l, natlab.B, "bob", p.readyFile)
	a.wait(`\* ` + regexp.QuoteMeta(b.id) + ` joined`)
	b.wait(`\* ` + regexp.QuoteMeta(a.id) + ` joined`)
	return l, a, b
}

func startNATChat(t *testing.T, l *natlab.Lab, s natlab.Side, user, readyFile string) *natChat {
	t.Helper()
	c := &chatProc{t: t, out: new(syncBuffer), done: make(chan struct{})}
	c.cmd = exec.Command("ip", "netns", "exec", l.Peer[s], binary, "p2p", "chat",
		"--network", "lab", "--username", user, "--ready-file", readyFile)
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
		_ = c.in.Close()
		select {
		case <-c.done:
		case <-time.After(5 * time.Second):
			_ = c.cmd.Process.Kill()
			<-c.done
		}
		if t.Failed() {
			t.Logf("output of %s's chat:\n%s", user, c.out.String())
		}
	})
	id := c.wait(`joined network lab as (` + user + `~\S+)`)
	return &natChat{chatProc: c, id: id}
}

// waitN waits until re matches at least n times in the output.
func (c *natChat) waitN(re string, n int, within time.Duration) {
	c.t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(within)
	for len(rx.FindAllString(c.out.String(), -1)) < n {
		if time.Now().After(deadline) {
			c.t.Fatalf("chat output matches %q %d times, want %d:\n%s", re, len(rx.FindAllString(c.out.String(), -1)), n, c.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func hubCount(t *testing.T, l *natlab.Lab) (udp, tcp natlab.Count) {
	t.Helper()
	udp, tcp, err := l.HubCount()
	if err != nil {
		t.Fatal(err)
	}
	return udp, tcp
}

// payload is a message of about 1,000 bytes tagged with i.
func payload(tag string, i int) string {
	return fmt.Sprintf("%s-%03d-%s", tag, i, strings.Repeat("x", 990))
}

// sendUDP has from send n UDP messages of about 1,000 bytes to to and
// waits until to printed them all.
func sendUDP(t *testing.T, from, to *natChat, tag string, n int) {
	t.Helper()
	for i := range n {
		from.say("/udp " + to.id + " " + payload(tag, i))
		time.Sleep(5 * time.Millisecond) // UDP: do not outrun the receiver's terminal
	}
	to.waitN(`\(to you\) `+tag+`-\d{3}-`, n, 20*time.Second)
}

func TestNATPunchEIM(t *testing.T) {
	l, a, b := startLab(t, natlab.EIM)
	const n = 40

	// UDP: both sides see the path go direct; n UDP messages of 1 kB then
	// pass without the hub's counter moving by their size.
	a.say("/punch " + b.id + " udp")
	a.wait(`\* path to ` + regexp.QuoteMeta(b.id) + `: direct-udp`)
	b.wait(`\* path to ` + regexp.QuoteMeta(a.id) + `: direct-udp`)
	a.say("/peers")
	a.wait(`(?m)^  ` + regexp.QuoteMeta(b.id) + ` \(direct-udp\)$`)
	u0, _ := hubCount(t, l)
	sendUDP(t, a, b, "udp-direct", n)
	sendUDP(t, b, a, "udp-back", n)
	u1, _ := hubCount(t, l)
	if d := u1.Bytes - u0.Bytes; d >= n*1000 {
		t.Errorf("hub received %d UDP bytes during %d kB sent direct: the traffic went through the hub", d, 2*n)
	}
	t.Logf("UDP direct: the hub saw %d packets, %d bytes while %d messages of 1 kB went each way", u1.Packets-u0.Packets, u1.Bytes-u0.Bytes, n)

	// TCP: the punched connection carries /msg (reliable messages).
	b.say("/punch " + a.id + " tcp")
	a.wait(`\* path to ` + regexp.QuoteMeta(b.id) + `: direct-tcp`)
	b.wait(`\* path to ` + regexp.QuoteMeta(a.id) + `: direct-tcp`)
	_, t0 := hubCount(t, l)
	for i := range n {
		b.say("/msg " + a.id + " " + payload("tcp-direct", i))
	}
	a.waitN(`\(to you\) tcp-direct-\d{3}-`, n, 20*time.Second)
	_, t1 := hubCount(t, l)
	if d := t1.Bytes - t0.Bytes; d >= n*1000 {
		t.Errorf("hub received %d TCP bytes during %d kB sent on the punched connection", d, n)
	}
	t.Logf("TCP direct: the hub saw %d packets, %d bytes while %d messages of 1 kB went direct", t1.Packets-t0.Packets, t1.Bytes-t0.Bytes, n)
}

func TestNATPunchSymmetricFails(t *testing.T) {
	l, a, b := startLab(t, natlab.Symmetric)
	const n = 20
	for _, tr := range []string{"udp", "tcp"} {
		start := time.Now()
		a.say("/punch " + b.id + " " + tr)
		a.wait(`punch to ` + regexp.QuoteMeta(b.id) + ` over ` + tr + ` failed`)
		// The client's default timeout is 5 s; the failure comes with it,
		// not after some other, longer wait.
		if el := time.Since(start); el > 15*time.Second {
			t.Errorf("%s punch failed after %v", tr, el)
		}
	}
	if strings.Contains(a.out.String(), "path to") || strings.Contains(b.out.String(), "path to") {
		t.Fatalf("a path changed behind symmetric NATs:\n%s\n%s", a.out.String(), b.out.String())
	}
	a.say("/peers")
	a.wait(`(?m)^  ` + regexp.QuoteMeta(b.id) + ` \(hub\)$`)
	// Traffic stays on the hub: its counter moves by at least what was sent.
	u0, _ := hubCount(t, l)
	sendUDP(t, a, b, "via-hub", n)
	u1, _ := hubCount(t, l)
	if d := u1.Bytes - u0.Bytes; d < n*1000 {
		t.Errorf("hub received %d UDP bytes for %d messages of 1 kB: they did not go through it", d, n)
	}
}

// TestNATDirectPathFallsBack breaks a punched UDP path with a drop rule at
// natA: both sides go back to the hub when their keep-alives stop being
// answered, and messages flow through the hub again (its counter moves).
// Reliable channels are not used here (they are another branch's): the
// messages are UDP messages sent after the fallback.
func TestNATDirectPathFallsBack(t *testing.T) {
	l, a, b := startLab(t, natlab.EIM)
	const n = 20
	a.say("/punch " + b.id + " udp")
	a.wait(`\* path to ` + regexp.QuoteMeta(b.id) + `: direct-udp`)
	b.wait(`\* path to ` + regexp.QuoteMeta(a.id) + `: direct-udp`)
	sendUDP(t, a, b, "before", n)

	undo, err := l.Block(natlab.A, natlab.NATBAddr)
	if err != nil {
		t.Fatal(err)
	}
	a.wait(`\* path to ` + regexp.QuoteMeta(b.id) + `: hub`)
	b.wait(`\* path to ` + regexp.QuoteMeta(a.id) + `: hub`)
	u0, _ := hubCount(t, l)
	sendUDP(t, a, b, "after", n)
	sendUDP(t, b, a, "after-back", n)
	u1, _ := hubCount(t, l)
	if d := u1.Bytes - u0.Bytes; d < 2*n*1000 {
		t.Errorf("hub received %d UDP bytes for %d messages of 1 kB after the fallback", d, 2*n)
	}
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	// With the rule gone, a new punch goes direct again.
	a.say("/punch " + b.id + " udp")
	a.waitN(`\* path to `+regexp.QuoteMeta(b.id)+`: direct-udp`, 2, 20*time.Second)
}
