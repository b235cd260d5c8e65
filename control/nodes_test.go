package control

import (
	"slices"
	"testing"

	"github.com/switchboardgg/switchboard/store"
)

func TestNodesListAndDrain(t *testing.T) {
	e := newEnv(t)
	live := e.addNode(store.Node{NodeID: "n-live", Region: "eu", Connections: 3}, true)
	e.addNode(store.Node{NodeID: "n-deaf"}, false) // registered, answers nothing

	r := e.server("GET", "/nodes", nil)
	want(t, r, 200)
	nodes, _ := r.body["nodes"].([]any)
	var ids []string
	for _, n := range nodes {
		ids = append(ids, n.(map[string]any)["node_id"].(string))
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"n-deaf", "n-live"}) {
		t.Fatalf("nodes %v, want n-deaf and n-live", ids)
	}

	r = e.server("POST", "/nodes/n-live/drain", nil)
	want(t, r, 200)
	if got := r.obj("node")["draining"]; got != true {
		t.Errorf("drained node: draining %v, want true", got)
	}
	if !slices.Contains(live.Verbs(), store.VerbDrain) {
		t.Errorf("node got %v, want a drain command", live.Verbs())
	}
	want(t, e.server("POST", "/nodes/n-deaf/drain", nil), 503, "unavailable", "game_node_unavailable")
	want(t, e.server("POST", "/nodes/nope/drain", nil), 404, "not_found")
	want(t, e.do("POST", "/server/v1/nodes/n-live/drain", "wrong-key", nil), 401, "unauthenticated")
}
