package e2e_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/switchboardgg/switchboard/backbone"
	"github.com/switchboardgg/switchboard/client/backend"
	"github.com/switchboardgg/switchboard/client/rooms"
	"github.com/switchboardgg/switchboard/internal/certs"
	"github.com/switchboardgg/switchboard/internal/natstest"
)

// devArgs are the arguments of a dev process on free ports with dataDir.
func devArgs(dataDir string, extra ...string) []string {
	return append([]string{"dev", "--api", "127.0.0.1:0", "--node", "127.0.0.1:0", "--admin", "",
		"--nats", "127.0.0.1:0", "--data-dir", dataDir}, extra...)
}

// runToExit runs the binary and waits up to 20 s for it to exit; it
// returns the output and the exit error. A process still running then
// fails the test.
func runToExit(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("switchboard %v still running after 20 s:\n%s", args, out)
	}
	return string(out), err
}

// createRoomOn creates a relay room once a node registered and returns it.
func createRoomOn(t *testing.T, ctx context.Context, be *backend.Client) *backend.Room {
	t.Helper()
	for {
		room, err := be.CreateRoom(ctx, backend.CreateRoomRequest{SyncMode: "relay", MaxPlayers: new(2), StartMode: "auto"})
		if err == nil {
			return room
		}
		if !errors.Is(err, rooms.ErrGameNodeUnavailable) || ctx.Err() != nil {
			t.Fatalf("create room: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDevDataDirLocked: a second process on a data dir exits at once,
// naming the lock and the owner's pid; the first keeps serving. Before
// the lock both started and corrupted the store.
func TestDevDataDirLocked(t *testing.T) {
	dir := t.TempDir()
	first := start(t, devArgs(dir)...)
	out, err := runToExit(t, devArgs(dir)...)
	if err == nil {
		t.Fatalf("second dev on one data dir exited 0:\n%s", out)
	}
	lock := filepath.Join(dir, "lock")
	if pid := strconv.Itoa(first.cmd.Process.Pid); !strings.Contains(out, lock) || !strings.Contains(out, "process "+pid) {
		t.Errorf("second dev's message does not name %s and pid %s:\n%s", lock, pid, out)
	}
	resp, err := http.Get(first.ready.API + "/healthz")
	if err != nil {
		t.Fatalf("first dev after the second tried: %v", err)
	}
	resp.Body.Close()
	first.stop(10 * time.Second)
}

// TestDevNATSPortInUse: dev on a taken NATS port exits with one line
// that says what to do. Before, it said only "embedded server not ready",
// after 10 s; then the cause wrapped twice, after a fatal ERROR log line.
func TestDevNATSPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil { // no warning about its mode
		t.Fatal(err)
	}
	args := devArgs(dir)
	args = append(args, "--nats", ln.Addr().String()) // the last --nats wins
	out, err := runToExit(t, args...)
	want := "switchboard: NATS port " + ln.Addr().String() + " in use; pass --nats 127.0.0.1:0 or stop the other process\n"
	if err == nil || out != want {
		t.Fatalf("dev on a taken NATS port: exit %v, output %q, want only %q", err, out, want)
	}
}

// TestDevNodeIDStable: a restarted dev keeps its node id, so its rooms
// keep their node; the ready file goes away on exit. Before, the id was
// random per start and the ready file stayed.
func TestDevNodeIDStable(t *testing.T) {
	dir := t.TempDir()
	ctx := testContext(t, 60*time.Second)
	var ids []string
	for i := range 2 {
		p := start(t, devArgs(dir)...)
		be, err := backend.New(p.ready.API, p.ready.ServerKey, nil)
		if err != nil {
			t.Fatal(err)
		}
		room := createRoomOn(t, ctx, be)
		if room.NodeID != p.ready.NodeID {
			t.Errorf("start %d: room on %q, ready file says node %q", i, room.NodeID, p.ready.NodeID)
		}
		ids = append(ids, room.NodeID)
		p.stop(10 * time.Second)
		if _, err := os.Stat(p.readyFile); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("start %d: ready file after exit: %v, want it removed", i, err)
		}
	}
	if ids[0] != ids[1] {
		t.Errorf("node id changed across a restart: %q then %q", ids[0], ids[1])
	}
	// --node-id wins over the kept one.
	p := start(t, devArgs(dir, "--node-id", "my-node")...)
	if p.ready.NodeID != "my-node" {
		t.Errorf("dev --node-id my-node: ready node_id %q", p.ready.NodeID)
	}
	p.stop(10 * time.Second)
}

// TestDevHostnameWithDots runs dev under a host name with dots, as on
// every cloud VM. Before, the derived node id was invalid: dev wrote its
// ready file, logged ready, then exited 1.
func TestDevHostnameWithDots(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for unshare --uts (a host name of its own)")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("unshare not installed")
	}
	const host = "ip-10-0-0-1.ec2.internal"
	if out, err := exec.Command(unshare, "--uts", "hostname", host).CombinedOutput(); err != nil {
		t.Skipf("unshare --uts does not work here: %v: %s", err, out)
	}
	p := startWrapped(t, []string{unshare, "--uts", "sh", "-c", `hostname "$0" && exec "$@"`, host}, devArgs(t.TempDir())...)
	ctx := testContext(t, 60*time.Second)
	be, err := backend.New(p.ready.API, p.ready.ServerKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	room := createRoomOn(t, ctx, be)
	if !strings.HasPrefix(room.NodeID, "ip-10-0-0-1-ec2-internal-") {
		t.Errorf("room on node %q, want an id derived from %s", room.NodeID, host)
	}
	p.stop(10 * time.Second)
}

// TestDevLoginLimit: dev's login limit does not get in the way of one
// machine's load tools (before: 2/s with a burst of 20, so the 21st login
// got 429), while serve control keeps the strict one.
func TestDevLoginLimit(t *testing.T) {
	const logins = 60
	ctx := testContext(t, 60*time.Second)
	login := func(api string, be *backend.Client) (ok int, err error) {
		hc := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
		defer hc.CloseIdleConnections()
		for i := range logins {
			name := fmt.Sprintf("p%d", i)
			auth, err := be.CreateAuthToken(ctx, name, 0)
			if err != nil {
				return ok, err
			}
			if _, err := rooms.Login(ctx, api, name, auth, &rooms.Config{HTTPClient: hc}); err != nil {
				return ok, err
			}
			ok++
		}
		return ok, nil
	}
	p := start(t, devArgs(t.TempDir())...)
	be, err := backend.New(p.ready.API, p.ready.ServerKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := login(p.ready.API, be); err != nil {
		t.Errorf("dev: login %d of %d: %v", n+1, logins, err)
	}
	p.stop(10 * time.Second)

	nats, _ := natstest.Start(t, backbone.Config{})
	const key = "e2e-server-key-0123456789"
	ctl := start(t, "serve", "control", "--nats-url", nats.URL(), "--nats-creds", nats.Embedded.CredentialsFile(), "--api", "127.0.0.1:0", "--server-key", key, "--data-dir", t.TempDir())
	be, err = backend.New(ctl.ready.API, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := login(ctl.ready.API, be); !errors.Is(err, rooms.ErrRateLimited) {
		t.Errorf("serve control: %d logins then %v, want rate_limited before %d", n, err, logins)
	}
	ctl.stop(10 * time.Second)
}

// TestDevAPIHeaderCap: the binary serves the API with control's hardened
// server. Before, it used a bare http.Server that accepted a 1 MB header.
func TestDevAPIHeaderCap(t *testing.T) {
	p := start(t, devArgs(t.TempDir())...)
	c, err := net.Dial("tcp", strings.TrimPrefix(p.ready.API, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() {
		_, _ = fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n", strings.Repeat("a", 1<<20-100))
	}()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("1 MB header: got %s, want 431", resp.Status)
	}
	p.stop(10 * time.Second)
}

// TestDevTLS: dev --tls serves https and wss with a certificate generated
// into the data dir; a client that trusts it logs in and plays, and the
// fingerprint is printed and in the ready file.
func TestDevTLS(t *testing.T) {
	dir := t.TempDir()
	p := start(t, devArgs(dir, "--tls")...)
	r := p.ready
	if !strings.HasPrefix(r.API, "https://") || !strings.HasPrefix(r.NodeWS, "wss://") || len(r.TLS) != 2 {
		t.Fatalf("ready file: api %q, node_ws %q, tls %v; want https, wss and both listed", r.API, r.NodeWS, r.TLS)
	}
	if r.TLSSHA256 == "" || !strings.Contains(p.out.String(), r.TLSSHA256) {
		t.Errorf("fingerprint %q not printed:\n%s", r.TLSSHA256, p.out.String())
	}
	tlsCfg := trustFile(t, filepath.Join(dir, certs.DefaultCertFile))
	tr := &http.Transport{TLSClientConfig: tlsCfg}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	ctx := testContext(t, 60*time.Second)
	be, err := backend.New(r.API, r.ServerKey, hc)
	if err != nil {
		t.Fatal(err)
	}
	room := createRoomOn(t, ctx, be)
	auth, err := be.CreateAuthToken(ctx, "alice", 0)
	if err != nil {
		t.Fatal(err)
	}
	ticket, _, err := be.CreateTicket(ctx, room.RoomID, backend.TicketRequest{Username: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := rooms.Login(ctx, r.API, "alice", auth, &rooms.Config{HTTPClient: hc, Dialer: &ws.Dialer{TLSConfig: tlsCfg}})
	if err != nil {
		t.Fatalf("login over https: %v", err)
	}
	pr, err := c.Connect(ctx, room.RoomID, rooms.JoinOptions{Ticket: ticket})
	if err != nil {
		t.Fatalf("connect over wss: %v", err)
	}
	if err := pr.Leave(ctx); err != nil {
		t.Errorf("leave: %v", err)
	}
	pr.Close()
	p.stop(10 * time.Second)
}

// TestServeTLSReloadOnSIGHUP: serve roles take --data-dir and
// --tls-cert/--tls-key, and a SIGHUP makes both the API and the node's
// WebSocket serve the replaced certificate. The node keeps its id in its
// data dir across a restart.
func TestServeTLSReloadOnSIGHUP(t *testing.T) {
	certDir := t.TempDir()
	cf, kf, _, err := certs.SelfSigned(certs.SelfSignedConfig{Dir: certDir})
	if err != nil {
		t.Fatal(err)
	}
	nats, _ := natstest.Start(t, backbone.Config{})
	const key = "e2e-server-key-0123456789"
	tlsArgs := []string{"--tls-cert", cf, "--tls-key", kf}
	ctl := start(t, append([]string{"serve", "control", "--nats-url", nats.URL(), "--nats-creds", nats.Embedded.CredentialsFile(), "--api", "127.0.0.1:0",
		"--server-key", key, "--data-dir", t.TempDir()}, tlsArgs...)...)
	nodeDir := t.TempDir()
	nodeArgs := append([]string{"serve", "node", "--nats-url", nats.URL(), "--nats-creds", nats.Embedded.CredentialsFile(), "--node", "127.0.0.1:0", "--data-dir", nodeDir}, tlsArgs...)
	node := start(t, nodeArgs...)
	addrs := map[*proc]string{ctl: hostPort(t, ctl.ready.API), node: hostPort(t, node.ready.NodeWS)}
	for p, addr := range addrs {
		if got := servedFingerprint(t, addr); got != p.ready.TLSSHA256 {
			t.Fatalf("%s serves %s, ready file says %s", addr, got, p.ready.TLSSHA256)
		}
	}
	old := ctl.ready.TLSSHA256
	if err := os.Remove(cf); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := certs.SelfSigned(certs.SelfSignedConfig{Dir: certDir}); err != nil {
		t.Fatal(err)
	}
	for p, addr := range addrs {
		if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for servedFingerprint(t, addr) == old {
			if time.Now().After(deadline) {
				t.Fatalf("%s still serves the old certificate 10 s after SIGHUP", addr)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	id := node.ready.NodeID
	node.stop(10 * time.Second)
	if again := start(t, nodeArgs...); again.ready.NodeID != id {
		t.Errorf("serve node restarted on its data dir: id %q, want %q", again.ready.NodeID, id)
	} else {
		again.stop(10 * time.Second)
	}
	ctl.stop(10 * time.Second)
}

func hostPort(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

func trustFile(t *testing.T, certFile string) *tls.Config {
	t.Helper()
	b, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		t.Fatalf("no certificate in %s", certFile)
	}
	return &tls.Config{RootCAs: pool}
}

// servedFingerprint returns the fingerprint of the certificate at addr.
func servedFingerprint(t *testing.T, addr string) string {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr,
		&tls.Config{InsecureSkipVerify: true}) // only the fingerprint is compared
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer c.Close()
	return certs.Fingerprint(c.ConnectionState().PeerCertificates[0].Raw)
}
