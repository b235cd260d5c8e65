package relayapi

import (
	"context"
	"encoding/hex"
	"errors"
	"net/http"
	"time"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/control/internal/httpapi"
	"github.com/switchboardgg/switchboard/store"
)

// getAllocation: GET /server/v1/relay/allocations/{allocation_id}, the
// allocation's record and, from its relay node over NATS, its counters.
func (s *Server) getAllocation(ctx context.Context, c *httpapi.Call) (int, any, error) {
	raw, ok := parseUUID(c.R.PathValue("allocation_id"))
	if !ok {
		return 0, nil, httpapi.Invalid("allocation_id must be a UUID")
	}
	id := hex.EncodeToString(raw[:])
	rec, err := s.db.GetRelayAllocation(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil, httpapi.NotFound("no such relay allocation (never made, released or expired)")
	}
	if err != nil {
		return 0, nil, err
	}
	out := api.RelayAllocationStatus{AllocationID: uuidString(raw), NodeID: rec.NodeID, Region: rec.Region,
		Host: rec.HostAllocationID == "", HostAllocationID: hexUUID(rec.HostAllocationID),
		CreatedAt: api.NewTime(rec.CreatedAt), ExpiresAt: api.NewTime(rec.ExpiresAt)}
	unavailable := httpapi.Unavailable("the allocation's relay node did not answer", api.ReasonRelayNodeUnavailable)
	if s.cfg.Backbone == nil {
		return 0, nil, unavailable
	}
	ctx, cancel := context.WithTimeout(ctx, s.commandTimeout())
	defer cancel()
	st, err := store.RelayAllocationStats(ctx, s.cfg.Backbone, rec.NodeID, id)
	if errors.Is(err, store.ErrNodeUnavailable) {
		return 0, nil, unavailable
	}
	if err != nil {
		return 0, nil, err
	}
	if st.Live {
		bound := api.NewTime(st.BoundAt)
		out.Live, out.Carrier, out.Peers, out.BoundAt = true, st.Carrier, st.Peers, &bound
		out.AgeSeconds = max(c.Now.Sub(st.BoundAt).Seconds(), 0)
		out.PacketsIn, out.BytesIn, out.PacketsOut, out.BytesOut = st.PacketsIn, st.BytesIn, st.PacketsOut, st.BytesOut
	}
	return http.StatusOK, &api.RelayAllocationResponse{Allocation: out}, nil
}

// hexUUID is the UUID form of a store id (32 hex); empty stays empty.
func hexUUID(h string) string {
	b, err := hex.DecodeString(h)
	if err != nil || len(b) != 16 {
		return h
	}
	return uuidString([16]byte(b))
}

// drainNode: POST /server/v1/relay/nodes/{node_id}/drain. The node marks
// its registry entry draining (no new allocations; joiners of its hosts
// still go to it) and keeps relaying for its live allocations.
func (s *Server) drainNode(ctx context.Context, c *httpapi.Call) (int, any, error) {
	id := c.R.PathValue("node_id")
	n, err := s.db.GetRoleNode(ctx, store.RoleRelay, id)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalidID) {
		return 0, nil, httpapi.NotFound("no live relay node with that id")
	}
	if err != nil {
		return 0, nil, err
	}
	unavailable := httpapi.Unavailable("the relay node did not answer", api.ReasonRelayNodeUnavailable)
	if s.cfg.Backbone == nil {
		return 0, nil, unavailable
	}
	ctx, cancel := context.WithTimeout(ctx, s.commandTimeout())
	defer cancel()
	err = store.RelayDrain(ctx, s.cfg.Backbone, id)
	var ce *store.CommandError
	switch {
	case errors.As(err, &ce):
		return 0, nil, httpapi.Unavailable(ce.Message, api.ReasonRelayNodeUnavailable)
	case errors.Is(err, store.ErrNodeUnavailable):
		return 0, nil, unavailable
	case err != nil:
		return 0, nil, err
	}
	n.Draining = true
	out := relayNodeJSON(n)
	return http.StatusOK, &api.RelayNodeResponse{Node: out}, nil
}

func (s *Server) commandTimeout() time.Duration {
	if s.cfg.CommandTimeout > 0 {
		return s.cfg.CommandTimeout
	}
	return store.DefaultCommandTimeout
}
