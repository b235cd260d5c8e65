package control

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/control/relayapi"
	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/tokens"
)

func relayEnv(t *testing.T) *env {
	keys, err := tokens.NewRelayKeyring(tokens.RelayKey{ID: 1, Secret: []byte(strings.Repeat("s", 32))})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *Config) { c.Relay = &relayapi.Config{Keys: keys} })
	n := &store.Node{Role: store.RoleRelay, NodeID: "relay-1", Region: "eu", BootEpoch: 1,
		Addresses: map[string]string{relayapi.AddrUDP: "127.0.0.1:37000"}}
	if err := e.db.PutNode(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestRelayMounted: the relay API answers beside the rooms API, to an
// access token of the existing login.
func TestRelayMounted(t *testing.T) {
	e := relayEnv(t)
	access := e.login("alice")
	r := e.do("POST", "/relay/v1/allocate", access, `{"maxConnections":2}`)
	want(t, r, http.StatusCreated)
	alloc := r.obj("data", "allocation")
	if alloc["region"] != "eu" || alloc["allocationId"] == "" {
		t.Errorf("allocation %s", r.raw)
	}
	r = e.do("POST", "/relay/v1/joincode", access, map[string]any{"allocationId": alloc["allocationId"]})
	want(t, r, http.StatusOK)
	// Another user may join with the code, not ask for the host's code.
	bob := e.login("bob")
	req, _ := http.NewRequest("POST", e.url+"/relay/v1/joincode", strings.NewReader(`{"allocationId":"`+alloc["allocationId"].(string)+`"}`))
	req.Header.Set("Authorization", "Bearer "+bob)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 404 || res.Header.Get("Content-Type") != api.RelayProblemContentType {
		t.Errorf("bob asks for alice's code: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	code := r.obj("data")["joinCode"].(string)
	want(t, e.do("POST", "/relay/v1/join", bob, map[string]any{"joinCode": code}), http.StatusOK)
	// After logout the access token is refused with a relay problem.
	want(t, e.do("DELETE", "/client/v1/sessions/current", access, nil), http.StatusNoContent)
	req, _ = http.NewRequest("GET", e.url+"/relay/v1/regions", nil)
	req.Header.Set("Authorization", "Bearer "+access)
	if res, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 401 {
		t.Errorf("after logout: %d", res.StatusCode)
	}
}

// TestRelayKeys: API keys are created, listed and revoked through the
// server API, and work as Bearer until revoked.
func TestRelayKeys(t *testing.T) {
	e := relayEnv(t)
	r := e.server("POST", "/relay/keys", map[string]any{"name": "game-1", "project": "space"})
	want(t, r, http.StatusCreated)
	key := r.obj("key")
	secret, id := key["secret"].(string), key["key_id"].(string)
	if !strings.HasPrefix(secret, relayapi.APIKeyPrefix) || len(id) != 16 || key["project"] != "space" {
		t.Fatalf("key %s", r.raw)
	}
	want(t, e.server("POST", "/relay/keys", map[string]any{"name": "bad name"}), http.StatusBadRequest, api.CodeInvalidArgument)
	want(t, e.server("POST", "/relay/keys", map[string]any{"name": "x", "extra": 1}), http.StatusBadRequest, api.CodeInvalidArgument)
	want(t, e.do("GET", "/server/v1/relay/keys", "wrong", nil), http.StatusUnauthorized, api.CodeUnauthenticated)

	r = e.server("GET", "/relay/keys", nil)
	want(t, r, http.StatusOK)
	if !strings.Contains(string(r.raw), id) || strings.Contains(string(r.raw), secret) {
		t.Errorf("list %s", r.raw)
	}
	want(t, e.do("POST", "/relay/v1/allocate", secret, `{"maxConnections":1}`), http.StatusCreated)
	want(t, e.server("DELETE", "/relay/keys/"+id, nil), http.StatusNoContent)
	want(t, e.server("DELETE", "/relay/keys/"+id, nil), http.StatusNotFound, api.CodeNotFound)
	req, _ := http.NewRequest("POST", e.url+"/relay/v1/allocate", strings.NewReader(`{"maxConnections":1}`))
	req.Header.Set("Authorization", "Bearer "+secret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 401 {
		t.Errorf("revoked key: %d", res.StatusCode)
	}
}

// TestRelayNodes: the server API lists the live relay nodes.
func TestRelayNodes(t *testing.T) {
	e := relayEnv(t)
	r := e.server("GET", "/relay/nodes", nil)
	want(t, r, http.StatusOK)
	nodes, _ := r.body["nodes"].([]any)
	if len(nodes) != 1 {
		t.Fatalf("nodes %s", r.raw)
	}
	n := nodes[0].(map[string]any)
	if n["node_id"] != "relay-1" || n["region"] != "eu" || n["boot_epoch"] != float64(1) ||
		n["addresses"].(map[string]any)["udp"] != "127.0.0.1:37000" {
		t.Errorf("node %s", r.raw)
	}
	want(t, e.do("GET", "/server/v1/relay/nodes", "", nil), http.StatusUnauthorized, api.CodeUnauthenticated)
}
