package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/backbone"
)

// P2P records: networks of the P2P pillar and their join codes.
//
//	bucket               key                        value         TTL
//	<prefix>_p2pnets     network name               P2PNetwork    Config.P2PNetworkTTL (30 days)
//	<prefix>_p2pcodes    hex SHA-256 of the code    P2PJoinCode   Config.P2PNetworkTTL
//
// A network's record is written when it is made (by its first join or by
// the server API) and when it changes; a join rewrites it at most once per
// P2PTouchInterval, so that a network in use never expires and one
// nobody joined for P2PNetworkTTL is forgotten (its name can then be made
// again, on any hub).

// Defaults of the P2P records.
const (
	// DefaultP2PNetworkTTL is how long a network record lives after its
	// last write.
	DefaultP2PNetworkTTL = 30 * 24 * time.Hour
	// P2PTouchInterval is how often a join rewrites its network's record
	// to keep it alive.
	P2PTouchInterval = time.Hour
)

// P2PNetwork is a network of peers: which hub runs it and who may join.
type P2PNetwork struct {
	Name  string `json:"name"`
	HubID string `json:"hub_id"` // the hub node the network lives on
	// JoinCodeHash is the hex SHA-256 of the upper-case join code; empty:
	// no code is needed.
	JoinCodeHash string `json:"join_code_hash,omitempty"`
	// AllowList, sorted, is the only usernames that may join; empty: any.
	AllowList []string `json:"allow_list,omitempty"`
	// Bans, sorted, are the usernames that may not join.
	Bans      []string  `json:"bans,omitempty"`
	MaxPeers  int       `json:"max_peers"`
	CreatedBy string    `json:"created_by"` // "server", or the username of the first join
	CreatedAt time.Time `json:"created_at"`
	TouchedAt time.Time `json:"touched_at"` // last write by a join
}

// Clone returns a deep copy of n.
func (n *P2PNetwork) Clone() *P2PNetwork {
	c := *n
	c.AllowList = slices.Clone(n.AllowList)
	c.Bans = slices.Clone(n.Bans)
	return &c
}

// Allowed reports whether username may join by the allow list.
func (n *P2PNetwork) Allowed(username string) bool {
	if len(n.AllowList) == 0 {
		return true
	}
	_, ok := slices.BinarySearch(n.AllowList, username)
	return ok
}

// Banned reports whether username is banned from the network.
func (n *P2PNetwork) Banned(username string) bool {
	_, ok := slices.BinarySearch(n.Bans, username)
	return ok
}

// P2PJoinCode maps a join code to its network.
type P2PJoinCode struct {
	Network string `json:"network"`
}

// p2pBuckets are the KV buckets of the P2P records.
type p2pBuckets struct {
	nets  *backbone.KV[P2PNetwork]
	codes *backbone.KV[P2PJoinCode]
}

func normalizeNetwork(n *P2PNetwork) {
	slices.Sort(n.AllowList)
	n.AllowList = slices.Compact(n.AllowList)
	slices.Sort(n.Bans)
	n.Bans = slices.Compact(n.Bans)
}

// CreateP2PNetwork stores n under n.Name, and its join code, if codeHash
// is not empty, under codeHash. It returns an error wrapping ErrExists if
// the name (or, very unlikely, the code) is taken.
func (db *DB) CreateP2PNetwork(ctx context.Context, n *P2PNetwork) error {
	c := n.Clone()
	normalizeNetwork(c)
	if c.JoinCodeHash != "" {
		if err := create(ctx, db.p2p.codes, "p2p join code", c.JoinCodeHash, &P2PJoinCode{Network: c.Name}); err != nil {
			return err
		}
	}
	if err := create(ctx, db.p2p.nets, "p2p network", c.Name, c); err != nil {
		if c.JoinCodeHash != "" {
			_ = purge(ctx, db.p2p.codes, "p2p join code", c.JoinCodeHash)
		}
		return err
	}
	return nil
}

// GetP2PNetwork returns the network name, or an error wrapping
// ErrNotFound.
func (db *DB) GetP2PNetwork(ctx context.Context, name string) (*P2PNetwork, error) {
	n, _, err := get(ctx, db.p2p.nets, "p2p network", name)
	if err != nil {
		return nil, err
	}
	return n, nil
}

// UpdateP2PNetwork reads network name, applies fn and writes it back with
// compare-and-set, retrying on conflict (fn may run several times). An
// error from fn is returned as is; a missing network is ErrNotFound.
func (db *DB) UpdateP2PNetwork(ctx context.Context, name string, fn func(*P2PNetwork) error) (*P2PNetwork, error) {
	return update(ctx, db.p2p.nets, "p2p network", name, func(n *P2PNetwork) error {
		if err := fn(n); err != nil {
			return err
		}
		normalizeNetwork(n)
		return nil
	})
}

// DeleteP2PNetwork removes network name and its join code. Deleting a
// missing network is not an error.
func (db *DB) DeleteP2PNetwork(ctx context.Context, name string) error {
	n, err := db.GetP2PNetwork(ctx, name)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if n.JoinCodeHash != "" {
		if err := purge(ctx, db.p2p.codes, "p2p join code", n.JoinCodeHash); err != nil {
			return err
		}
	}
	return purge(ctx, db.p2p.nets, "p2p network", name)
}

// P2PNetworkByCode returns the name of the network whose join code hashes
// to codeHash, or an error wrapping ErrNotFound.
func (db *DB) P2PNetworkByCode(ctx context.Context, codeHash string) (string, error) {
	c, _, err := get(ctx, db.p2p.codes, "p2p join code", codeHash)
	if err != nil {
		return "", err
	}
	return c.Network, nil
}

// ListP2PNetworks returns up to limit networks (DefaultListLimit for 0,
// at most MaxListLimit) whose names sort after the name after, sorted by
// name, and whether more follow.
func (db *DB) ListP2PNetworks(ctx context.Context, after string, limit int) ([]*P2PNetwork, bool, error) {
	if limit <= 0 {
		limit = DefaultListLimit
	}
	limit = min(limit, MaxListLimit)
	keys, err := db.p2p.nets.Keys(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("store: list p2p networks: %w", err)
	}
	slices.Sort(keys)
	i, _ := slices.BinarySearch(keys, after)
	if i < len(keys) && keys[i] == after {
		i++
	}
	keys = keys[i:]
	out := make([]*P2PNetwork, 0, min(limit, len(keys)))
	for len(keys) > 0 && len(out) < limit {
		n, err := db.GetP2PNetwork(ctx, keys[0])
		keys = keys[1:]
		if isNotFound(err) {
			continue // deleted since listed
		}
		if err != nil {
			return nil, false, err
		}
		out = append(out, n)
	}
	return out, len(keys) > 0, nil
}

// Commands from control to a hub, over NATS request/reply on
// [HubCommandSubject]: the server API's peer list, kick and ban.
const (
	// HubVerbPeers lists the peers of a network: [HubPeersRequest].
	HubVerbPeers = "peers"
	// HubVerbKick removes one peer, or every peer of a user (a ban):
	// [HubKickRequest].
	HubVerbKick = "kick"
)

// HubCommandSubject returns the NATS subject of a command to a hub:
// "sb.hub.<hub_id>.<verb>".
func HubCommandSubject(hubID, verb string) string {
	return "sb.hub." + hubID + "." + verb
}

// HubPeersRequest asks a hub for the peers of a network.
type HubPeersRequest struct {
	Network string `json:"network"`
}

// HubKickRequest asks a hub to remove PeerID, or, when PeerID is empty,
// every peer of Username, from Network: ERROR kicked (closing), and the
// peer id is not kept for a resume. Ban says the user is banned now, so a
// hub that caches a network's bans adds it.
type HubKickRequest struct {
	Network  string `json:"network"`
	PeerID   string `json:"peer_id,omitempty"`
	Username string `json:"username,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Ban      bool   `json:"ban,omitempty"`
}

// HubPeer is one peer as a hub reports it.
type HubPeer struct {
	PeerID   string          `json:"peer_id"`
	Username string          `json:"username"`
	UDP      *api.P2PPeerUDP `json:"udp,omitempty"` // nil when the hub serves no UDP
}

// HubCommandReply is a hub's answer: {"ok": true, ...} with the peers of
// HubVerbPeers or the number kicked by HubVerbKick, or {"ok": false,
// "error": {...}}.
type HubCommandReply struct {
	OK     bool          `json:"ok"`
	Peers  []HubPeer     `json:"peers,omitempty"`
	Kicked int           `json:"kicked,omitempty"`
	Error  *CommandError `json:"error,omitempty"`
}

// SendHubCommand sends a command to hub hubID and waits for its reply,
// DefaultCommandTimeout at most when ctx has no deadline. Its errors are
// those of [SendCommand]: the hub's *CommandError, or ErrNodeUnavailable
// when no hub serves the subject or it did not answer in time.
func SendHubCommand(ctx context.Context, conn *backbone.Conn, hubID, verb string, req any) (*HubCommandReply, error) {
	if !validID(hubID) {
		return nil, fmt.Errorf("store: command %s to hub %q: %w", verb, hubID, ErrInvalidID)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultCommandTimeout)
		defer cancel()
	}
	var reply HubCommandReply
	if err := conn.Request(ctx, HubCommandSubject(hubID, verb), req, &reply); err != nil {
		if errors.Is(err, backbone.ErrNoResponders) || errors.Is(err, backbone.ErrTimeout) {
			return nil, fmt.Errorf("store: command %s to hub %s: %w: %w", verb, hubID, ErrNodeUnavailable, err)
		}
		return nil, fmt.Errorf("store: command %s to hub %s: %w", verb, hubID, err)
	}
	if reply.Error != nil {
		reply.OK = false
		return &reply, reply.Error
	}
	return &reply, nil
}

// Keys of a hub's registry entry's Addresses.
const (
	// HubAddressTLS holds host:port of the hub's TLS listener (UDP is on
	// the same port number).
	HubAddressTLS = "tls"
	// HubAddressCertSHA256 holds the SHA-256 fingerprint of the
	// certificate the TLS listener serves, for clients to pin.
	HubAddressCertSHA256 = "tls_cert_sha256"
)

// HubCommandHandler executes the commands sent to one hub; the hub role
// implements it. Each method runs in a goroutine of its own, as those of
// [CommandHandler] do, and returns the reply (nil means {"ok": true}) or
// an error (a *CommandError is sent as is).
type HubCommandHandler interface {
	Peers(ctx context.Context, req *HubPeersRequest) (*HubCommandReply, error)
	Kick(ctx context.Context, req *HubKickRequest) (*HubCommandReply, error)
}

// ServeHubCommands subscribes h to the command subjects of hub hubID and
// serves them until stop is called. stop unsubscribes and waits for the
// commands still running; it is idempotent.
func ServeHubCommands(conn *backbone.Conn, hubID string, h HubCommandHandler) (stop func() error, err error) {
	if !validID(hubID) {
		return nil, fmt.Errorf("store: serve commands of hub %q: %w", hubID, ErrInvalidID)
	}
	handlers := []verbHandler{
		{HubVerbPeers, serveHubVerb(h.Peers)},
		{HubVerbKick, serveHubVerb(h.Kick)},
	}
	return handleVerbs(conn, "hub", hubID, HubCommandSubject, handlers)
}

// serveHubVerb adapts one HubCommandHandler method to a backbone handler.
func serveHubVerb[T any](fn func(context.Context, *T) (*HubCommandReply, error)) backbone.HandlerFunc {
	return func(ctx context.Context, data []byte) (any, error) {
		req := new(T)
		if err := json.Unmarshal(data, req); err != nil {
			return &HubCommandReply{Error: &CommandError{Code: CodeInvalidArgument, Message: "malformed command"}}, nil
		}
		reply, err := fn(ctx, req)
		if err != nil {
			var ce *CommandError
			if errors.As(err, &ce) {
				return &HubCommandReply{Error: ce}, nil
			}
			return nil, err // logged by backbone, sent as internal
		}
		if reply == nil {
			return &HubCommandReply{OK: true}, nil
		}
		out := *reply
		out.OK = out.Error == nil
		return &out, nil
	}
}
