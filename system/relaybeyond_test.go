package system_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/protocol/relaywire"
	"github.com/switchboardgg/switchboard/system"
)

// relayRaw calls the relay REST API and returns the status, the data of a
// success into out, and the problem of a failure.
func relayRaw(t *testing.T, base, method, path, body string, out any) (int, api.RelayProblem) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var p api.RelayProblem
	if res.StatusCode >= 300 {
		_ = json.Unmarshal(raw, &p)
	} else if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %s", method, path, raw)
		}
	}
	return res.StatusCode, p
}

// beyondSystem runs control and a relay node whose idle timeouts are
// short, so that an allocation that goes silent is released soon.
func beyondSystem(t *testing.T) (*system.System, string, string) {
	cfg := testConfig(t.TempDir())
	cfg.Relay = system.RelayConfig{UDPAddr: "127.0.0.1:0"}
	cfg.Relay.API.AllowAnonymous = true
	cfg.Relay.API.RequestsPerMinute = -1
	cfg.Relay.API.JoinsPerMinutePerAddress = -1
	cfg.Relay.Relay.IdleTimeout = time.Second
	cfg.Relay.Relay.HostAloneTimeout = time.Second
	cfg.Relay.Relay.SweepInterval = 20 * time.Millisecond
	cfg.API.PublishServerKey = true
	s := start(t, cfg)
	return s, s.Ready().API, s.Ready().RelayUDP
}

func allocateREST(t *testing.T, base, path, body string) api.RelayAllocation {
	t.Helper()
	var out api.RelayResponse[api.RelayAllocationData]
	if st, p := relayRaw(t, base, "POST", path, body, &out); st/100 != 2 {
		t.Fatalf("%s %s: %d %+v", path, body, st, p)
	}
	return out.Data.Allocation
}

// pinger keeps an allocation alive, as a running game does, until stop.
func pinger(p *udpPeer, id relaywire.AllocationID) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		b, _ := (&relaywire.Ping{From: id, Sequence: 1}).AppendTo(nil)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_, _ = p.conn.Write(b)
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}

// recvUntil reads messages until keep says stop, failing after 10 s.
func (p *udpPeer) recvUntil(keep func(relaywire.Message) bool) {
	p.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if !keep(p.recv()) {
			return
		}
	}
	p.t.Fatal("no awaited message within 10 s")
}

// TestRelayIdleTimeoutOverride: an allocation's idleTimeoutSeconds goes
// through the REST API into its blob, and the relay node honours it: an
// allocation with the node's timeout is released while one with its own
// longer one stays bound.
func TestRelayIdleTimeoutOverride(t *testing.T) {
	_, base, udp := beyondSystem(t)
	short := allocateREST(t, base, "/relay/v1/allocate", `{"maxConnections":2}`)
	long := allocateREST(t, base, "/relay/v1/allocate", `{"maxConnections":2,"idleTimeoutSeconds":120}`)
	sp, lp := dialRelay(t, udp), dialRelay(t, udp)
	sid, lid := sp.bind(short), lp.bind(long)
	// Both go silent; the short one times out (ERROR 1) ...
	sp.recvUntil(func(m relaywire.Message) bool {
		e, ok := m.(*relaywire.Error)
		return !ok || e.Code != relaywire.CodeTimedOut || e.AllocationID != sid
	})
	// ... and the long one still answers, well past the node's timeout.
	lp.send(&relaywire.Ping{From: lid, Sequence: 1})
	if m, ok := lp.recv().(*relaywire.Ping); !ok || m.From != lid {
		t.Fatalf("the allocation with its own idle timeout answered %+v", m)
	}
	sp.send(&relaywire.Ping{From: sid, Sequence: 1})
	if e, ok := sp.recv().(*relaywire.Error); !ok || e.Code != relaywire.CodeNotFound {
		t.Fatalf("the timed-out allocation answered %+v, want ERROR 4", e)
	}
}

// TestRelayHostMigration: a host that opted in goes silent (its process
// died: no CLOSE) and the relay times it out; the peer that claims the
// code first becomes the host with its new allocation, the other peer's
// claim loses and it re-joins with the same code, and the session goes
// on: the new host is told of the peer (host peer events) and they relay.
// A host that did not opt in takes its code with it.
func TestRelayHostMigration(t *testing.T) {
	_, base, udp := beyondSystem(t)
	host := allocateREST(t, base, "/relay/v1/allocate", `{"maxConnections":4,"hostMigration":true}`)
	var code api.RelayResponse[api.RelayJoinCodeData]
	if st, p := relayRaw(t, base, "POST", "/relay/v1/joincode", `{"allocationId":"`+host.AllocationID+`"}`, &code); st != 200 {
		t.Fatalf("joincode: %d %+v", st, p)
	}
	jc := code.Data.JoinCode
	joinBody := `{"joinCode":"` + jc + `","idleTimeoutSeconds":60}`
	ja, jb := allocateREST(t, base, "/relay/v1/join", joinBody), allocateREST(t, base, "/relay/v1/join", joinBody)

	h, a, b := dialRelay(t, udp), dialRelay(t, udp), dialRelay(t, udp)
	hid := h.bind(host)
	stopHost := pinger(h, hid)
	defer stopHost()
	for _, c := range []struct {
		p     *udpPeer
		alloc api.RelayAllocation
	}{{a, ja}, {b, jb}} {
		id := c.p.bind(c.alloc)
		cr, _ := relaywire.NewConnectRequest(id, c.alloc.HostConnectionData)
		c.p.send(cr)
		c.p.recvUntil(func(m relaywire.Message) bool { _, ok := m.(*relaywire.Accepted); return !ok })
	}

	stopHost() // the host's process dies
	for _, p := range []*udpPeer{a, b} {
		p.recvUntil(func(m relaywire.Message) bool {
			d, ok := m.(*relaywire.Disconnect)
			return !ok || d.From != hid
		})
	}
	var st api.RelayResponse[api.RelayJoinCodeStatusData]
	waitFor(t, "the code to be held", func() bool {
		s, _ := relayRaw(t, base, "GET", "/relay/v1/joincode/"+jc, "", &st)
		return s == 200 && st.Data.JoinCode.Status == api.RelayJoinCodeMigrating
	})

	// Both peers race; a's claim is first.
	na := allocateREST(t, base, "/relay/v1/allocate", `{"maxConnections":4,"hostMigration":true}`)
	nb := allocateREST(t, base, "/relay/v1/allocate", `{"maxConnections":4}`)
	claim := func(code string, n, prev api.RelayAllocation) (int, api.RelayJoinCodeData, api.RelayProblem) {
		var out api.RelayResponse[api.RelayJoinCodeData]
		s, p := relayRaw(t, base, "POST", "/relay/v1/joincode",
			`{"allocationId":"`+n.AllocationID+`","joinCode":"`+code+`","previousAllocationId":"`+prev.AllocationID+`"}`, &out)
		return s, out.Data, p
	}
	if s, got, p := claim(jc, na, ja); s != 200 || got.JoinCode != jc {
		t.Fatalf("first claim: %d %+v", s, p)
	}
	if s, _, p := claim(jc, nb, jb); s != 409 || p.Code != api.RelayCodeJoinCodeTaken {
		t.Fatalf("second claim: %d %+v, want 409 %d", s, p, api.RelayCodeJoinCodeTaken)
	}

	// a hosts with its new allocation and subscribes to peer events; b
	// re-joins with the same code and connects.
	a2, b2 := dialRelay(t, udp), dialRelay(t, udp)
	naid := a2.bind(na)
	stopA := pinger(a2, naid)
	defer stopA()
	a2.send(&relaywire.PeersSubscribe{AllocationID: naid})
	a2.recvUntil(func(m relaywire.Message) bool {
		e, ok := m.(*relaywire.PeerEvent)
		return !ok || e.Event != relaywire.PeerSubscribed
	})
	rejoin := allocateREST(t, base, "/relay/v1/join", joinBody)
	if string(rejoin.HostConnectionData) != string(na.ConnectionData) {
		t.Fatal("the re-join did not lead to the new host")
	}
	bid := b2.bind(rejoin)
	cr, _ := relaywire.NewConnectRequest(bid, rejoin.HostConnectionData)
	b2.send(cr)
	b2.recvUntil(func(m relaywire.Message) bool { _, ok := m.(*relaywire.Accepted); return !ok })
	a2.recvUntil(func(m relaywire.Message) bool {
		e, ok := m.(*relaywire.PeerEvent)
		return !ok || e.Event != relaywire.PeerConnected || e.Peer != bid
	})
	b2.send(&relaywire.Relay{From: bid, To: naid, Data: []byte("still in the session")})
	a2.recvUntil(func(m relaywire.Message) bool {
		r, ok := m.(*relaywire.Relay)
		return !ok || string(r.Data) != "still in the session"
	})
	if s, _ := relayRaw(t, base, "GET", "/relay/v1/joincode/"+jc, "", &st); s != 200 ||
		st.Data.JoinCode.Status != api.RelayJoinCodeActive || st.Data.JoinCode.HostAllocationID != na.AllocationID {
		t.Fatalf("status after the migration: %d %+v", s, st.Data.JoinCode)
	}

	// Without the opt-in the code dies with its host.
	plain := allocateREST(t, base, "/relay/v1/allocate", `{"maxConnections":4}`)
	if s, p := relayRaw(t, base, "POST", "/relay/v1/joincode", `{"allocationId":"`+plain.AllocationID+`"}`, &code); s != 200 {
		t.Fatalf("joincode: %d %+v", s, p)
	}
	pc := code.Data.JoinCode
	jp := allocateREST(t, base, "/relay/v1/join", `{"joinCode":"`+pc+`","idleTimeoutSeconds":60}`)
	ph, pj := dialRelay(t, udp), dialRelay(t, udp)
	phid := ph.bind(plain)
	stopPlain := pinger(ph, phid)
	pjid := pj.bind(jp)
	cr, _ = relaywire.NewConnectRequest(pjid, jp.HostConnectionData)
	pj.send(cr)
	pj.recvUntil(func(m relaywire.Message) bool { _, ok := m.(*relaywire.Accepted); return !ok })
	stopPlain()
	pj.recvUntil(func(m relaywire.Message) bool { d, ok := m.(*relaywire.Disconnect); return !ok || d.From != phid })
	waitFor(t, "the code to die", func() bool {
		s, p := relayRaw(t, base, "GET", "/relay/v1/joincode/"+pc, "", nil)
		return s == 404 && p.Code == api.RelayCodeJoinCodeNotFound
	})
	if s, _, p := claim(pc, nb, jp); s != 404 || p.Code != api.RelayCodeJoinCodeNotFound {
		t.Fatalf("claim of a dead code: %d %+v", s, p)
	}
}

// waitFor polls cond every 20 ms for 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: gave up after 10 s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
