package system_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/protocol/relaywire"
	"github.com/switchboardgg/switchboard/system"
)

// relayCall calls the relay REST API of a system without credentials
// (anonymous access is on in these tests).
func relayCall(t *testing.T, base, method, path, body string, out any) int {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if out != nil && res.StatusCode < 300 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %s", method, path, raw)
		}
	}
	return res.StatusCode
}

// serverCall calls the server API of a system with its server key.
func serverCall(t *testing.T, s *system.System, method, path string, out any) int {
	t.Helper()
	req, _ := http.NewRequest(method, s.Ready().API+path, nil)
	req.Header.Set("Authorization", "Bearer "+s.Ready().ServerKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if out != nil && res.StatusCode < 300 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %s", method, path, raw)
		}
	}
	return res.StatusCode
}

// udpPeer is a relay client over a real UDP socket.
type udpPeer struct {
	t    *testing.T
	conn net.Conn
	buf  []byte
}

func dialRelay(t *testing.T, addr string) *udpPeer {
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &udpPeer{t: t, conn: c, buf: make([]byte, 2048)}
}

func (p *udpPeer) send(m relaywire.Message) {
	p.t.Helper()
	b, err := m.AppendTo(nil)
	if err != nil {
		p.t.Fatal(err)
	}
	if _, err := p.conn.Write(b); err != nil {
		p.t.Fatal(err)
	}
}

func (p *udpPeer) recv() relaywire.Message {
	p.t.Helper()
	_ = p.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := p.conn.Read(p.buf)
	if err != nil {
		p.t.Fatal(err)
	}
	m, err := relaywire.Decode(p.buf[:n])
	if err != nil {
		p.t.Fatalf("% x: %v", p.buf[:n], err)
	}
	return m
}

func (p *udpPeer) bind(a api.RelayAllocation) relaywire.AllocationID {
	p.t.Helper()
	key, err := relaywire.NewKey(a.Key)
	if err != nil {
		p.t.Fatal(err)
	}
	m, err := relaywire.NewBind(1, a.ConnectionData, &key)
	if err != nil {
		p.t.Fatal(err)
	}
	p.send(m)
	if got := p.recv(); got.Type() != relaywire.TypeBindReceived {
		p.t.Fatalf("BIND answered %v", got.Type())
	}
	var id relaywire.AllocationID
	copy(id[:], a.AllocationIDBytes)
	return id
}

// TestRelayEndToEnd: a dev process with the relay role. The host
// allocates and asks for a join code over REST, a player joins with it,
// both bind over real UDP, the player connects and relays a datagram to
// the host; the host's CLOSE releases its allocation and the code dies.
func TestRelayEndToEnd(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Relay = system.RelayConfig{UDPAddr: "127.0.0.1:0", WSAddr: "127.0.0.1:0"}
	cfg.Relay.API.AllowAnonymous = true
	cfg.API.PublishServerKey = true
	cfg.Admin.Addr = "127.0.0.1:0"
	cfg.Node.Node.Region = "eu"
	s := start(t, cfg)
	base := s.Ready().API

	var regions api.RelayResponse[api.RelayRegionsData]
	if st := relayCall(t, base, "GET", "/relay/v1/regions", "", &regions); st != 200 || len(regions.Data.Regions) != 1 || regions.Data.Regions[0].ID != "eu" {
		t.Fatalf("regions: %d %+v", st, regions.Data)
	}
	var host api.RelayResponse[api.RelayAllocationData]
	if st := relayCall(t, base, "POST", "/relay/v1/allocate", `{"maxConnections":2,"region":"eu"}`, &host); st != 201 {
		t.Fatalf("allocate: %d", st)
	}
	eps := host.Data.Allocation.ServerEndpoints
	if len(eps) != 2 || eps[0].ConnectionType != "udp" || eps[1].ConnectionType != "ws" {
		t.Fatalf("serverEndpoints %+v, want udp and ws", eps)
	}
	var code api.RelayResponse[api.RelayJoinCodeData]
	if st := relayCall(t, base, "POST", "/relay/v1/joincode", `{"allocationId":"`+host.Data.Allocation.AllocationID+`"}`, &code); st != 200 {
		t.Fatalf("joincode: %d", st)
	}
	var joiner api.RelayResponse[api.RelayAllocationData]
	if st := relayCall(t, base, "POST", "/relay/v1/join", `{"joinCode":"`+code.Data.JoinCode+`"}`, &joiner); st != 200 {
		t.Fatalf("join: %d", st)
	}

	udp := net.JoinHostPort(eps[0].Host, itoa(eps[0].Port))
	h, p := dialRelay(t, udp), dialRelay(t, udp)
	hid := h.bind(host.Data.Allocation)
	pid := p.bind(joiner.Data.Allocation)
	cr, err := relaywire.NewConnectRequest(pid, joiner.Data.Allocation.HostConnectionData)
	if err != nil {
		t.Fatal(err)
	}
	p.send(cr)
	if acc, ok := p.recv().(*relaywire.Accepted); !ok || acc.From != hid || acc.To != pid {
		t.Fatalf("CONNECT_REQUEST answered %+v, want ACCEPTED(host, player)", acc)
	}
	p.send(&relaywire.Relay{From: pid, To: hid, Data: []byte("hello host")})
	if r, ok := h.recv().(*relaywire.Relay); !ok || r.From != pid || !bytes.Equal(r.Data, []byte("hello host")) {
		t.Fatalf("host got %+v", r)
	}

	// /metrics counts the live join code and the two allocations.
	scrape(t, s, "switchboard_control_relay_join_codes 1", "switchboard_control_relay_allocation_records 2",
		"switchboard_relay_allocations 2")

	// The server API shows each allocation's counters, from its node.
	allocPath := "/server/v1/relay/allocations/"
	var hs, ps api.RelayAllocationResponse
	if st := serverCall(t, s, "GET", allocPath+host.Data.Allocation.AllocationID, &hs); st != 200 {
		t.Fatalf("host allocation: %d", st)
	}
	if a := hs.Allocation; !a.Live || !a.Host || a.Carrier != "udp" || a.Peers != 1 || a.PacketsOut != 1 || a.BytesOut == 0 ||
		a.PacketsIn != 0 || a.BoundAt == nil || a.NodeID != s.Ready().NodeID {
		t.Errorf("host allocation %+v", a)
	}
	if st := serverCall(t, s, "GET", allocPath+joiner.Data.Allocation.AllocationID, &ps); st != 200 {
		t.Fatalf("player allocation: %d", st)
	}
	if a := ps.Allocation; !a.Live || a.Host || a.HostAllocationID != host.Data.Allocation.AllocationID || a.PacketsIn != 1 ||
		a.BytesIn != hs.Allocation.BytesOut || a.PacketsOut != 0 {
		t.Errorf("player allocation %+v", a)
	}
	if st := serverCall(t, s, "GET", allocPath+"00112233-4455-6677-8899-aabbccddeeff", nil); st != 404 {
		t.Errorf("unknown allocation: %d, want 404", st)
	}
	if st := serverCall(t, s, "GET", allocPath+"xyz", nil); st != 400 {
		t.Errorf("malformed allocation id: %d, want 400", st)
	}

	// The host leaves: its node reports the release, and the code dies.
	h.send(&relaywire.Close{HasAllocationID: true, AllocationID: hid})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		st := relayCall(t, base, "POST", "/relay/v1/join", `{"joinCode":"`+code.Data.JoinCode+`"}`, nil)
		if st == 404 {
			break
		}
		if st != 200 {
			t.Fatalf("join after CLOSE: %d", st)
		}
		select {
		case <-ctx.Done():
			t.Fatal("the join code outlived its host's CLOSE")
		case <-time.After(50 * time.Millisecond):
		}
	}
	if st := serverCall(t, s, "GET", allocPath+host.Data.Allocation.AllocationID, nil); st != 404 {
		t.Errorf("released allocation: %d, want 404", st)
	}
	scrape(t, s, "switchboard_control_relay_join_codes 0")
}

// scrape fails t unless the admin /metrics of s has every line of want.
func scrape(t *testing.T, s *system.System, want ...string) {
	t.Helper()
	res, err := http.Get(s.Ready().Admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	for _, w := range want {
		if !strings.Contains(string(b), "\n"+w+"\n") {
			t.Errorf("/metrics has no line %q", w)
		}
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestRelayDrain: draining a relay node through the server API stops new
// allocations on it, while its host still takes a joiner and relays.
func TestRelayDrain(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Relay = system.RelayConfig{UDPAddr: "127.0.0.1:0"}
	cfg.Relay.API.AllowAnonymous = true
	cfg.API.PublishServerKey = true
	s := start(t, cfg)
	base := s.Ready().API

	var host api.RelayResponse[api.RelayAllocationData]
	if st := relayCall(t, base, "POST", "/relay/v1/allocate", `{"maxConnections":2}`, &host); st != 201 {
		t.Fatalf("allocate: %d", st)
	}
	var code api.RelayResponse[api.RelayJoinCodeData]
	if st := relayCall(t, base, "POST", "/relay/v1/joincode", `{"allocationId":"`+host.Data.Allocation.AllocationID+`"}`, &code); st != 200 {
		t.Fatalf("joincode: %d", st)
	}
	if st := serverCall(t, s, "POST", "/server/v1/relay/nodes/no-such-node/drain", nil); st != 404 {
		t.Errorf("drain of an unknown node: %d, want 404", st)
	}
	var drained api.RelayNodeResponse
	if st := serverCall(t, s, "POST", "/server/v1/relay/nodes/"+s.Ready().NodeID+"/drain", &drained); st != 200 || !drained.Node.Draining {
		t.Fatalf("drain: %d %+v", st, drained.Node)
	}
	// The registry shows it draining, and it gets no new allocation
	// (control's registry cache may lag a moment).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		var nodes api.ListRelayNodesResponse
		if st := serverCall(t, s, "GET", "/server/v1/relay/nodes", &nodes); st == 200 && len(nodes.Nodes) == 1 && nodes.Nodes[0].Draining &&
			relayCall(t, base, "POST", "/relay/v1/allocate", `{"maxConnections":2}`, nil) == 503 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("a draining relay node still gets allocations")
		case <-time.After(50 * time.Millisecond):
		}
	}
	// Its host still takes a joiner, and relays.
	var joiner api.RelayResponse[api.RelayAllocationData]
	if st := relayCall(t, base, "POST", "/relay/v1/join", `{"joinCode":"`+code.Data.JoinCode+`"}`, &joiner); st != 200 {
		t.Fatalf("join on a draining node: %d", st)
	}
	eps := host.Data.Allocation.ServerEndpoints
	udp := net.JoinHostPort(eps[0].Host, itoa(eps[0].Port))
	h, p := dialRelay(t, udp), dialRelay(t, udp)
	hid := h.bind(host.Data.Allocation)
	pid := p.bind(joiner.Data.Allocation)
	cr, err := relaywire.NewConnectRequest(pid, joiner.Data.Allocation.HostConnectionData)
	if err != nil {
		t.Fatal(err)
	}
	p.send(cr)
	if acc, ok := p.recv().(*relaywire.Accepted); !ok || acc.From != hid {
		t.Fatalf("CONNECT_REQUEST answered %+v", acc)
	}
	p.send(&relaywire.Relay{From: pid, To: hid, Data: []byte("still here")})
	if r, ok := h.recv().(*relaywire.Relay); !ok || !bytes.Equal(r.Data, []byte("still here")) {
		t.Fatalf("host got %+v", r)
	}
}

// TestRelayQuotas: live allocations are limited per source address and
// per API key; a release frees the address's quota.
func TestRelayQuotas(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Relay = system.RelayConfig{UDPAddr: "127.0.0.1:0"}
	cfg.Relay.API.AllowAnonymous = true
	cfg.Relay.API.MaxAllocationsPerAddress = 2
	cfg.API.PublishServerKey = true
	s := start(t, cfg)
	base := s.Ready().API

	over := func(bearer string) {
		t.Helper()
		req, _ := http.NewRequest("POST", base+"/relay/v1/allocate", strings.NewReader(`{"maxConnections":1}`))
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var p api.RelayProblem
		if err := json.NewDecoder(res.Body).Decode(&p); err != nil || res.StatusCode != 429 || p.Code != api.RelayCodeQuotaExceeded {
			t.Fatalf("allocate over the quota: %d %+v %v, want 429 code %d", res.StatusCode, p, err, api.RelayCodeQuotaExceeded)
		}
	}
	var first api.RelayResponse[api.RelayAllocationData]
	if st := relayCall(t, base, "POST", "/relay/v1/allocate", `{"maxConnections":1}`, &first); st != 201 {
		t.Fatalf("allocate 1: %d", st)
	}
	if st := relayCall(t, base, "POST", "/relay/v1/allocate", `{"maxConnections":1}`, nil); st != 201 {
		t.Fatalf("allocate 2: %d", st)
	}
	over("")

	// The first host binds and leaves: its node reports the release,
	// which frees a place.
	eps := first.Data.Allocation.ServerEndpoints
	h := dialRelay(t, net.JoinHostPort(eps[0].Host, itoa(eps[0].Port)))
	hid := h.bind(first.Data.Allocation)
	h.send(&relaywire.Close{HasAllocationID: true, AllocationID: hid})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for relayCall(t, base, "POST", "/relay/v1/allocate", `{"maxConnections":1}`, nil) != 201 {
		select {
		case <-ctx.Done():
			t.Fatal("a release did not free the address's quota")
		case <-time.After(100 * time.Millisecond):
		}
	}
	over("")

	// Per API key, with the address limit off: another process.
	cfg = testConfig(t.TempDir())
	cfg.Relay = system.RelayConfig{UDPAddr: "127.0.0.1:0"}
	cfg.Relay.API.MaxAllocationsPerKey = 1
	cfg.Relay.API.MaxAllocationsPerAddress = -1
	cfg.API.PublishServerKey = true
	s = start(t, cfg)
	base = s.Ready().API
	req, _ := http.NewRequest("POST", base+"/server/v1/relay/keys", strings.NewReader(`{"name":"game"}`))
	req.Header.Set("Authorization", "Bearer "+s.Ready().ServerKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var key api.RelayKeyResponse
	err = json.NewDecoder(res.Body).Decode(&key)
	res.Body.Close()
	if err != nil || res.StatusCode != 201 {
		t.Fatalf("create key: %d %v", res.StatusCode, err)
	}
	req, _ = http.NewRequest("POST", base+"/relay/v1/allocate", strings.NewReader(`{"maxConnections":1}`))
	req.Header.Set("Authorization", "Bearer "+key.Key.Secret)
	if res, err = http.DefaultClient.Do(req); err != nil || res.StatusCode != 201 {
		t.Fatalf("allocate with the key: %v %v", err, res)
	}
	res.Body.Close()
	over(key.Key.Secret)
}
