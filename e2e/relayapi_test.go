package e2e_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/backbone"
	"github.com/switchboardgg/switchboard/internal/natstest"
	"github.com/switchboardgg/switchboard/protocol/relaywire"
)

// relayREST calls the relay REST API at base with a Bearer (none if
// empty) and decodes a 2xx answer into out.
func relayREST(t *testing.T, base, bearer, method, path, body string, out any) int {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode < 300 && out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %s", method, path, raw)
		}
	}
	if res.StatusCode >= 400 && res.Header.Get("Content-Type") != api.RelayProblemContentType {
		t.Errorf("%s %s: %d with Content-Type %q", method, path, res.StatusCode, res.Header.Get("Content-Type"))
	}
	return res.StatusCode
}

func allocate(t *testing.T, base, bearer, body string) api.RelayAllocation {
	t.Helper()
	var out api.RelayResponse[api.RelayAllocationData]
	if st := relayREST(t, base, bearer, "POST", "/relay/v1/allocate", body, &out); st != 201 {
		t.Fatalf("allocate %s: %d", body, st)
	}
	return out.Data.Allocation
}

func joinCodeOf(t *testing.T, base, bearer string, a api.RelayAllocation) string {
	t.Helper()
	var out api.RelayResponse[api.RelayJoinCodeData]
	if st := relayREST(t, base, bearer, "POST", "/relay/v1/joincode", `{"allocationId":"`+a.AllocationID+`"}`, &out); st != 200 {
		t.Fatalf("joincode: %d", st)
	}
	return out.Data.JoinCode
}

func joinWith(t *testing.T, base, bearer, code string) (api.RelayAllocation, int) {
	t.Helper()
	var out api.RelayResponse[api.RelayAllocationData]
	st := relayREST(t, base, bearer, "POST", "/relay/v1/join", `{"joinCode":"`+code+`"}`, &out)
	return out.Data.Allocation, st
}

// relayUDP is a Unity Transport stand-in on a real UDP socket.
type relayUDP struct {
	t    *testing.T
	conn net.Conn
	id   relaywire.AllocationID
}

// bindUDP dials the allocation's first udp endpoint and binds.
func bindUDP(t *testing.T, a api.RelayAllocation) *relayUDP {
	t.Helper()
	var ep *api.RelayServerEndpoint
	for i := range a.ServerEndpoints {
		if a.ServerEndpoints[i].ConnectionType == "udp" {
			ep = &a.ServerEndpoints[i]
			break
		}
	}
	if ep == nil {
		t.Fatalf("no udp endpoint in %+v", a.ServerEndpoints)
	}
	c, err := net.Dial("udp", net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	u := &relayUDP{t: t, conn: c}
	copy(u.id[:], a.AllocationIDBytes)
	key, err := relaywire.NewKey(a.Key)
	if err != nil {
		t.Fatal(err)
	}
	m, err := relaywire.NewBind(1, a.ConnectionData, &key)
	if err != nil {
		t.Fatal(err)
	}
	u.send(m)
	if got := u.recv(); got.Type() != relaywire.TypeBindReceived {
		t.Fatalf("BIND answered %v", got.Type())
	}
	return u
}

func (u *relayUDP) send(m relaywire.Message) {
	u.t.Helper()
	b, err := m.AppendTo(nil)
	if err != nil {
		u.t.Fatal(err)
	}
	if _, err := u.conn.Write(b); err != nil {
		u.t.Fatal(err)
	}
}

func (u *relayUDP) recv() relaywire.Message {
	u.t.Helper()
	buf := make([]byte, 2048)
	_ = u.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := u.conn.Read(buf)
	if err != nil {
		u.t.Fatal(err)
	}
	m, err := relaywire.Decode(buf[:n])
	if err != nil {
		u.t.Fatalf("% x: %v", buf[:n], err)
	}
	return m
}

// connectAndRelay has the joiner connect to the host and send it one
// datagram through the relay, and the host answer.
func connectAndRelay(t *testing.T, host, joiner *relayUDP, hostData []byte) {
	t.Helper()
	cr, err := relaywire.NewConnectRequest(joiner.id, hostData)
	if err != nil {
		t.Fatal(err)
	}
	joiner.send(cr)
	if acc, ok := joiner.recv().(*relaywire.Accepted); !ok || acc.From != host.id || acc.To != joiner.id {
		t.Fatalf("CONNECT_REQUEST answered %+v, want ACCEPTED(host, joiner)", acc)
	}
	joiner.send(&relaywire.Relay{From: joiner.id, To: host.id, Data: []byte("ping from joiner")})
	if r, ok := host.recv().(*relaywire.Relay); !ok || r.From != joiner.id || !bytes.Equal(r.Data, []byte("ping from joiner")) {
		t.Fatalf("host got %+v", r)
	}
	host.send(&relaywire.Relay{From: host.id, To: joiner.id, Data: []byte("pong")})
	if r, ok := joiner.recv().(*relaywire.Relay); !ok || r.From != host.id || string(r.Data) != "pong" {
		t.Fatalf("joiner got %+v", r)
	}
}

// TestDevRelayAPI: `switchboard dev --relay --relay-ws` with an API key
// made by `switchboard relay keys create`: allocate, joincode, join, and
// BIND/CONNECT/RELAY over real UDP; the host's CLOSE kills its code; a
// revoked key is refused.
func TestDevRelayAPI(t *testing.T) {
	p := start(t, "dev", "--api", "127.0.0.1:0", "--node", "127.0.0.1:0", "--admin", "", "--nats", "127.0.0.1:0",
		"--data-dir", t.TempDir(), "--relay", "127.0.0.1:0", "--relay-ws", "127.0.0.1:0", "--region", "eu")
	base := p.ready.API
	// Without credentials: 401 (anonymous access is off by default).
	if st := relayREST(t, base, "", "POST", "/relay/v1/allocate", `{"maxConnections":1}`, nil); st != 401 {
		t.Fatalf("anonymous allocate: %d, want 401", st)
	}
	out := cli(t, p.readyFile, false, "relay", "keys", "create", "e2e-game", "--project", "e2e")
	var secret, keyID string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "secret" {
			secret = f[1]
		}
		if len(f) == 2 && f[0] == "key_id" {
			keyID = f[1]
		}
	}
	if secret == "" || keyID == "" {
		t.Fatalf("relay keys create printed %q", out)
	}
	if list := cli(t, p.readyFile, false, "relay", "keys", "list"); !strings.Contains(list, keyID) || strings.Contains(list, secret) {
		t.Fatalf("relay keys list: %q", list)
	}

	var regions api.RelayResponse[api.RelayRegionsData]
	if st := relayREST(t, base, secret, "GET", "/relay/v1/regions", "", &regions); st != 200 || len(regions.Data.Regions) != 1 || regions.Data.Regions[0].ID != "eu" {
		t.Fatalf("regions: %d %+v", st, regions.Data)
	}
	h := allocate(t, base, secret, `{"maxConnections":4,"region":"eu"}`)
	code := joinCodeOf(t, base, secret, h)
	j, st := joinWith(t, base, secret, strings.ToLower(code))
	if st != 200 {
		t.Fatalf("join: %d", st)
	}
	host, joiner := bindUDP(t, h), bindUDP(t, j)
	connectAndRelay(t, host, joiner, j.HostConnectionData)

	host.send(&relaywire.Close{HasAllocationID: true, AllocationID: host.id})
	waitJoinCodeDead(t, base, secret, code)

	cli(t, p.readyFile, false, "relay", "keys", "revoke", keyID)
	if st := relayREST(t, base, secret, "GET", "/relay/v1/regions", "", nil); st != 401 {
		t.Fatalf("revoked key: %d, want 401", st)
	}
	cli(t, p.readyFile, true, "relay", "keys", "revoke", keyID)
	p.stop(15 * time.Second)
}

// waitJoinCodeDead waits until a join with code answers 404; the relay
// node reports releases to the store asynchronously.
func waitJoinCodeDead(t *testing.T, base, bearer, code string) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); ; {
		_, st := joinWith(t, base, bearer, code)
		if st == 404 {
			return
		}
		if st != 200 || time.Now().After(deadline) {
			t.Fatalf("join with a dead host's code: %d", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestServeRelayTwoRegions: `serve control` and two `serve relay` in two
// regions on one NATS: allocations go to the region asked for, a joiner to
// its host's node; a relay that stops takes its join codes with it.
func TestServeRelayTwoRegions(t *testing.T) {
	nats, _ := natstest.Start(t, backbone.Config{})
	creds := nats.Embedded.CredentialsFile()
	secretFile := filepath.Join(t.TempDir(), "relay-secret")
	if err := os.WriteFile(secretFile, []byte(hex.EncodeToString(bytes.Repeat([]byte{0x5a}, 32))), 0o600); err != nil {
		t.Fatal(err)
	}
	common := []string{"--nats-url", nats.URL(), "--nats-creds", creds, "--relay-secret-file", secretFile}
	ctl := start(t, append([]string{"serve", "control", "--api", "127.0.0.1:0", "--server-key", "e2e-server-key-0123456789",
		"--data-dir", t.TempDir(), "--relay-allow-anonymous", "--relay-default-region", "us"}, common...)...)
	eu := start(t, append([]string{"serve", "relay", "--relay", "127.0.0.1:0", "--relay-dtls", "127.0.0.1:0", "--region", "eu", "--node-id", "relay-eu",
		"--data-dir", t.TempDir()}, common...)...)
	us := start(t, append([]string{"serve", "relay", "--relay", "127.0.0.1:0", "--region", "us", "--node-id", "relay-us",
		"--data-dir", t.TempDir()}, common...)...)
	base := ctl.ready.API
	relayAddrs := func(p *proc) (udp, dtls string) {
		b, err := os.ReadFile(p.readyFile)
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			RelayUDP  string `json:"relay_udp"`
			RelayDTLS string `json:"relay_dtls"`
		}
		if err := json.Unmarshal(b, &r); err != nil || r.RelayUDP == "" {
			t.Fatalf("relay ready file %s", b)
		}
		return r.RelayUDP, r.RelayDTLS
	}
	relayUDPOf := func(p *proc) string { udp, _ := relayAddrs(p); return udp }
	endpoint := func(a api.RelayAllocation) string {
		return net.JoinHostPort(a.ServerEndpoints[0].Host, strconv.Itoa(a.ServerEndpoints[0].Port))
	}

	nodes, err := exec.Command(binary, "relay", "nodes", "--api", base, "--server-key", "e2e-server-key-0123456789").Output()
	if err != nil || !strings.Contains(string(nodes), "relay-eu") || !strings.Contains(string(nodes), "relay-us") ||
		!strings.Contains(string(nodes), relayUDPOf(eu)) {
		t.Fatalf("relay nodes: %v\n%s", err, nodes)
	}
	// serve relay --relay-dtls: the registry, and so `relay nodes`, has
	// the DTLS address; without the flag a node serves no DTLS.
	if _, euDTLS := relayAddrs(eu); euDTLS == "" || !strings.Contains(string(nodes), euDTLS) {
		t.Fatalf("relay-eu's DTLS address %q not in relay nodes:\n%s", euDTLS, nodes)
	}
	if _, usDTLS := relayAddrs(us); usDTLS != "" {
		t.Fatalf("relay-us serves DTLS on %s without --relay-dtls", usDTLS)
	}
	var regions api.RelayResponse[api.RelayRegionsData]
	if st := relayREST(t, base, "", "GET", "/relay/v1/regions", "", &regions); st != 200 || len(regions.Data.Regions) != 2 {
		t.Fatalf("regions: %d %+v", st, regions.Data)
	}
	hEU := allocate(t, base, "", `{"maxConnections":2,"region":"eu"}`)
	if endpoint(hEU) != relayUDPOf(eu) || hEU.Region != "eu" {
		t.Fatalf("eu allocation on %s (%s), want %s", endpoint(hEU), hEU.Region, relayUDPOf(eu))
	}
	if def := allocate(t, base, "", `{"maxConnections":2}`); endpoint(def) != relayUDPOf(us) {
		t.Fatalf("default-region allocation on %s, want the us relay %s", endpoint(def), relayUDPOf(us))
	}
	code := joinCodeOf(t, base, "", hEU)
	j, st := joinWith(t, base, "", code)
	if st != 200 || endpoint(j) != relayUDPOf(eu) {
		t.Fatalf("join: %d on %s, want its host's relay %s", st, endpoint(j), relayUDPOf(eu))
	}
	host, joiner := bindUDP(t, hEU), bindUDP(t, j)
	connectAndRelay(t, host, joiner, j.HostConnectionData)

	var qos api.RelayResponse[api.QoSServersData]
	if st := relayREST(t, base, "", "GET", "/qos/v1/servers?service=relay&region=eu", "", &qos); st != 200 ||
		len(qos.Data.Servers) != 1 || qos.Data.Servers[0].Endpoints[0] != relayUDPOf(eu) {
		t.Fatalf("qos servers: %d %+v", st, qos.Data)
	}

	// Draining the us relay through the CLI: listed draining; the eu
	// relay's live allocations are untouched.
	out, err := exec.Command(binary, "relay", "nodes", "drain", "relay-us", "--api", base, "--server-key", "e2e-server-key-0123456789").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "relay node relay-us draining") {
		t.Fatalf("relay nodes drain: %v\n%s", err, out)
	}
	if out, err := exec.Command(binary, "relay", "nodes", "drain", "relay-nope", "--api", base, "--server-key", "e2e-server-key-0123456789").CombinedOutput(); err == nil {
		t.Fatalf("relay nodes drain of an unknown node succeeded:\n%s", out)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		nodes, err := exec.Command(binary, "relay", "nodes", "--api", base, "--server-key", "e2e-server-key-0123456789").Output()
		if err == nil && regexp.MustCompile(`relay-us\s.*draining`).Match(nodes) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("relay-us not listed draining:\n%s", nodes)
		}
	}

	// The eu relay stops: its registry entry goes, and its codes die.
	eu.stop(15 * time.Second)
	waitJoinCodeDead(t, base, "", code)
	if st := relayREST(t, base, "", "POST", "/relay/v1/allocate", `{"maxConnections":1,"region":"eu"}`, nil); st != 404 {
		t.Fatalf("allocate in a region without relays: %d, want 404", st)
	}
	us.stop(15 * time.Second)
	ctl.stop(15 * time.Second)
}
