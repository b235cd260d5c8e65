package api

// Node is a live game node of the registry, as the server API shows it.
type Node struct {
	NodeID      string `json:"node_id"`
	WSURL       string `json:"ws_url"`
	Region      string `json:"region,omitempty"`
	Rooms       int    `json:"rooms"`
	Connections int    `json:"connections"`
	Draining    bool   `json:"draining"`
	Version     string `json:"version,omitempty"`
}

// NodeResponse is the answer of POST /server/v1/nodes/{node_id}/drain.
type NodeResponse struct {
	Node *Node `json:"node"`
}

// ListNodesResponse is the answer of GET /server/v1/nodes.
type ListNodesResponse struct {
	Nodes []Node `json:"nodes"`
}
