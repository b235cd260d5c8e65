package control

import (
	"context"
	"errors"
	"net/http"

	"github.com/switchboardgg/switchboard/store"
)

// nodeJSON is a game node as the server API shows it.
type nodeJSON struct {
	NodeID      string `json:"node_id"`
	WSURL       string `json:"ws_url"`
	Region      string `json:"region,omitempty"`
	Rooms       int    `json:"rooms"`
	Connections int    `json:"connections"`
	Draining    bool   `json:"draining"`
	Version     string `json:"version,omitempty"`
}

func toNodeJSON(n *store.Node) nodeJSON {
	return nodeJSON{NodeID: n.NodeID, WSURL: n.WSURL, Region: n.Region, Rooms: n.Rooms,
		Connections: n.Connections, Draining: n.Draining, Version: n.Version}
}

// listNodes answers GET /server/v1/nodes: the live game nodes of the
// registry.
func (s *Server) listNodes(ctx context.Context, _ *call) (int, any, error) {
	nodes, err := s.db.ListNodes(ctx)
	if err != nil {
		return 0, nil, err
	}
	out := make([]nodeJSON, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, toNodeJSON(n))
	}
	return http.StatusOK, map[string]any{"nodes": out}, nil
}

// drainNode answers POST /server/v1/nodes/{node_id}/drain: the node sends
// ERROR 10 node_draining to its players, closes its rooms and takes no new
// ones (control stops placing rooms on it).
func (s *Server) drainNode(ctx context.Context, c *call) (int, any, error) {
	id := c.r.PathValue("node_id")
	n, err := s.db.GetNode(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil, errNotFound("no live game node with that id")
	}
	if err != nil {
		return 0, nil, err
	}
	if _, err := s.command(ctx, id, store.VerbDrain, &store.DrainRequest{}); err != nil {
		return 0, nil, s.nodeError(store.VerbDrain, err)
	}
	n.Draining = true
	return http.StatusOK, map[string]any{"node": toNodeJSON(n)}, nil
}
