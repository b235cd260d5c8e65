package api

// The relay REST API (/relay/v1, /qos/v1) speaks Unity Relay's JSON:
// camelCase field names, the {meta, data, links} envelope and problem-JSON
// errors with 15xxx codes (reference unity-relay.md §2–§3). Its server-API
// routes (/server/v1/relay/keys) speak ours.

// Relay error codes: [RelayProblem].Code (Unity's RelayExceptionReason).
const (
	RelayCodeInvalidRequest     = 15001 // 400: a field is missing or out of range
	RelayCodeRegionNotFound     = 15007 // 404: no such region
	RelayCodeAllocationNotFound = 15008 // 404: no such allocation (or not the caller's)
	RelayCodeJoinCodeNotFound   = 15009 // 404: no live join code
	RelayCodeNoSuitableRelay    = 15010 // 503: no healthy relay node in the region
	RelayCodeInvalidArgument    = 15400 // 400: malformed body
	RelayCodeUnauthorized       = 15401 // 401
	RelayCodeForbidden          = 15403 // 403
	RelayCodeEntityNotFound     = 15404 // 404: no such endpoint
	RelayCodeMethodNotAllowed   = 15405 // 405
	RelayCodeRateLimited        = 15429 // 429
	RelayCodeQuotaExceeded      = 15430 // 429: too many live allocations for the API key or source address
	RelayCodeInternal           = 15500 // 500
	RelayCodeServiceUnavailable = 15503 // 503
)

// Fixed values and limits of the relay API.
const (
	// RelayProblemTypePrefix starts [RelayProblem].Type, followed by the
	// status text in lower case with dashes ("not-found").
	RelayProblemTypePrefix = "https://switchboard.gg/problems/relay/"
	// RelayProblemContentType is the Content-Type of relay errors.
	RelayProblemContentType = "application/problem+json"
	// RelayJoinCodeAlphabet is the alphabet of join codes (Unity's).
	RelayJoinCodeAlphabet = "6789BCDFGHJKLMNPQRTW"
	// RelayMinJoinCodeLen and RelayMaxJoinCodeLen bound a join code's
	// length.
	RelayMinJoinCodeLen = 6
	RelayMaxJoinCodeLen = 12
	// RelayMaxConnectionsLimit caps maxConnections (Unity: 100 players
	// per session).
	RelayMaxConnectionsLimit = 100
	// RelayMaxRegionLen bounds a region id, in bytes.
	RelayMaxRegionLen = 32
)

// RelayProblem is the error body of every /relay/v1 and /qos/v1 error
// (RFC 7807, Unity's ErrorResponseBody), served as application/problem+json.
type RelayProblem struct {
	Status  int                  `json:"status"`
	Title   string               `json:"title"`
	Detail  string               `json:"detail"`
	Type    string               `json:"type"`
	Code    int                  `json:"code"`
	Details []RelayProblemDetail `json:"details,omitempty"`
}

// RelayProblemDetail is one {key, value} of [RelayProblem].Details.
type RelayProblemDetail struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// RelayMeta is the "meta" member of every relay answer.
type RelayMeta struct {
	RequestID string `json:"requestId"`
	Status    int    `json:"status"`
}

// RelayLinks is the "links" member of relay answers.
type RelayLinks struct {
	Next string `json:"next,omitempty"`
}

// RelayResponse is the envelope of every successful relay answer.
type RelayResponse[T any] struct {
	Meta  RelayMeta   `json:"meta"`
	Data  T           `json:"data"`
	Links *RelayLinks `json:"links,omitempty"`
}

// RelayAllocateRequest is the body of POST /relay/v1/allocate.
type RelayAllocateRequest struct {
	MaxConnections *int   `json:"maxConnections"` // required, 1..RelayMaxConnectionsLimit
	Region         string `json:"region,omitempty"`
	// IdleTimeoutSeconds overrides the relay node's idle timeout for this
	// allocation (Switchboard only); 0 or absent: the node's. At most the
	// deployment's cap (RelayCodeInvalidRequest above it).
	IdleTimeoutSeconds int `json:"idleTimeoutSeconds,omitempty"`
	// HostMigration opts a host in to host migration (Switchboard only):
	// its join code outlives it for a grace period (docs/api.md).
	HostMigration bool `json:"hostMigration,omitempty"`
}

// RelayJoinCodeRequest is the body of POST /relay/v1/joincode.
type RelayJoinCodeRequest struct {
	AllocationID string `json:"allocationId"`
	// JoinCode and PreviousAllocationID claim a held code for
	// AllocationID (host migration, Switchboard only): JoinCode is the
	// dead host's code, PreviousAllocationID the caller's allocation that
	// joined with it. Both or neither.
	JoinCode             string `json:"joinCode,omitempty"`
	PreviousAllocationID string `json:"previousAllocationId,omitempty"`
}

// RelayJoinRequest is the body of POST /relay/v1/join.
type RelayJoinRequest struct {
	JoinCode string `json:"joinCode"`
	// IdleTimeoutSeconds is as in [RelayAllocateRequest], for the
	// joiner's allocation (Switchboard only).
	IdleTimeoutSeconds int `json:"idleTimeoutSeconds,omitempty"`
}

// RelayServerEndpoint is one way to reach the relay node of an
// allocation. ConnectionType is "udp", "dtls", "ws" or "wss".
type RelayServerEndpoint struct {
	ConnectionType string `json:"connectionType"`
	Network        string `json:"network"` // "udp" or "tcp"
	Reliable       bool   `json:"reliable"`
	Secure         bool   `json:"secure"`
	Host           string `json:"host"`
	Port           int    `json:"port"`
}

// RelayServer is the deprecated IPv4 UDP address of an allocation's relay
// node, which older clients read.
type RelayServer struct {
	IPV4 string `json:"ipV4"`
	Port int    `json:"port"`
}

// RelayAllocation is an allocation as allocate and join return it. Byte
// fields are standard base64 (encoding/json's []byte).
type RelayAllocation struct {
	AllocationID       string                `json:"allocationId"`                 // UUID
	AllocationIDBytes  []byte                `json:"allocationIdBytes"`            // 16 bytes, RFC 4122 order
	Key                []byte                `json:"key"`                          // 64 bytes
	ConnectionData     []byte                `json:"connectionData"`               // ≤ 255 bytes
	HostConnectionData []byte                `json:"hostConnectionData,omitempty"` // join only
	ServerEndpoints    []RelayServerEndpoint `json:"serverEndpoints"`
	RelayServer        *RelayServer          `json:"relayServer,omitempty"` // Deprecated: use ServerEndpoints
	Region             string                `json:"region"`
}

// RelayAllocationData is data of the allocate and join answers.
type RelayAllocationData struct {
	Allocation RelayAllocation `json:"allocation"`
}

// RelayJoinCodeData is data of the joincode answer.
type RelayJoinCodeData struct {
	JoinCode string `json:"joinCode"`
}

// RelayRegion is one region of GET /relay/v1/regions.
type RelayRegion struct {
	ID          string `json:"id"`
	Description string `json:"description"`
}

// RelayRegionsData is data of GET /relay/v1/regions.
type RelayRegionsData struct {
	Regions []RelayRegion `json:"regions"`
}

// QoSServer is one server of GET /qos/v1/servers: "ip:port" UDP endpoints
// answering QoS probes (0x59 → 0x95).
type QoSServer struct {
	Endpoints []string `json:"endpoints"`
	Region    string   `json:"region"`
	Services  []string `json:"services,omitempty"`
}

// QoSServersData is data of GET /qos/v1/servers.
type QoSServersData struct {
	Servers []QoSServer `json:"servers"`
}

// RelayKeyRequest is the body of POST /server/v1/relay/keys.
type RelayKeyRequest struct {
	Name    string `json:"name"`
	Project string `json:"project,omitempty"` // empty: "default"
}

// RelayKey is a relay API key as listed; the secret is shown once, when
// created.
type RelayKey struct {
	KeyID     string `json:"key_id"`
	Name      string `json:"name"`
	Project   string `json:"project"`
	CreatedAt Time   `json:"created_at"`
	Secret    string `json:"secret,omitempty"` // "srk1.…", creation only
}

// RelayKeyResponse is the answer of POST /server/v1/relay/keys.
type RelayKeyResponse struct {
	Key RelayKey `json:"key"`
}

// ListRelayKeysResponse is the answer of GET /server/v1/relay/keys.
type ListRelayKeysResponse struct {
	Keys []RelayKey `json:"keys"`
}

// RelayNode is a live relay node of the registry, as the server API shows
// it.
type RelayNode struct {
	NodeID string `json:"node_id"`
	Region string `json:"region,omitempty"`
	// Addresses are the public addresses clients are given: "udp"
	// (IPv4), "udp6", "ws" (a ws:// or wss:// URL).
	Addresses map[string]string `json:"addresses"`
	// Load is live allocations over the node's maximum, 0 to 1.
	Load      float64 `json:"load"`
	Draining  bool    `json:"draining"`
	BootEpoch uint64  `json:"boot_epoch"`
	StartedAt Time    `json:"started_at"`
	Version   string  `json:"version,omitempty"`
}

// RelayNodeResponse is the answer of POST
// /server/v1/relay/nodes/{node_id}/drain.
type RelayNodeResponse struct {
	Node RelayNode `json:"node"`
}

// ListRelayNodesResponse is the answer of GET /server/v1/relay/nodes.
type ListRelayNodesResponse struct {
	Nodes []RelayNode `json:"nodes"`
}

// RelayAllocationStatus is an allocation as GET
// /server/v1/relay/allocations/{allocation_id} shows it: control's record
// and, when its relay node holds it, the node's counters.
type RelayAllocationStatus struct {
	AllocationID string `json:"allocation_id"` // UUID, as the relay API gives it
	NodeID       string `json:"node_id"`
	Region       string `json:"region,omitempty"`
	// Host reports a host's allocation; a joiner's has HostAllocationID.
	Host             bool   `json:"host"`
	HostAllocationID string `json:"host_allocation_id,omitempty"`
	CreatedAt        Time   `json:"created_at"`
	ExpiresAt        Time   `json:"expires_at"`
	// Live is true when the node holds the allocation: a client bound it
	// and it is not released. The fields below are zero otherwise.
	Live bool `json:"live"`
	// Carrier is "udp", "ws" or "dtls", the carrier of the last bind.
	Carrier string `json:"carrier,omitempty"`
	// Peers is the number of connected peers.
	Peers int `json:"peers"`
	// BoundAt is the first bind; AgeSeconds counts from it.
	BoundAt    *Time   `json:"bound_at,omitempty"`
	AgeSeconds float64 `json:"age_seconds"`
	// PacketsIn and BytesIn count the RELAY messages the allocation sent
	// that were forwarded; PacketsOut and BytesOut those forwarded to it.
	PacketsIn  uint64 `json:"packets_in"`
	BytesIn    uint64 `json:"bytes_in"`
	PacketsOut uint64 `json:"packets_out"`
	BytesOut   uint64 `json:"bytes_out"`
}

// RelayAllocationResponse is the answer of GET
// /server/v1/relay/allocations/{allocation_id}.
type RelayAllocationResponse struct {
	Allocation RelayAllocationStatus `json:"allocation"`
}

// ReasonRelayNodeUnavailable (503): the relay node of an allocation did
// not answer.
const ReasonRelayNodeUnavailable = "relay_node_unavailable"
