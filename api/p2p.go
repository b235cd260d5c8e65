package api

import "time"

// Limits and defaults of the P2P API, /p2p/v1 (docs/api.md, "P2P").
const (
	// MaxNetworkNameLen bounds a network name: 1–64 of A-Z a-z 0-9 _ -.
	MaxNetworkNameLen = 64
	// DefaultMaxPeers is a network's peer cap when nobody set one.
	DefaultMaxPeers = 256
	// MaxMaxPeers caps max_peers: a peer set always fits one PEER_SET
	// of the wire (docs/protocol/p2p.md §16).
	MaxMaxPeers = 4096
	// JoinCodeLen is the length of a network's join code, from
	// JoinCodeAlphabet; codes are case-insensitive.
	JoinCodeLen = 10
	// JoinCodeAlphabet is the alphabet of join codes: no vowels, no
	// look-alikes.
	JoinCodeAlphabet = "6789BCDFGHJKLMNPQRTW"
	// MaxAllowListLen bounds a network's allow_list, and MaxBansLen its
	// banned usernames.
	MaxAllowListLen = 256
	MaxBansLen      = 256
	// HubTicketTTL is the lifetime of a hub ticket: it is used once, at
	// once, to connect.
	HubTicketTTL = 60 * time.Second
	// MaxPeerIDLen bounds a peer id: <username>~<random>.
	MaxPeerIDLen = 96
)

// Network access modes: P2PNetwork.Access.
const (
	AccessOpenNetwork = "open"      // any authenticated user
	AccessJoinCode    = "join_code" // the join code is required
	AccessAllowList   = "allow_list"
)

// Reasons of the P2P API's errors (error.details.reason).
const (
	// ReasonNetworkFull (409, join): the network has max_peers peers.
	ReasonNetworkFull = "network_full"
	// ReasonJoinCodeRequired (403, join): the network needs its join code
	// and the request has none or another.
	ReasonJoinCodeRequired = "join_code_required"
	// ReasonNotAllowed (403, join): the user is not on the allow list.
	ReasonNotAllowed = "not_allowed"
	// ReasonBanned (403, join): the user is banned from the network.
	ReasonBanned = "banned"
	// ReasonNetworkExists (409, create): the name is taken.
	ReasonNetworkExists = "network_exists"
	// ReasonHubUnavailable (503): no hub runs, or the network's hub did
	// not answer a command.
	ReasonHubUnavailable = "hub_unavailable"
)

// P2PJoinRequest is the body of POST /p2p/v1/join: a network by name,
// by join code, or both.
type P2PJoinRequest struct {
	Network  string `json:"network,omitempty"`
	JoinCode string `json:"join_code,omitempty"`
}

// P2PHub says where a network's hub listens.
type P2PHub struct {
	NodeID string `json:"node_id"`
	// Address is host:port of TLS over TCP; UDP is on the same port.
	Address string `json:"address"`
	// CertSHA256 is the hex SHA-256 of the hub certificate's DER, to
	// pin when the certificate is not signed by a CA the client trusts.
	CertSHA256 string `json:"cert_sha256"`
}

// P2PJoinResponse is the answer of join: the hub, this connection's peer
// id, and a hub ticket for HELLO.
type P2PJoinResponse struct {
	Network   string `json:"network"`
	PeerID    string `json:"peer_id"`
	Hub       P2PHub `json:"hub"`
	Ticket    string `json:"ticket"` // secret, HubTicketTTL
	ExpiresAt Time   `json:"expires_at"`
}

// P2PCreateNetworkRequest is the body of POST /p2p/v1/networks (server
// API): a network with its access rules, made before anyone joins.
type P2PCreateNetworkRequest struct {
	Network string `json:"network"`
	// RequireJoinCode makes the API generate a join code, returned once
	// in the answer; joining then needs it.
	RequireJoinCode bool `json:"require_join_code,omitempty"`
	// AllowList, when not empty, is the only usernames that may join.
	AllowList []string `json:"allow_list,omitempty"`
	// MaxPeers caps the peers; 0 means DefaultMaxPeers.
	MaxPeers int `json:"max_peers,omitempty"`
}

// P2PUpdateNetworkRequest is the body of PATCH /p2p/v1/networks/{network}:
// the fields present are set.
type P2PUpdateNetworkRequest struct {
	MaxPeers  *int      `json:"max_peers,omitempty"`
	AllowList *[]string `json:"allow_list,omitempty"` // [] opens the network to all
}

// P2PNetwork is a network as the server API shows it.
type P2PNetwork struct {
	Network   string   `json:"network"`
	HubID     string   `json:"hub_id"`
	Access    string   `json:"access"` // AccessOpenNetwork, AccessJoinCode or AccessAllowList
	AllowList []string `json:"allow_list"`
	Bans      []string `json:"bans"`
	MaxPeers  int      `json:"max_peers"`
	CreatedBy string   `json:"created_by"` // "server", or the user whose join made it
	CreatedAt Time     `json:"created_at"`
	// JoinCode is set only in the answer of create.
	JoinCode string `json:"join_code,omitempty"`
}

// P2PNetworkList is the answer of GET /p2p/v1/networks.
type P2PNetworkList struct {
	Networks      []P2PNetwork `json:"networks"`
	NextPageToken string       `json:"next_page_token,omitempty"`
}

// P2PPeer is one peer of a network, as its hub knows it.
type P2PPeer struct {
	PeerID   string `json:"peer_id"`
	Username string `json:"username"`
	// UDP is the peer's traffic on the hub's UDP port; absent when the
	// hub serves no UDP.
	UDP *P2PPeerUDP `json:"udp,omitempty"`
}

// P2PPeerUDP is one peer's counters on its hub's UDP port: what the hub
// routed for it. Traffic on a direct (punched) path does not appear here.
type P2PPeerUDP struct {
	// Endpoint is where its authenticated datagrams come from (its NAT
	// mapping), "" before the first.
	Endpoint string `json:"endpoint,omitempty"`
	// EndpointValidated reports whether the peer answered a PATH_CHALLENGE
	// from Endpoint (docs/protocol/p2p.md §12.4): until it has, the hub
	// sends there at most 3 times what came from it.
	EndpointValidated bool   `json:"endpoint_validated"`
	DatagramsIn       uint64 `json:"datagrams_in"`
	DatagramsOut      uint64 `json:"datagrams_out"`
	BytesIn           uint64 `json:"bytes_in"`
	BytesOut          uint64 `json:"bytes_out"`
}

// P2PPeerList is the answer of GET /p2p/v1/networks/{network}/peers.
type P2PPeerList struct {
	Network string    `json:"network"`
	Peers   []P2PPeer `json:"peers"`
}

// P2PKickRequest is the optional body of POST
// /p2p/v1/networks/{network}/peers/{peer_id}/kick.
type P2PKickRequest struct {
	Reason string `json:"reason,omitempty"`
}

// P2PBanRequest is the body of POST /p2p/v1/networks/{network}/bans.
type P2PBanRequest struct {
	Username string `json:"username"`
}
