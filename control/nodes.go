package control

import (
	"context"
	"errors"
	"net/http"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/control/internal/httpapi"
	"github.com/switchboardgg/switchboard/store"
)

// listNodes answers GET /server/v1/nodes: the live game nodes of the
// registry.
func (s *Server) listNodes(ctx context.Context, _ *httpapi.Call) (int, any, error) {
	nodes, err := s.db.ListNodes(ctx)
	if err != nil {
		return 0, nil, err
	}
	out := make([]api.Node, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, *httpapi.ToNodeJSON(n))
	}
	return http.StatusOK, &api.ListNodesResponse{Nodes: out}, nil
}

// drainNode answers POST /server/v1/nodes/{node_id}/drain: the node sends
// ERROR 10 node_draining to its players, closes its rooms and takes no new
// ones (control stops placing rooms on it).
func (s *Server) drainNode(ctx context.Context, c *httpapi.Call) (int, any, error) {
	id := c.R.PathValue("node_id")
	n, err := s.db.GetNode(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil, httpapi.NotFound("no live game node with that id")
	}
	if err != nil {
		return 0, nil, err
	}
	if _, err := s.command(ctx, id, store.VerbDrain, &store.DrainRequest{}); err != nil {
		return 0, nil, s.nodeError(store.VerbDrain, err)
	}
	n.Draining = true
	return http.StatusOK, &api.NodeResponse{Node: httpapi.ToNodeJSON(n)}, nil
}

// command sends a command to a node, waiting Config.CommandTimeout.
func (s *Server) command(ctx context.Context, nodeID, verb string, req any) (*store.CommandReply, error) {
	return httpapi.SendCommand(ctx, s.bb, s.cfg.CommandTimeout, nodeID, verb, req)
}

// nodeError maps the error of a command to its HTTP answer.
func (s *Server) nodeError(verb string, err error) *httpapi.Error {
	return httpapi.NodeError(s.log, verb, err)
}
