package p2papi

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/control/internal/httpapi"
	"github.com/switchboardgg/switchboard/store"
)

// hubUnavailable is the 503 of a join or command that has no hub.
func hubUnavailable(msg string) *httpapi.Error {
	return httpapi.Unavailable(msg, api.ReasonHubUnavailable)
}

// usable reports whether a hub takes new peers.
func usable(n *store.Node) bool {
	return !n.Draining && n.Addresses[store.HubAddressTLS] != ""
}

// pickHub returns the least loaded live hub: the lowest Load, then the
// fewest connections, then the lowest node id.
func (s *Server) pickHub(ctx context.Context) (*store.Node, error) {
	hubs, err := s.db.ListRoleNodes(ctx, store.RoleHub)
	if err != nil {
		return nil, err
	}
	hubs = slices.DeleteFunc(hubs, func(n *store.Node) bool { return !usable(n) })
	if len(hubs) == 0 {
		return nil, hubUnavailable("no hub is running")
	}
	return slices.MinFunc(hubs, func(a, b *store.Node) int {
		return cmp.Or(cmp.Compare(a.Load, b.Load), cmp.Compare(a.Connections, b.Connections), cmp.Compare(a.NodeID, b.NodeID))
	}), nil
}

// networkHub returns the live hub of network n. When its hub has left the
// registry or drains, it moves the network to the least loaded hub (its
// peers there are being sent away) and returns the record as written.
func (s *Server) networkHub(ctx context.Context, n *store.P2PNetwork, now time.Time) (*store.Node, *store.P2PNetwork, error) {
	hub, err := s.db.GetRoleNode(ctx, store.RoleHub, n.HubID)
	if err == nil && usable(hub) {
		return hub, n, nil
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, nil, err
	}
	if hub, err = s.pickHub(ctx); err != nil {
		return nil, nil, err
	}
	old := n.HubID
	moved, err := s.db.UpdateP2PNetwork(ctx, n.Name, func(r *store.P2PNetwork) error {
		if r.HubID == old { // else another join moved it first
			r.HubID = hub.NodeID
			r.TouchedAt = now.UTC()
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if moved.HubID != hub.NodeID { // another join moved it: once is enough
		other, err := s.db.GetRoleNode(ctx, store.RoleHub, moved.HubID)
		if err != nil || !usable(other) {
			return nil, nil, hubUnavailable("the network's hub is unavailable")
		}
		return other, moved, nil
	}
	s.log.Info("p2p network moved to another hub", "network", n.Name, "from", old, "to", hub.NodeID)
	return hub, moved, nil
}

// hubCommand sends a command to the hub of network n, waiting
// Config.CommandTimeout, and maps its errors to HTTP answers.
func (s *Server) hubCommand(ctx context.Context, n *store.P2PNetwork, verb string, req any) (*store.HubCommandReply, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CommandTimeout)
	defer cancel()
	reply, err := store.SendHubCommand(ctx, s.bb, n.HubID, verb, req)
	if err == nil {
		return reply, nil
	}
	var ce *store.CommandError
	if errors.As(err, &ce) {
		e := httpapi.NodeError(s.log, verb, err)
		if e.Code == api.CodeInternal {
			e.Message = "the hub failed"
		}
		return nil, e
	}
	if !errors.Is(err, store.ErrNodeUnavailable) {
		s.log.Warn("hub command failed", "verb", verb, "hub", n.HubID, "err", err)
	}
	return nil, hubUnavailable("the network's hub is unavailable")
}
