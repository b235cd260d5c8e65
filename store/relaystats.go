package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/switchboardgg/switchboard/backbone"
)

// Relay command verbs: control asks the relay node that holds an
// allocation for its counters ([RelayAllocationStats]), and tells a relay
// node to drain ([RelayDrain]).
const (
	VerbRelayAllocation = "relay_allocation"
	VerbRelayDrain      = "relay_drain"
)

// RelayStatsRequest asks a relay node for one allocation's counters.
type RelayStatsRequest struct {
	AllocationID string `json:"allocation_id"` // 32 hex
}

// RelayStats are one allocation's counters as its relay node reports
// them. Live is false when the node has no such allocation (not bound
// yet, or released); the other fields are then zero.
type RelayStats struct {
	Live       bool      `json:"live"`
	Host       bool      `json:"host,omitempty"`
	Carrier    string    `json:"carrier,omitempty"` // "udp" or "ws"
	Peers      int       `json:"peers"`
	BoundAt    time.Time `json:"bound_at,omitzero"`
	PacketsIn  uint64    `json:"packets_in"`
	BytesIn    uint64    `json:"bytes_in"`
	PacketsOut uint64    `json:"packets_out"`
	BytesOut   uint64    `json:"bytes_out"`
}

// RelayAllocationStats asks relay node nodeID for the counters of
// allocation id (32 hex), DefaultCommandTimeout at most when ctx has no
// deadline. When the node does not answer, the error wraps
// ErrNodeUnavailable.
func RelayAllocationStats(ctx context.Context, conn *backbone.Conn, nodeID, id string) (*RelayStats, error) {
	if !validID(nodeID) {
		return nil, fmt.Errorf("store: relay stats from node %q: %w", nodeID, ErrInvalidID)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultCommandTimeout)
		defer cancel()
	}
	var st RelayStats
	if err := conn.Request(ctx, CommandSubject(nodeID, VerbRelayAllocation), &RelayStatsRequest{AllocationID: id}, &st); err != nil {
		if errors.Is(err, backbone.ErrNoResponders) || errors.Is(err, backbone.ErrTimeout) {
			return nil, fmt.Errorf("store: relay stats from node %s: %w: %w", nodeID, ErrNodeUnavailable, err)
		}
		return nil, fmt.Errorf("store: relay stats from node %s: %w", nodeID, err)
	}
	return &st, nil
}

// RelayDrain tells relay node nodeID to drain: it marks its registry
// entry draining, so that control makes no new allocation on it, and
// keeps serving its live allocations. When the node does not answer, the
// error wraps ErrNodeUnavailable; a node that failed to write its entry
// answers a *CommandError.
func RelayDrain(ctx context.Context, conn *backbone.Conn, nodeID string) error {
	_, err := SendCommand(ctx, conn, nodeID, VerbRelayDrain, &DrainRequest{})
	return err
}

// RelayHandler executes the commands sent to one relay node.
type RelayHandler struct {
	// Stats returns the counters of allocation id (32 hex).
	Stats func(id string) RelayStats
	// Drain marks the node draining in the registry.
	Drain func(ctx context.Context) error
}

// ServeRelayCommands answers [RelayAllocationStats] and [RelayDrain] for
// relay node nodeID with h until stop is called; stop is idempotent and
// waits for the requests still running.
func ServeRelayCommands(conn *backbone.Conn, nodeID string, h RelayHandler) (stop func() error, err error) {
	if !validID(nodeID) {
		return nil, fmt.Errorf("store: serve relay commands of node %q: %w", nodeID, ErrInvalidID)
	}
	return handleVerbs(conn, "node", nodeID, CommandSubject, []verbHandler{
		{VerbRelayAllocation, func(_ context.Context, data []byte) (any, error) {
			var req RelayStatsRequest
			if err := json.Unmarshal(data, &req); err != nil {
				return nil, fmt.Errorf("store: relay stats request: %w", err)
			}
			st := h.Stats(req.AllocationID)
			return &st, nil
		}},
		{VerbRelayDrain, serveVerb(func(ctx context.Context, _ *DrainRequest) (*CommandReply, error) {
			if err := h.Drain(ctx); err != nil {
				return nil, &CommandError{Code: CodeUnavailable, Message: "the relay node could not mark itself draining"}
			}
			return nil, nil
		})},
	})
}
