package relayapi

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/control/internal/httpapi"
	"github.com/switchboardgg/switchboard/store"
)

// Limits of relay API keys.
const (
	// MaxKeyName is the longest name of an API key, in bytes.
	MaxKeyName = 64
	// MaxProject is the longest project of an API key, in bytes.
	MaxProject = 64
)

// Routes returns the server API's relay routes (API keys, relay nodes), for control's
// mux: they speak the server API's JSON and errors, not Unity's.
func (s *Server) Routes() []httpapi.Route {
	const keys = "/server/v1/relay/keys"
	return []httpapi.Route{
		{Method: "POST", Path: keys, Auth: httpapi.AuthServer, H: s.createKey},
		{Method: "GET", Path: keys, Auth: httpapi.AuthServer, H: s.listKeys},
		{Method: "DELETE", Path: keys + "/{key_id}", Auth: httpapi.AuthServer, H: s.revokeKey},
		{Method: "GET", Path: "/server/v1/relay/nodes", Auth: httpapi.AuthServer, H: s.listNodes},
		{Method: "GET", Path: "/server/v1/relay/allocations/{allocation_id}", Auth: httpapi.AuthServer, H: s.getAllocation},
		{Method: "POST", Path: "/server/v1/relay/nodes/{node_id}/drain", Auth: httpapi.AuthServer, H: s.drainNode},
	}
}

// listNodes: GET /server/v1/relay/nodes, the live relay nodes.
func (s *Server) listNodes(ctx context.Context, _ *httpapi.Call) (int, any, error) {
	nodes, err := s.db.ListRoleNodes(ctx, store.RoleRelay)
	if err != nil {
		return 0, nil, err
	}
	out := api.ListRelayNodesResponse{Nodes: make([]api.RelayNode, 0, len(nodes))}
	for _, n := range nodes {
		out.Nodes = append(out.Nodes, relayNodeJSON(n))
	}
	return http.StatusOK, &out, nil
}

func relayNodeJSON(n *store.Node) api.RelayNode {
	addrs := n.Addresses
	if addrs == nil {
		addrs = map[string]string{}
	}
	return api.RelayNode{NodeID: n.NodeID, Region: n.Region, Addresses: addrs, Load: n.Load,
		Draining: n.Draining, BootEpoch: n.BootEpoch, StartedAt: api.NewTime(n.StartedAt), Version: n.Version}
}

func validName(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// createKey: POST /server/v1/relay/keys. The secret is in the answer
// only.
func (s *Server) createKey(ctx context.Context, c *httpapi.Call) (int, any, error) {
	var req api.RelayKeyRequest
	if err := httpapi.DecodeBody(c.W, c.R, s.cfg.MaxBodyBytes, &req); err != nil {
		return 0, nil, err
	}
	if req.Project == "" {
		req.Project = DefaultProject
	}
	if !validName(req.Name, MaxKeyName) {
		return 0, nil, httpapi.Invalid("name must be 1 to %d characters of A-Z a-z 0-9 _ . -", MaxKeyName)
	}
	if !validName(req.Project, MaxProject) {
		return 0, nil, httpapi.Invalid("project must be 1 to %d characters of A-Z a-z 0-9 _ . -", MaxProject)
	}
	var raw [32]byte
	if _, err := io.ReadFull(s.cfg.Rand, raw[:]); err != nil {
		return 0, nil, fmt.Errorf("relayapi: API key: %w", err)
	}
	secret := APIKeyPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	id, hash := apiKeyID(secret)
	k := &store.RelayAPIKey{KeyID: id, Name: req.Name, Project: req.Project, SecretHash: hash, CreatedAt: c.Now.UTC()}
	if err := s.db.CreateRelayAPIKey(ctx, k); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return 0, nil, httpapi.Conflict(fmt.Sprintf("at most %d relay API keys", store.MaxRelayKeys), "")
		}
		return 0, nil, err
	}
	out := keyJSON(k)
	out.Secret = secret
	return http.StatusCreated, &api.RelayKeyResponse{Key: out}, nil
}

func keyJSON(k *store.RelayAPIKey) api.RelayKey {
	return api.RelayKey{KeyID: k.KeyID, Name: k.Name, Project: k.Project, CreatedAt: api.NewTime(k.CreatedAt)}
}

// listKeys: GET /server/v1/relay/keys, without secrets.
func (s *Server) listKeys(ctx context.Context, _ *httpapi.Call) (int, any, error) {
	keys, err := s.db.ListRelayAPIKeys(ctx)
	if err != nil {
		return 0, nil, err
	}
	out := api.ListRelayKeysResponse{Keys: make([]api.RelayKey, 0, len(keys))}
	for _, k := range keys {
		out.Keys = append(out.Keys, keyJSON(k))
	}
	return http.StatusOK, &out, nil
}

// revokeKey: DELETE /server/v1/relay/keys/{key_id}. Requests with the key
// fail from then on; allocations made with it live on.
func (s *Server) revokeKey(ctx context.Context, c *httpapi.Call) (int, any, error) {
	err := s.db.DeleteRelayAPIKey(ctx, c.R.PathValue("key_id"))
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil, httpapi.NotFound("no such relay API key")
	}
	if err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}
