package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Roles of the node registry: every kind of node registers in it.
const (
	RoleGame  = "game"  // runs rooms (package node)
	RoleRelay = "relay" // relays datagrams (the relay pillar)
	RoleHub   = "hub"   // rendezvous of peers (the P2P pillar)
)

// nodeKey is the registry key of a node: "<role>.<node_id>", so that one
// role's entries are listed without reading the others'.
func nodeKey(role, id string) string { return role + "." + id }

// validRole reports whether role is one of the Role constants.
func validRole(role string) bool {
	return role == RoleGame || role == RoleRelay || role == RoleHub
}

// PutNode writes the node's registry entry (its heartbeat), with
// UpdatedAt set to Config.Now(); n itself is not changed. An empty Role is
// RoleGame. The entry expires Config.NodeTTL after the last PutNode.
func (db *DB) PutNode(ctx context.Context, n *Node) error {
	c := *n
	if c.Role == "" {
		c.Role = RoleGame
	}
	if !validRole(c.Role) {
		return fmt.Errorf("store: put node %s: role %q: %w", c.NodeID, c.Role, ErrInvalidID)
	}
	if !validID(c.NodeID) {
		return fmt.Errorf("store: put node %q: %w", c.NodeID, ErrInvalidID)
	}
	c.UpdatedAt = db.cfg.Now().UTC()
	key := nodeKey(c.Role, c.NodeID)
	if _, err := db.nodes.Put(ctx, key, &c); err != nil {
		return storeErr("put", "node", key, err)
	}
	db.nodeCache.forget(c.Role)
	return nil
}

// GetNode returns the live entry of game node id; see [DB.GetRoleNode].
func (db *DB) GetNode(ctx context.Context, id string) (*Node, error) {
	return db.GetRoleNode(ctx, RoleGame, id)
}

// GetRoleNode returns the live entry of node id of role, or an error
// wrapping ErrNotFound when it is missing, expired, or older than
// Config.NodeTTL. An entry read less than Config.NodeCacheTTL ago is not
// read again (the registry's writes of this process are seen at once).
func (db *DB) GetRoleNode(ctx context.Context, role, id string) (*Node, error) {
	if !validRole(role) || !validID(id) {
		return nil, fmt.Errorf("store: get node %s %q: %w", role, id, ErrNotFound)
	}
	key := nodeKey(role, id)
	n, gen, ok := db.nodeCache.get(key, db.cfg.Now())
	if !ok {
		var err error
		n, _, err = db.nodes.Get(ctx, key)
		if err != nil {
			if isNotFound(storeErr("get", "node", key, err)) {
				db.nodeCache.put(key, nil, role, db.cfg.Now(), gen)
			}
			return nil, storeErr("get", "node", key, err)
		}
		db.nodeCache.put(key, n, role, db.cfg.Now(), gen)
	}
	if n == nil {
		return nil, fmt.Errorf("store: get node %s: %w", key, ErrNotFound)
	}
	if !db.live(n) {
		return nil, fmt.Errorf("store: get node %s: stale: %w", key, ErrNotFound)
	}
	c := *n
	return &c, nil
}

// DeleteNode removes the entry of game node id; see [DB.DeleteRoleNode].
func (db *DB) DeleteNode(ctx context.Context, id string) error {
	return db.DeleteRoleNode(ctx, RoleGame, id)
}

// DeleteRoleNode removes the entry of node id of role, as a node does
// when it stops. Deleting a missing entry is not an error.
func (db *DB) DeleteRoleNode(ctx context.Context, role, id string) error {
	if !validRole(role) || !validID(id) {
		return nil
	}
	key := nodeKey(role, id)
	err := db.nodes.Purge(ctx, key)
	db.nodeCache.forget(role)
	if err != nil {
		return storeErr("delete", "node", key, err)
	}
	return nil
}

// ListNodes returns the live game nodes; see [DB.ListRoleNodes].
func (db *DB) ListNodes(ctx context.Context) ([]*Node, error) {
	return db.ListRoleNodes(ctx, RoleGame)
}

// ListRoleNodes returns the live entries of role sorted by node_id: those
// the bucket's TTL has not expired and whose UpdatedAt is within
// Config.NodeTTL of Config.Now(). A list made less than
// Config.NodeCacheTTL ago is not made again.
func (db *DB) ListRoleNodes(ctx context.Context, role string) ([]*Node, error) {
	if !validRole(role) {
		return nil, fmt.Errorf("store: list nodes: role %q: %w", role, ErrInvalidID)
	}
	nodes, gen, ok := db.nodeCache.getList(role, db.cfg.Now())
	if ok {
		live := make([]*Node, 0, len(nodes))
		for _, n := range nodes {
			if db.live(n) {
				c := *n
				live = append(live, &c)
			}
		}
		return live, nil
	}
	keys, err := db.nodes.Keys(ctx, nodeKey(role, "*"))
	if err != nil {
		return nil, fmt.Errorf("store: list %s nodes: %w", role, err)
	}
	nodes = make([]*Node, 0, len(keys))
	for _, k := range keys {
		n, err := db.GetRoleNode(ctx, role, strings.TrimPrefix(k, role+"."))
		if err != nil {
			if isNotFound(err) {
				continue
			}
			return nil, err
		}
		nodes = append(nodes, n)
	}
	slices.SortFunc(nodes, func(a, b *Node) int { return strings.Compare(a.NodeID, b.NodeID) })
	cached := make([]*Node, len(nodes))
	for i, n := range nodes {
		c := *n
		cached[i] = &c
	}
	if len(cached) > 0 { // "none" is not remembered: the first node is awaited
		db.nodeCache.putList(role, cached, db.cfg.Now(), gen)
	}
	return nodes, nil
}

func (db *DB) live(n *Node) bool {
	return db.cfg.Now().Sub(n.UpdatedAt) <= db.cfg.NodeTTL
}

// maxCachedNodes bounds the registry entries a DB remembers.
const maxCachedNodes = 10_000

// nodeCache remembers registry entries read, for Config.NodeCacheTTL: a
// join reads its room's node, and a node changes its entry every few
// seconds at most.
type nodeCache struct {
	ttl time.Duration // 0: nothing is remembered

	mu      sync.Mutex
	gen     uint64                // guarded by mu; counts forget calls
	entries map[string]cachedNode // guarded by mu; by key
	lists   map[string]cachedList // guarded by mu; by role
}

type cachedList struct {
	nodes []*Node // not modified
	at    time.Time
}

// getList returns the list of role if it is fresh, and else the
// generation to hand to putList.
func (c *nodeCache) getList(role string, now time.Time) ([]*Node, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.lists[role]
	if c.ttl <= 0 || !ok || now.Sub(l.at) >= c.ttl || now.Before(l.at) {
		return nil, c.gen, false
	}
	return l.nodes, c.gen, true
}

// putList remembers the list of role, read since generation gen: not if
// this process wrote the registry since (it may not be in the list).
func (c *nodeCache) putList(role string, nodes []*Node, now time.Time, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ttl <= 0 || gen != c.gen {
		return
	}
	if c.lists == nil {
		c.lists = make(map[string]cachedList)
	}
	c.lists[role] = cachedList{nodes: nodes, at: now}
}

type cachedNode struct {
	node *Node // nil: not found; not modified
	role string
	at   time.Time
}

// get returns the entry of key if it is fresh, and else the generation
// to hand to put.
func (c *nodeCache) get(key string, now time.Time) (*Node, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if c.ttl <= 0 || !ok || now.Sub(e.at) >= c.ttl || now.Before(e.at) {
		return nil, c.gen, false
	}
	return e.node, c.gen, true
}

// put remembers the entry of key, read since generation gen: not if this
// process wrote the registry since.
func (c *nodeCache) put(key string, n *Node, role string, now time.Time, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ttl <= 0 || gen != c.gen {
		return
	}
	if c.entries == nil {
		c.entries = make(map[string]cachedNode)
	}
	if _, ok := c.entries[key]; !ok && len(c.entries) >= maxCachedNodes {
		for k := range c.entries { // one, at random
			delete(c.entries, k)
			break
		}
	}
	c.entries[key] = cachedNode{node: n, role: role, at: now}
}

// forget drops the entries of role, after this process wrote one.
func (c *nodeCache) forget(role string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.lists, role)
	for k, e := range c.entries {
		if e.role == role {
			delete(c.entries, k)
		}
	}
}
