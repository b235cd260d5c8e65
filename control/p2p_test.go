package control

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/tokens"
)

// p2pEnv is a control server with the P2P API, and the keyring hubs
// open its tickets with.
func p2pEnv(t *testing.T) (*env, *tokens.HubKeyring) {
	t.Helper()
	var ring *tokens.HubKeyring
	e := newEnv(t, func(c *Config) {
		key, err := c.DB.SigningKey(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if ring, err = tokens.NewHubKeyring(tokens.HubKey{ID: 1, Secret: key}); err != nil {
			t.Fatal(err)
		}
		c.HubTickets = ring
	})
	return e, ring
}

// addHub registers a hub in the registry.
func (e *env) addHub(id string, load float64, draining bool) {
	e.t.Helper()
	if err := e.db.PutNode(context.Background(), &store.Node{Role: store.RoleHub, NodeID: id, Load: load, Draining: draining,
		Addresses: map[string]string{store.HubAddressTLS: "127.0.0.1:7" + id[len(id)-1:], store.HubAddressCertSHA256: "ab" + id}}); err != nil {
		e.t.Fatal(err)
	}
}

// fakeHub answers the hub commands of one hub id, with a fixed peer set.
type fakeHub struct {
	mu    sync.Mutex
	peers []store.HubPeer
	kicks []store.HubKickRequest
}

func (e *env) serveHub(id string, peers ...store.HubPeer) *fakeHub {
	e.t.Helper()
	h := &fakeHub{peers: peers}
	conn := e.connect()
	stop1, err := conn.Handle(store.HubCommandSubject(id, store.HubVerbPeers), "", func(_ context.Context, data []byte) (any, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		return &store.HubCommandReply{OK: true, Peers: h.peers}, nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
	stop2, err := conn.Handle(store.HubCommandSubject(id, store.HubVerbKick), "", func(_ context.Context, data []byte) (any, error) {
		var req store.HubKickRequest
		if err := json.Unmarshal(data, &req); err != nil {
			return nil, err
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		h.kicks = append(h.kicks, req)
		n := 0
		for _, p := range h.peers {
			if p.PeerID == req.PeerID || req.PeerID == "" && p.Username == req.Username {
				n++
			}
		}
		return &store.HubCommandReply{OK: true, Kicked: n}, nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = stop1(); _ = stop2() })
	return h
}

func (e *env) p2p(method, path string, body any) resp {
	e.t.Helper()
	return e.do(method, "/p2p/v1"+path, testServerKey, body)
}

// A first join makes an open network on the least loaded hub and hands
// out a ticket the hub opens, naming the user, the network, a fresh peer
// id and the hub.
func TestP2PJoinCreatesNetwork(t *testing.T) {
	e, ring := p2pEnv(t)
	alice := e.login("alice")
	want(t, e.do("POST", "/p2p/v1/join", alice, map[string]any{"network": "lobby"}), http.StatusServiceUnavailable, api.CodeUnavailable, api.ReasonHubUnavailable)
	e.addHub("h1", 0.5, false)
	e.addHub("h2", 0.1, false)
	e.addHub("h3", 0.0, true) // draining: never chosen
	r := e.do("POST", "/p2p/v1/join", alice, map[string]any{"network": "lobby"})
	want(t, r, http.StatusOK)
	var jr api.P2PJoinResponse
	if err := json.Unmarshal(r.raw, &jr); err != nil {
		t.Fatal(err)
	}
	if jr.Network != "lobby" || jr.Hub.NodeID != "h2" || jr.Hub.Address != "127.0.0.1:72" || jr.Hub.CertSHA256 != "abh2" || !strings.HasPrefix(jr.PeerID, "alice~") {
		t.Fatalf("join = %+v", jr)
	}
	tk, err := ring.Open([]byte(jr.Ticket), e.clock.Now())
	if err != nil || tk.Username != "alice" || tk.Network != "lobby" || tk.PeerID != jr.PeerID || tk.HubID != "h2" {
		t.Fatalf("ticket = %+v, %v", tk, err)
	}
	if !tk.Expires.Equal(jr.ExpiresAt.Truncate(time.Millisecond)) || tk.Expires.Sub(tk.Issued) != api.HubTicketTTL {
		t.Fatalf("ticket times %v..%v, answer %v", tk.Issued, tk.Expires, jr.ExpiresAt)
	}
	// Another user joins the same network, on the same hub, whatever
	// the loads are now, with another peer id.
	e.addHub("h1", 0.0, false)
	r = e.do("POST", "/p2p/v1/join", e.login("bob"), map[string]any{"network": "lobby"})
	want(t, r, http.StatusOK)
	var jr2 api.P2PJoinResponse
	_ = json.Unmarshal(r.raw, &jr2)
	if jr2.Hub.NodeID != "h2" || !strings.HasPrefix(jr2.PeerID, "bob~") {
		t.Fatalf("second join = %+v", jr2)
	}
	// The same user twice: two connections, two peer ids.
	r = e.do("POST", "/p2p/v1/join", alice, map[string]any{"network": "lobby"})
	want(t, r, http.StatusOK)
	if r.body["peer_id"] == jr.PeerID {
		t.Fatal("a second join got the same peer id")
	}
	g := e.p2p("GET", "/networks/lobby", nil)
	want(t, g, http.StatusOK)
	if g.body["created_by"] != "alice" || g.body["access"] != api.AccessOpenNetwork || g.body["max_peers"] != float64(api.DefaultMaxPeers) {
		t.Fatalf("network = %s", g.raw)
	}
}

// A network whose hub left the registry moves to a live hub at the next
// join.
func TestP2PNetworkMovesOffDeadHub(t *testing.T) {
	e, _ := p2pEnv(t)
	e.addHub("h1", 0, false)
	alice := e.login("alice")
	want(t, e.do("POST", "/p2p/v1/join", alice, map[string]any{"network": "n"}), http.StatusOK)
	if err := e.db.DeleteRoleNode(context.Background(), store.RoleHub, "h1"); err != nil {
		t.Fatal(err)
	}
	want(t, e.do("POST", "/p2p/v1/join", alice, map[string]any{"network": "n"}), http.StatusServiceUnavailable, api.CodeUnavailable, api.ReasonHubUnavailable)
	e.addHub("h2", 0, false)
	r := e.do("POST", "/p2p/v1/join", alice, map[string]any{"network": "n"})
	want(t, r, http.StatusOK)
	if r.obj("hub")["node_id"] != "h2" {
		t.Fatalf("join after the move = %s", r.raw)
	}
	if n, _ := e.db.GetP2PNetwork(context.Background(), "n"); n.HubID != "h2" {
		t.Fatalf("record says hub %s", n.HubID)
	}
}

// Networks made by the server API: a join code (joined by code alone or
// with the name), an allow list, a cap; bad input.
func TestP2PServerNetworks(t *testing.T) {
	e, _ := p2pEnv(t)
	e.addHub("h1", 0, false)
	r := e.p2p("POST", "/networks", map[string]any{"network": "secret", "require_join_code": true, "max_peers": 8})
	want(t, r, http.StatusCreated)
	code, _ := r.body["join_code"].(string)
	if len(code) != api.JoinCodeLen || r.body["access"] != api.AccessJoinCode || r.body["max_peers"] != float64(8) || r.body["created_by"] != "server" {
		t.Fatalf("create = %s", r.raw)
	}
	want(t, e.p2p("POST", "/networks", map[string]any{"network": "secret"}), http.StatusConflict, api.CodeConflict, api.ReasonNetworkExists)
	if g := e.p2p("GET", "/networks/secret", nil); g.body["join_code"] != nil {
		t.Fatalf("the join code is shown again: %s", g.raw)
	}
	alice := e.login("alice")
	want(t, e.do("POST", "/p2p/v1/join", alice, map[string]any{"network": "secret"}), http.StatusForbidden, api.CodePermissionDenied, api.ReasonJoinCodeRequired)
	want(t, e.do("POST", "/p2p/v1/join", alice, map[string]any{"network": "secret", "join_code": "BBBBBBBBBB"}), http.StatusForbidden, api.CodePermissionDenied, api.ReasonJoinCodeRequired)
	want(t, e.do("POST", "/p2p/v1/join", alice, map[string]any{"join_code": "BBBBBBBBBB"}), http.StatusNotFound, api.CodeNotFound)
	r = e.do("POST", "/p2p/v1/join", alice, map[string]any{"join_code": strings.ToLower(code)})
	want(t, r, http.StatusOK)
	if r.body["network"] != "secret" {
		t.Fatalf("join by code = %s", r.raw)
	}
	want(t, e.do("POST", "/p2p/v1/join", alice, map[string]any{"network": "secret", "join_code": code}), http.StatusOK)
	// Another network's code does not open this one.
	want(t, e.p2p("POST", "/networks", map[string]any{"network": "other", "require_join_code": true}), http.StatusCreated)
	want(t, e.do("POST", "/p2p/v1/join", alice, map[string]any{"network": "other", "join_code": code}), http.StatusForbidden, api.CodePermissionDenied, api.ReasonJoinCodeRequired)

	want(t, e.p2p("POST", "/networks", map[string]any{"network": "club", "allow_list": []string{"bob", "alice"}}), http.StatusCreated)
	want(t, e.do("POST", "/p2p/v1/join", e.login("carol"), map[string]any{"network": "club"}), http.StatusForbidden, api.CodePermissionDenied, api.ReasonNotAllowed)
	want(t, e.do("POST", "/p2p/v1/join", alice, map[string]any{"network": "club"}), http.StatusOK)
	r = e.p2p("PATCH", "/networks/club", map[string]any{"allow_list": []string{}, "max_peers": 3})
	want(t, r, http.StatusOK)
	if r.body["access"] != api.AccessOpenNetwork || r.body["max_peers"] != float64(3) {
		t.Fatalf("patch = %s", r.raw)
	}
	want(t, e.do("POST", "/p2p/v1/join", e.login("carol"), map[string]any{"network": "club"}), http.StatusOK)

	r = e.p2p("GET", "/networks?limit=2", nil)
	want(t, r, http.StatusOK)
	if nets := r.body["networks"].([]any); len(nets) != 2 || r.body["next_page_token"] != "other" {
		t.Fatalf("list = %s", r.raw)
	}
	r = e.p2p("GET", "/networks?limit=2&page_token=other", nil)
	if nets := r.body["networks"].([]any); len(nets) != 1 || r.body["next_page_token"] != nil {
		t.Fatalf("second page = %s", r.raw)
	}
	want(t, e.p2p("DELETE", "/networks/other", nil), http.StatusNoContent)
	want(t, e.p2p("GET", "/networks/other", nil), http.StatusNotFound, api.CodeNotFound)

	for _, body := range []any{
		map[string]any{"network": "bad name"},
		map[string]any{"network": strings.Repeat("n", 65)},
		map[string]any{"network": "x", "max_peers": api.MaxMaxPeers + 1},
		map[string]any{"network": "x", "allow_list": []string{"no spaces"}},
		map[string]any{"network": "x", "extra": 1},
	} {
		want(t, e.p2p("POST", "/networks", body), http.StatusBadRequest, api.CodeInvalidArgument)
	}
	for _, body := range []any{
		map[string]any{},
		map[string]any{"network": "a/b"},
		map[string]any{"join_code": "AAAAAAAAAA"}, // vowels are not in the alphabet
		map[string]any{"network": "n", "ticket": "x"},
	} {
		want(t, e.do("POST", "/p2p/v1/join", alice, body), http.StatusBadRequest, api.CodeInvalidArgument)
	}
	want(t, e.do("POST", "/p2p/v1/join", "", map[string]any{"network": "n"}), http.StatusUnauthorized, api.CodeUnauthenticated)
	want(t, e.do("GET", "/p2p/v1/networks", alice, nil), http.StatusUnauthorized, api.CodeUnauthenticated)
}

// Peers, kick and ban reach the network's hub as commands; a ban is kept
// in the record and refuses the next join; no hub answering is 503.
func TestP2PPeersKickBan(t *testing.T) {
	e, _ := p2pEnv(t)
	e.addHub("h1", 0, false)
	mallory := e.login("mallory")
	want(t, e.do("POST", "/p2p/v1/join", mallory, map[string]any{"network": "n"}), http.StatusOK)
	want(t, e.p2p("GET", "/networks/n/peers", nil), http.StatusServiceUnavailable, api.CodeUnavailable, api.ReasonHubUnavailable)
	h := e.serveHub("h1", store.HubPeer{PeerID: "mallory~b", Username: "mallory"}, store.HubPeer{PeerID: "alice~a", Username: "alice"})
	r := e.p2p("GET", "/networks/n/peers", nil)
	want(t, r, http.StatusOK)
	peers := r.body["peers"].([]any)
	if len(peers) != 2 || peers[0].(map[string]any)["peer_id"] != "alice~a" || peers[1].(map[string]any)["username"] != "mallory" {
		t.Fatalf("peers = %s", r.raw)
	}
	// The cap counts the peers the hub reports.
	want(t, e.p2p("PATCH", "/networks/n", map[string]any{"max_peers": 2}), http.StatusOK)
	want(t, e.do("POST", "/p2p/v1/join", e.login("alice"), map[string]any{"network": "n"}), http.StatusConflict, api.CodeConflict, api.ReasonNetworkFull)
	want(t, e.p2p("PATCH", "/networks/n", map[string]any{"max_peers": 3}), http.StatusOK)
	want(t, e.do("POST", "/p2p/v1/join", e.login("alice"), map[string]any{"network": "n"}), http.StatusOK)
	want(t, e.p2p("POST", "/networks/n/peers/alice~a/kick", map[string]any{"reason": "afk"}), http.StatusNoContent)
	want(t, e.p2p("POST", "/networks/n/peers/nobody~x/kick", nil), http.StatusNotFound, api.CodeNotFound)
	want(t, e.p2p("POST", "/networks/none/peers/alice~a/kick", nil), http.StatusNotFound, api.CodeNotFound)
	r = e.p2p("POST", "/networks/n/bans", map[string]any{"username": "mallory"})
	want(t, r, http.StatusOK)
	if bans := r.body["bans"].([]any); len(bans) != 1 || bans[0] != "mallory" {
		t.Fatalf("ban = %s", r.raw)
	}
	want(t, e.do("POST", "/p2p/v1/join", mallory, map[string]any{"network": "n"}), http.StatusForbidden, api.CodePermissionDenied, api.ReasonBanned)
	h.mu.Lock()
	kicks := append([]store.HubKickRequest(nil), h.kicks...)
	h.mu.Unlock()
	if len(kicks) != 3 || kicks[0].PeerID != "alice~a" || kicks[0].Reason != "afk" || kicks[2].Username != "mallory" || !kicks[2].Ban || kicks[2].PeerID != "" {
		t.Fatalf("kicks = %+v", kicks)
	}
	want(t, e.p2p("DELETE", "/networks/n/bans/mallory", nil), http.StatusNoContent)
	want(t, e.do("POST", "/p2p/v1/join", mallory, map[string]any{"network": "n"}), http.StatusOK)
	want(t, e.p2p("POST", "/networks/n/bans", map[string]any{"username": ""}), http.StatusBadRequest, api.CodeInvalidArgument)
}

// Without a hub keyring, control serves no P2P API.
func TestP2PNotMounted(t *testing.T) {
	e := newEnv(t)
	want(t, e.p2p("GET", "/networks", nil), http.StatusNotFound, api.CodeNotFound)
}

// Bad input on the server routes: wrong values, unknown networks, long
// bodies, wrong methods; the join limiter.
func TestP2PBadInput(t *testing.T) {
	e, _ := p2pEnv(t)
	e.addHub("h1", 0, false)
	want(t, e.p2p("POST", "/networks", map[string]any{"network": "n"}), http.StatusCreated)
	for _, c := range []struct {
		method, path string
		body         any
		status       int
		code         string
	}{
		{"PATCH", "/networks/n", map[string]any{"max_peers": 0}, http.StatusBadRequest, api.CodeInvalidArgument},
		{"PATCH", "/networks/n", map[string]any{"allow_list": []string{strings.Repeat("u", 65)}}, http.StatusBadRequest, api.CodeInvalidArgument},
		{"PATCH", "/networks/none", map[string]any{"max_peers": 3}, http.StatusNotFound, api.CodeNotFound},
		{"GET", "/networks/bad.name", nil, http.StatusNotFound, api.CodeNotFound},
		{"GET", "/networks?limit=0", nil, http.StatusBadRequest, api.CodeInvalidArgument},
		{"GET", "/networks?limit=201", nil, http.StatusBadRequest, api.CodeInvalidArgument},
		{"GET", "/networks?page_token=a.b", nil, http.StatusBadRequest, api.CodeInvalidArgument},
		{"POST", "/networks/n/peers/x~y/kick", map[string]any{"reason": "\x01"}, http.StatusBadRequest, api.CodeInvalidArgument},
		{"POST", "/networks/n/peers/" + strings.Repeat("p", 97) + "/kick", nil, http.StatusNotFound, api.CodeNotFound},
		{"POST", "/networks/n/bans", map[string]any{"username": "a b"}, http.StatusBadRequest, api.CodeInvalidArgument},
		{"DELETE", "/networks/none/bans/x", nil, http.StatusNotFound, api.CodeNotFound},
		{"POST", "/networks", strings.Repeat(" ", DefaultMaxBodyBytes+1), http.StatusBadRequest, api.CodeInvalidArgument},
		{"PUT", "/networks/n", nil, http.StatusMethodNotAllowed, api.CodeInvalidArgument},
	} {
		r := e.p2p(c.method, c.path, c.body)
		if r.status != c.status || r.code() != c.code {
			t.Errorf("%s %s: %d %s, want %d %s; %s", c.method, c.path, r.status, r.code(), c.status, c.code, r.raw)
		}
	}
	// A network's name in another case is another network.
	want(t, e.p2p("GET", "/networks/N", nil), http.StatusNotFound, api.CodeNotFound)
}

// Joins are rate limited per login session; the 429 says when to retry,
// as the rooms API's does.
func TestP2PJoinRateLimit(t *testing.T) {
	var ring *tokens.HubKeyring
	e := newEnv(t, func(c *Config) {
		key, _ := c.DB.SigningKey(context.Background())
		ring, _ = tokens.NewHubKeyring(tokens.HubKey{ID: 1, Secret: key})
		c.HubTickets = ring
		c.JoinRate, c.JoinBurst = 0.001, 2
	})
	e.addHub("h1", 0, false)
	alice := e.login("alice")
	for range 2 {
		want(t, e.do("POST", "/p2p/v1/join", alice, map[string]any{"network": "n"}), http.StatusOK)
	}
	r := e.do("POST", "/p2p/v1/join", alice, map[string]any{"network": "n"})
	want(t, r, http.StatusTooManyRequests, api.CodeRateLimited)
	// One join in 1,000 s: the next token comes 1,000 s after the burst.
	if got := r.header.Get("Retry-After"); got != "1000" {
		t.Errorf("Retry-After %q, want 1000", got)
	}
	want(t, e.do("POST", "/p2p/v1/join", e.login("bob"), map[string]any{"network": "n"}), http.StatusOK)
}
