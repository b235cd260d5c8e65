package e2e_test

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/client/session"
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

// hubPeers returns the hub's own counters of the lab network's peers
// (server API GET /p2p/v1/networks/lab/peers), called from the hub's
// namespace.
func hubPeers(t *testing.T, l *natlab.Lab, p *proc) map[string]api.P2PPeerUDP {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: l.DialContext(l.Hub)}, Timeout: 10 * time.Second}
	srv, err := session.NewCaller(p.ready.API, &session.Config{HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	var list api.P2PPeerList
	if _, err := srv.Do(testContext(t, 10*time.Second), "GET", "/p2p/v1/networks/lab/peers", p.ready.ServerKey, nil, &list); err != nil {
		t.Fatal(err)
	}
	out := map[string]api.P2PPeerUDP{}
	for _, pe := range list.Peers {
		if pe.UDP != nil {
			out[pe.PeerID] = *pe.UDP
		}
	}
	return out
}

// startLab builds a lab of mode, starts the hub in it and joins alice
// (behind natA) and bob (behind natB) to one network.
func startLab(t *testing.T, mode natlab.Mode) (*natlab.Lab, *natChat, *natChat) {
	l, _, a, b := startLabHub(t, mode)
	return l, a, b
}

// startLabHub is startLab, also returning the hub's process.
func startLabHub(t *testing.T, mode natlab.Mode) (*natlab.Lab, *proc, *natChat, *natChat) {
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
	return l, p, a, b
}

func startNATChat(t *testing.T, l *natlab.Lab, s natlab.Side, user, readyFile string) *natChat {
	t.Helper()
	c := &chatProc{t: t, out: new(syncBuffer), done: make(chan struct{})}
	c.cmd = exec.Command("ip", "netns", "exec", l.Peer[s], binary, "p2p", "chat",
		"--network", "lab", "--username", user, "--ready-file", readyFile, "--save-dir", t.TempDir())
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
	l, hub, a, b := startLabHub(t, natlab.EIM)
	const n = 40

	// UDP: both sides see the path go direct; n UDP messages of 1 kB then
	// pass without the hub's counter moving by their size.
	a.say("/punch " + b.id + " udp")
	a.wait(`\* path to ` + regexp.QuoteMeta(b.id) + `: direct-udp`)
	b.wait(`\* path to ` + regexp.QuoteMeta(a.id) + `: direct-udp`)
	a.say("/peers")
	a.wait(`(?m)^  ` + regexp.QuoteMeta(b.id) + ` \(direct-udp\)$`)
	u0, _ := hubCount(t, l)
	c0 := hubPeers(t, l, hub)
	sendUDP(t, a, b, "udp-direct", n)
	sendUDP(t, b, a, "udp-back", n)
	u1, _ := hubCount(t, l)
	c1 := hubPeers(t, l, hub)
	if d := u1.Bytes - u0.Bytes; d >= n*1000 {
		t.Errorf("hub received %d UDP bytes during %d kB sent direct: the traffic went through the hub", d, 2*n)
	}
	// The hub's own counters agree: it routed none of those messages.
	for _, id := range []string{a.id, b.id} {
		if d := c1[id].BytesIn - c0[id].BytesIn; d >= n*1000 {
			t.Errorf("the hub counted %d bytes in from %s during the direct transfer", d, id)
		}
	}
	// Through the hub (before the punch) they would have been counted:
	// the registrations at least were.
	if c1[a.id].DatagramsIn == 0 || c1[b.id].DatagramsIn == 0 {
		t.Errorf("the hub's counters saw nothing of the peers: %+v", c1)
	}
	// Each peer answered the hub's PATH_CHALLENGE through its NAT: the
	// endpoint the hub reports is validated (p2p.md §12.4).
	for _, id := range []string{a.id, b.id} {
		if !c1[id].EndpointValidated || c1[id].Endpoint == "" {
			t.Errorf("the hub reports %s's endpoint %q, validated %v; want its NAT mapping, validated", id, c1[id].Endpoint, c1[id].EndpointValidated)
		}
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
	l, hub, a, b := startLabHub(t, natlab.Symmetric)
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
	c0 := hubPeers(t, l, hub)
	sendUDP(t, a, b, "via-hub", n)
	u1, _ := hubCount(t, l)
	c1 := hubPeers(t, l, hub)
	if d := u1.Bytes - u0.Bytes; d < n*1000 {
		t.Errorf("hub received %d UDP bytes for %d messages of 1 kB: they did not go through it", d, n)
	}
	if d := c1[a.id].DatagramsIn - c0[a.id].DatagramsIn; d < n {
		t.Errorf("the hub counted %d datagrams in from %s for %d messages", d, a.id, n)
	}
	if d := c1[b.id].DatagramsOut - c0[b.id].DatagramsOut; d < n {
		t.Errorf("the hub counted %d datagrams out to %s for %d messages", d, b.id, n)
	}
}

// TestNATFallbackKeepsReliableData breaks a punched UDP path with a drop
// rule at natA while a file goes over reliable channel Ch1 (/send): both
// sides go back to the hub when their keep-alives stop being answered,
// the channel's retransmissions go through the hub, and the file arrives
// whole (the receiver checks its SHA-256; the test compares the bytes).
// The hub's counter shows the rest of the transfer going through it.
func TestNATFallbackKeepsReliableData(t *testing.T) {
	l, a, b := startLab(t, natlab.EIM)
	a.say("/punch " + b.id + " udp")
	a.wait(`\* path to ` + regexp.QuoteMeta(b.id) + `: direct-udp`)
	b.wait(`\* path to ` + regexp.QuoteMeta(a.id) + `: direct-udp`)

	const size = 16 << 20
	data := make([]byte, size)
	_, _ = rand.Read(data)
	file := filepath.Join(t.TempDir(), "blob.bin")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	u0, _ := hubCount(t, l)
	a.say("/send " + b.id + " " + file)
	a.wait(`send blob.bin to ` + regexp.QuoteMeta(b.id) + `: 25%`)
	u1, _ := hubCount(t, l)
	undo, err := l.Block(natlab.A, natlab.NATBAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = undo() }()
	a.wait(`\* path to ` + regexp.QuoteMeta(b.id) + `: hub`)
	b.wait(`\* path to ` + regexp.QuoteMeta(a.id) + `: hub`)
	saved := b.wait(`\* saved blob\.bin from ` + regexp.QuoteMeta(a.id) + ` as (\S+) `)
	a.wait(`\* ` + regexp.QuoteMeta(b.id) + ` saved blob\.bin`)
	u2, _ := hubCount(t, l)
	got, err := os.ReadFile(saved)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("the saved file differs: %d bytes, want %d", len(got), size)
	}
	t.Logf("hub UDP bytes: %d while direct (first quarter), %d after the break (the rest)", u1.Bytes-u0.Bytes, u2.Bytes-u1.Bytes)
	if d := u1.Bytes - u0.Bytes; d >= size/8 {
		t.Errorf("the hub received %d bytes during the direct part of the transfer", d)
	}
	if d := u2.Bytes - u1.Bytes; d < size/4 {
		t.Errorf("the hub received %d bytes after the fallback, less than a quarter of the file", d)
	}
}

// TestNATDirectPathFallsBack breaks a punched UDP path with a drop rule at
// natA: both sides go back to the hub when their keep-alives stop being
// answered, and UDP messages flow through the hub again (its counter
// moves); with the rule removed, a new punch goes direct again.
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

// TestNATPunchTime measures the time to punch through the EIM lab, as the
// chat user sees it: from typing /punch to the "path to" line, five times
// over UDP and five over TCP (each punch replaces the path, a second
// apart). It logs the
// medians for docs/benchmarks.md and asserts nothing about time:
//
//	scripts/test ./e2e -run TestNATPunchTime -v
func TestNATPunchTime(t *testing.T) {
	l, hub, a, b := startLabHub(t, natlab.EIM)
	const rounds = 5
	for _, tr := range []string{"udp", "tcp"} {
		var times []time.Duration
		for i := range rounds {
			time.Sleep(time.Second) // the hub allows a peer 1 punch request a second (burst 4)
			if tr == "tcp" && i > 0 {
				// A punched connection's ports stay taken: a new bob
				// (a new port) for each TCP punch.
				b.say("/quit")
				b.exit()
				a.wait(`\* ` + regexp.QuoteMeta(b.id) + ` left`)
				b = startNATChat(t, l, natlab.B, "bob", hub.readyFile)
				a.wait(`\* ` + regexp.QuoteMeta(b.id) + ` joined`)
			}
			re := `\* path to ` + regexp.QuoteMeta(b.id) + `: direct-` + tr
			seen := len(regexp.MustCompile(re).FindAllString(a.out.String(), -1))
			start := time.Now()
			a.say("/punch " + b.id + " " + tr)
			a.waitNFast(re, seen+1, 20*time.Second)
			times = append(times, time.Since(start))
		}
		slices.Sort(times)
		t.Logf("time to punch over %s through EIM NATs: median %v (of %v)", tr, times[rounds/2].Round(100*time.Microsecond), times)
	}
}

// waitNFast is waitN polling every millisecond, for timings.
func (c *natChat) waitNFast(re string, n int, within time.Duration) {
	c.t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(within)
	for len(rx.FindAllString(c.out.String(), -1)) < n {
		if time.Now().After(deadline) {
			c.t.Fatalf("chat output matches %q fewer than %d times:\n%s", re, n, c.out.String())
		}
		time.Sleep(time.Millisecond)
	}
}
