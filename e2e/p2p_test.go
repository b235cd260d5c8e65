package e2e_test

import (
	"errors"
	"io"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/backbone"
	"github.com/switchboardgg/switchboard/client/backend"
	"github.com/switchboardgg/switchboard/client/p2p"
	"github.com/switchboardgg/switchboard/client/session"
	"github.com/switchboardgg/switchboard/internal/natstest"
)

// chatProc is a running `switchboard p2p chat`.
type chatProc struct {
	t    *testing.T
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *syncBuffer
	done chan struct{}
	err  error // valid after done
}

func startChat(t *testing.T, args ...string) *chatProc {
	t.Helper()
	c := &chatProc{t: t, out: new(syncBuffer), done: make(chan struct{})}
	c.cmd = exec.Command(binary, append([]string{"p2p", "chat"}, args...)...)
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
			t.Logf("output of chat %v:\n%s", args, c.out.String())
		}
	})
	return c
}

// wait waits until the output matches re and returns the first submatch
// (or the match).
func (c *chatProc) wait(re string) string {
	c.t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if m := rx.FindStringSubmatch(c.out.String()); m != nil {
			return m[len(m)-1]
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("chat output does not match %q:\n%s", re, c.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *chatProc) say(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// exit waits for the process and returns its exit code.
func (c *chatProc) exit() int {
	c.t.Helper()
	select {
	case <-c.done:
	case <-time.After(20 * time.Second):
		c.t.Fatalf("chat still running:\n%s", c.out.String())
	}
	var ee *exec.ExitError
	if errors.As(c.err, &ee) {
		return ee.ExitCode()
	}
	if c.err != nil {
		c.t.Fatal(c.err)
	}
	return 0
}

// TestP2PChatCLI: two terminals chat on `switchboard dev --hub`: lines go
// to every peer, /peers and /msg work, joins and leaves are printed; a
// kick ends a chat non-zero with the reason, end of input ends one with 0.
func TestP2PChatCLI(t *testing.T) {
	dir := t.TempDir()
	p := start(t, "dev", "--api", "127.0.0.1:0", "--node", "127.0.0.1:0", "--admin", "", "--nats", "127.0.0.1:0",
		"--hub", "--hub-addr", "127.0.0.1:0", "--data-dir", dir)
	rf := p.readyFile

	alice := startChat(t, "--network", "den", "--username", "alice", "--ready-file", rf)
	aliceID := alice.wait(`joined network den as (alice~\S+)`)
	bob := startChat(t, "--network", "den", "--username", "bob", "--ready-file", rf)
	bobID := bob.wait(`joined network den as (bob~\S+)`)
	alice.wait(`\* ` + regexp.QuoteMeta(bobID) + ` joined`)
	bob.wait(`\* ` + regexp.QuoteMeta(aliceID) + ` joined`)

	bob.say("hello everyone")
	alice.wait(`<` + regexp.QuoteMeta(bobID) + `> hello everyone`)
	alice.say("/peers")
	alice.wait(`(?m)^  ` + regexp.QuoteMeta(bobID) + ` \(hub\)$`)
	alice.say("/msg " + bobID + " just you")
	bob.wait(`<` + regexp.QuoteMeta(aliceID) + `> \(to you\) just you`)
	alice.say("/msg nobody~x hi")
	alice.wait(`! hub error unknown_peer \(peer nobody~x\)`)
	// The hub answers nothing on UDP: the chat itself says the peer is
	// unknown, and a command without its arguments gets its usage.
	alice.say("/udp nobody~x hi")
	alice.wait(`! /udp: no peer nobody~x in this network`)
	for _, cmd := range []string{"/udp", "/msg", "/send"} {
		alice.say(cmd)
		alice.wait(`! usage: ` + cmd + ` PEER`)
	}

	// The server API kicks bob: his chat exits non-zero saying so.
	srv, err := session.NewCaller(p.ready.API, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do(testContext(t, 10*time.Second), "POST", "/p2p/v1/networks/den/peers/"+bobID+"/kick", p.ready.ServerKey, nil, nil); err != nil {
		t.Fatal(err)
	}
	if code := bob.exit(); code == 0 {
		t.Fatalf("kicked chat exited 0:\n%s", bob.out.String())
	}
	if !strings.Contains(bob.out.String(), "kicked") {
		t.Fatalf("kicked chat does not say why:\n%s", bob.out.String())
	}
	alice.wait(`\* ` + regexp.QuoteMeta(bobID) + ` left`)
	_ = alice.in.Close()
	if code := alice.exit(); code != 0 {
		t.Fatalf("chat at end of input exited %d", code)
	}

	// Bad invocations exit non-zero with the reason.
	_, stderr, err := cliAll(t, "p2p", "chat", "--ready-file", rf)
	if err == nil || !strings.Contains(stderr, "--network") {
		t.Fatalf("chat without a network: %v\n%s", err, stderr)
	}
	_, stderr, err = cliAll(t, "p2p", "chat", "--join-code", "BBBBBBBBBB", "--ready-file", rf)
	if err == nil || !strings.Contains(stderr, "no network has this join code") {
		t.Fatalf("chat with an unknown code: %v\n%s", err, stderr)
	}
	p.stop(10 * time.Second)
}

// TestP2PServeControlAndHub runs control and a hub as two processes on
// one NATS server: the API places the network on the hub it finds in the
// registry, peers meet and talk there, and the server API's peer list
// and kick reach the hub over NATS.
func TestP2PServeControlAndHub(t *testing.T) {
	nats, _ := natstest.Start(t, backbone.Config{})
	const key = "e2e-server-key-0123456789"
	creds := nats.Embedded.CredentialsFile()
	ctl := start(t, "serve", "control", "--nats-url", nats.URL(), "--nats-creds", creds, "--api", "127.0.0.1:0", "--server-key", key, "--data-dir", t.TempDir())
	hub := start(t, "serve", "hub", "--nats-url", nats.URL(), "--nats-creds", creds, "--hub", "127.0.0.1:0", "--node-id", "e2e-hub-1", "--data-dir", t.TempDir())
	ctx := testContext(t, 60*time.Second)
	be, err := backend.New(ctl.ready.API, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	join := func(user string) *p2p.Peer {
		t.Helper()
		auth, err := be.CreateAuthToken(ctx, user, 0)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := session.Login(ctx, ctl.ready.API, user, auth, nil)
		if err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			peer, err := p2p.Join(ctx, sc, p2p.JoinRequest{Network: "split"}, nil)
			if errors.Is(err, p2p.ErrHubUnavailable) && time.Now().Before(deadline) {
				continue
			}
			if err != nil {
				t.Fatalf("join %s: %v", user, err)
			}
			t.Cleanup(func() { _ = peer.Close() })
			return peer
		}
	}
	alice, bob := join("alice"), join("bob")
	if alice.Hub().NodeID != "e2e-hub-1" || alice.Hub().Address != hub.ready.Hub {
		t.Fatalf("alice's hub = %+v, ready %+v", alice.Hub(), hub.ready)
	}
	waitFor := func(p *p2p.Peer, typ p2p.EventType, peer string) {
		t.Helper()
		for {
			select {
			case ev := <-p.Events():
				if ev.Type == typ && ev.Peer == peer {
					return
				}
			case <-ctx.Done():
				t.Fatalf("%s: no %s event for %s", p.ID(), typ, peer)
			}
		}
	}
	waitFor(alice, p2p.EventPeerJoined, bob.ID())
	if err := alice.Send(ctx, bob.ID(), p2p.Envelope{Payload: []byte("over the wire")}); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-bob.Messages():
		if m.From != alice.ID() || string(m.Payload) != "over the wire" {
			t.Fatalf("bob got %+v", m)
		}
	case <-ctx.Done():
		t.Fatal("bob got nothing")
	}
	srv, err := session.NewCaller(ctl.ready.API, nil)
	if err != nil {
		t.Fatal(err)
	}
	var list api.P2PPeerList
	if _, err := srv.Do(ctx, "GET", "/p2p/v1/networks/split/peers", key, nil, &list); err != nil || len(list.Peers) != 2 {
		t.Fatalf("peers = %+v, %v", list, err)
	}
	if _, err := srv.Do(ctx, "POST", "/p2p/v1/networks/split/peers/"+bob.ID()+"/kick", key, nil, nil); err != nil {
		t.Fatal(err)
	}
	<-bob.Done()
	if !errors.Is(bob.Err(), p2p.ErrKicked) {
		t.Fatalf("bob.Err = %v", bob.Err())
	}
	waitFor(alice, p2p.EventPeerLeft, bob.ID())

	// A second hub; the first drains: its peers are told it is shutting
	// down, and their next join moves the network to the second.
	hub2 := start(t, "serve", "hub", "--nats-url", nats.URL(), "--nats-creds", creds, "--hub", "127.0.0.1:0", "--node-id", "e2e-hub-2", "--data-dir", t.TempDir())
	hub.stop(10 * time.Second)
	<-alice.Done()
	if !errors.Is(alice.Err(), p2p.ErrShuttingDown) {
		t.Fatalf("alice.Err after the hub drained = %v", alice.Err())
	}
	// Control reads the registry through a 1 s cache: a join in that
	// second may still be sent to the stopped hub, and fails to dial.
	auth, err := be.CreateAuthToken(ctx, "carol", 0)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := session.Login(ctx, ctl.ready.API, "carol", auth, nil)
	if err != nil {
		t.Fatal(err)
	}
	var carol *p2p.Peer
	for deadline := time.Now().Add(10 * time.Second); carol == nil; time.Sleep(100 * time.Millisecond) {
		carol, err = p2p.Join(ctx, sc, p2p.JoinRequest{Network: "split"}, nil)
		if err != nil && time.Now().After(deadline) {
			t.Fatalf("join after the drain: %v", err)
		}
	}
	if carol.Hub().NodeID != "e2e-hub-2" || carol.Hub().Address != hub2.ready.Hub {
		t.Fatalf("after the drain the network is on %+v", carol.Hub())
	}
	_ = carol.Close()
	hub2.stop(10 * time.Second)
	ctl.stop(10 * time.Second)
}

// TestBenchP2PSaysWhenRefused: a hub whose per-peer rate limit refuses
// the closed loop's messages leaves nothing in flight; bench p2p says so
// and exits non-zero instead of reporting 0 messages a second as a result.
func TestBenchP2PSaysWhenRefused(t *testing.T) {
	dir := t.TempDir()
	p := start(t, "dev", "--api", "127.0.0.1:0", "--node", "127.0.0.1:0", "--admin", "", "--nats", "127.0.0.1:0",
		"--hub", "--hub-addr", "127.0.0.1:0", "--allow-anonymous", "--hub-peer-rate", "5", "--data-dir", dir)
	out, stderr, err := cliAll(t, "bench", "p2p", "--ready-file", p.readyFile, "--peers", "2", "--inflight", "64",
		"--warmup", "1s", "--duration", "1s")
	if err == nil || !strings.Contains(out+stderr, "the hub refused") || !strings.Contains(stderr, "no message came back") {
		t.Fatalf("bench p2p against a hub refusing its messages: %v\n%s%s", err, out, stderr)
	}
}
