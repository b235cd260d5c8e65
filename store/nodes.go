package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// PutNode writes the node's registry entry (its heartbeat), with
// UpdatedAt set to Config.Now(); n itself is not changed. The entry
// expires Config.NodeTTL after the last PutNode.
func (db *DB) PutNode(ctx context.Context, n *Node) error {
	c := *n
	c.UpdatedAt = db.cfg.Now().UTC()
	return put(ctx, db.nodes, "node", c.NodeID, &c)
}

// GetNode returns the live entry of node id, or an error wrapping
// ErrNotFound when it is missing, expired, or older than Config.NodeTTL.
func (db *DB) GetNode(ctx context.Context, id string) (*Node, error) {
	n, _, err := get[Node](ctx, db.nodes, "node", id)
	if err != nil {
		return nil, err
	}
	if !db.live(n) {
		return nil, fmt.Errorf("store: get node %s: stale: %w", id, ErrNotFound)
	}
	return n, nil
}

// DeleteNode removes the entry of node id, as a node does when it stops.
// Deleting a missing entry is not an error.
func (db *DB) DeleteNode(ctx context.Context, id string) error {
	return purge(ctx, db.nodes, "node", id)
}

// ListNodes returns the live node entries sorted by node_id: those the
// bucket's TTL has not expired and whose UpdatedAt is within
// Config.NodeTTL of Config.Now().
func (db *DB) ListNodes(ctx context.Context) ([]*Node, error) {
	keys, err := db.nodes.Keys(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: list nodes: %w", err)
	}
	nodes := make([]*Node, 0, len(keys))
	for _, k := range keys {
		n, err := db.GetNode(ctx, k)
		if err != nil {
			if isNotFound(err) {
				continue
			}
			return nil, err
		}
		nodes = append(nodes, n)
	}
	slices.SortFunc(nodes, func(a, b *Node) int { return strings.Compare(a.NodeID, b.NodeID) })
	return nodes, nil
}

func (db *DB) live(n *Node) bool {
	return db.cfg.Now().Sub(n.UpdatedAt) <= db.cfg.NodeTTL
}
