package backend

import (
	"context"
	"net/http"
	"net/url"

	"github.com/switchboardgg/switchboard/api"
)

// RelayKey is a relay API key of a project; Secret is set by
// CreateRelayKey only.
type RelayKey = api.RelayKey

// CreateRelayKey creates a relay API key for project (empty: "default").
// Its secret, the Bearer a game sends to /relay/v1, is in the answer only.
func (c *Client) CreateRelayKey(ctx context.Context, name, project string) (*RelayKey, error) {
	var resp api.RelayKeyResponse
	if err := c.do(ctx, http.MethodPost, "/server/v1/relay/keys", api.RelayKeyRequest{Name: name, Project: project}, &resp); err != nil {
		return nil, err
	}
	return &resp.Key, nil
}

// ListRelayKeys returns the relay API keys, without their secrets.
func (c *Client) ListRelayKeys(ctx context.Context) ([]RelayKey, error) {
	var resp api.ListRelayKeysResponse
	if err := c.do(ctx, http.MethodGet, "/server/v1/relay/keys", nil, &resp); err != nil {
		return nil, err
	}
	return resp.Keys, nil
}

// RevokeRelayKey revokes the relay API key keyID: requests with it fail
// from then on.
func (c *Client) RevokeRelayKey(ctx context.Context, keyID string) error {
	return c.do(ctx, http.MethodDelete, "/server/v1/relay/keys/"+url.PathEscape(keyID), nil, nil)
}

// RelayNode is a live relay node.
type RelayNode = api.RelayNode

// ListRelayNodes returns the live relay nodes of the registry.
func (c *Client) ListRelayNodes(ctx context.Context) ([]RelayNode, error) {
	var resp api.ListRelayNodesResponse
	if err := c.do(ctx, http.MethodGet, "/server/v1/relay/nodes", nil, &resp); err != nil {
		return nil, err
	}
	return resp.Nodes, nil
}

// DrainRelayNode drains relay node nodeID: control makes no new
// allocation on it; it keeps serving its live ones. It returns the node
// as marked.
func (c *Client) DrainRelayNode(ctx context.Context, nodeID string) (*RelayNode, error) {
	var resp api.RelayNodeResponse
	if err := c.do(ctx, http.MethodPost, "/server/v1/relay/nodes/"+url.PathEscape(nodeID)+"/drain", nil, &resp); err != nil {
		return nil, err
	}
	return &resp.Node, nil
}
