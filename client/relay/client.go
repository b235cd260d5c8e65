package relay

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/client/session"
	"github.com/switchboardgg/switchboard/protocol/relaywire"
)

// Client makes the relay REST calls (/relay/v1, /qos/v1) of one login
// session and dials [Conn]s to relay nodes. It is safe for concurrent use
// and starts no goroutines.
type Client struct {
	// immutable after New
	sc  *session.Client
	cfg Config
}

// New returns a Client that calls the relay API with sc's login session.
// cfg may be nil for the defaults.
func New(sc *session.Client, cfg *Config) *Client {
	return &Client{sc: sc, cfg: cfg.resolve()}
}

// Allocation is an allocation as the API returns it: what a [Conn] needs
// to bind (and, for a joiner, to connect to its host). It holds the
// allocation's key: never log it.
type Allocation struct {
	// ID is the allocation id.
	ID relaywire.AllocationID
	// Key is the BIND HMAC key.
	Key relaywire.Key
	// ConnectionData is the allocation's sealed blob.
	ConnectionData []byte
	// HostConnectionData is the host's blob; empty for a host's
	// allocation.
	HostConnectionData []byte
	// Endpoints are the relay node's endpoints, in the API's order.
	Endpoints []api.RelayServerEndpoint
	// Region is the relay node's region.
	Region string
	// JoinCode is the join code the allocation was joined with (a
	// joiner's), or the one [Client.CreateJoinCode] made for it (a
	// host's); empty otherwise.
	JoinCode string
}

// IsHost reports whether a is a host's allocation (it has no host).
func (a *Allocation) IsHost() bool { return len(a.HostConnectionData) == 0 }

// String describes a without its key or blobs.
func (a *Allocation) String() string {
	return fmt.Sprintf("Allocation{ID:%s Region:%q Host:%v}", a.ID, a.Region, a.IsHost())
}

func newAllocation(in *api.RelayAllocation) (*Allocation, error) {
	id, err := relaywire.ParseAllocationID(in.AllocationID)
	if err != nil {
		return nil, fmt.Errorf("relay: answer's allocationId: %w", err)
	}
	key, err := relaywire.NewKey(in.Key)
	if err != nil {
		return nil, fmt.Errorf("relay: answer's key: %w", err)
	}
	if len(in.ConnectionData) == 0 || len(in.ConnectionData) > relaywire.ConnectionDataSize || len(in.HostConnectionData) > relaywire.ConnectionDataSize {
		return nil, errors.New("relay: answer's connection data is empty or over 255 bytes")
	}
	return &Allocation{
		ID: id, Key: key, ConnectionData: in.ConnectionData, HostConnectionData: in.HostConnectionData,
		Endpoints: in.ServerEndpoints, Region: in.Region,
	}, nil
}

// AllocateRequest is what [Client.Allocate] asks for.
type AllocateRequest struct {
	// MaxConnections is the number of peers the host takes, 1 to
	// api.RelayMaxConnectionsLimit (100).
	MaxConnections int
	// Region is the relay region. Empty means the region with the lowest
	// round-trip time, measured with QoS probes ([Client.MeasureRegions]);
	// when none answers, the server's default.
	Region string
	// IdleTimeout, when not zero, asks the relay to keep the allocation
	// through this much silence instead of its default (10 s), in whole
	// seconds up to the deployment's cap (default 300 s; over it the call
	// fails with ErrInvalidRequest). Switchboard only.
	IdleTimeout time.Duration
	// HostMigration opts the host in to host migration: when its
	// allocation dies, a peer may take its join code over ([Client.Migrate]).
	// Switchboard only.
	HostMigration bool
}

// Allocate allocates a host's allocation (POST /relay/v1/allocate). It
// fails with a *session.APIError matching ErrRegionNotFound,
// ErrNoSuitableRelay, ErrQuotaExceeded, ErrInvalidRequest, … .
func (c *Client) Allocate(ctx context.Context, req AllocateRequest) (*Allocation, error) {
	if req.Region == "" {
		rtts, err := c.MeasureRegions(ctx)
		if err == nil && len(rtts) > 0 && rtts[0].Reachable() {
			req.Region = rtts[0].Region
		} else if err != nil && ctx.Err() != nil {
			return nil, err
		}
	}
	n := req.MaxConnections
	var out api.RelayResponse[api.RelayAllocationData]
	body := api.RelayAllocateRequest{MaxConnections: &n, Region: req.Region,
		IdleTimeoutSeconds: int((req.IdleTimeout + time.Second - 1) / time.Second), HostMigration: req.HostMigration}
	if _, err := c.sc.Do(ctx, http.MethodPost, "/relay/v1/allocate", body, &out); err != nil {
		return nil, fmt.Errorf("relay: allocate: %w", err)
	}
	return newAllocation(&out.Data.Allocation)
}

// CreateJoinCode returns the join code of a host's allocation (POST
// /relay/v1/joincode; the same code on every call) and records it in
// a.JoinCode. It fails with a *session.APIError matching
// ErrAllocationNotFound when a is not the caller's live host allocation.
func (c *Client) CreateJoinCode(ctx context.Context, a *Allocation) (string, error) {
	var out api.RelayResponse[api.RelayJoinCodeData]
	if _, err := c.sc.Do(ctx, http.MethodPost, "/relay/v1/joincode", api.RelayJoinCodeRequest{AllocationID: a.ID.String()}, &out); err != nil {
		return "", fmt.Errorf("relay: join code: %w", err)
	}
	if out.Data.JoinCode == "" {
		return "", errors.New("relay: join code: answer without joinCode")
	}
	a.JoinCode = out.Data.JoinCode
	return out.Data.JoinCode, nil
}

// JoinAllocation allocates a joiner's allocation on the host's relay node
// with a join code (POST /relay/v1/join). It fails with a
// *session.APIError matching ErrJoinCodeNotFound for a code that is not
// live.
func (c *Client) JoinAllocation(ctx context.Context, joinCode string) (*Allocation, error) {
	var out api.RelayResponse[api.RelayAllocationData]
	if _, err := c.sc.Do(ctx, http.MethodPost, "/relay/v1/join", api.RelayJoinRequest{JoinCode: joinCode}, &out); err != nil {
		return nil, fmt.Errorf("relay: join: %w", err)
	}
	if len(out.Data.Allocation.HostConnectionData) == 0 {
		return nil, errors.New("relay: join: answer without hostConnectionData")
	}
	a, err := newAllocation(&out.Data.Allocation)
	if err != nil {
		return nil, err
	}
	a.JoinCode = joinCode
	return a, nil
}

// Regions returns the regions of the healthy relay nodes (GET
// /relay/v1/regions), sorted.
func (c *Client) Regions(ctx context.Context) ([]api.RelayRegion, error) {
	var out api.RelayResponse[api.RelayRegionsData]
	if _, err := c.sc.Do(ctx, http.MethodGet, "/relay/v1/regions", nil, &out); err != nil {
		return nil, fmt.Errorf("relay: regions: %w", err)
	}
	return out.Data.Regions, nil
}

// QoSServers returns the QoS responders of the relay nodes (GET
// /qos/v1/servers?service=relay), of the given regions or of all.
func (c *Client) QoSServers(ctx context.Context, regions ...string) ([]api.QoSServer, error) {
	q := url.Values{"service": {"relay"}}
	for _, r := range regions {
		q.Add("region", r)
	}
	var out api.RelayResponse[api.QoSServersData]
	if _, err := c.sc.Do(ctx, http.MethodGet, "/qos/v1/servers?"+q.Encode(), nil, &out); err != nil {
		return nil, fmt.Errorf("relay: qos servers: %w", err)
	}
	return out.Data.Servers, nil
}

// Host allocates (as [Client.Allocate]), makes the join code and binds a
// [Conn] to the allocation: a host, ready for peers. Conn.JoinCode gives
// the code to share.
func (c *Client) Host(ctx context.Context, req AllocateRequest) (*Conn, error) {
	if _, err := ParseTransport(string(c.cfg.Transport)); err != nil {
		return nil, err
	}
	a, err := c.Allocate(ctx, req)
	if err != nil {
		return nil, err
	}
	if _, err := c.CreateJoinCode(ctx, a); err != nil {
		return nil, err
	}
	return c.Dial(ctx, a)
}

// Join joins with a join code (as [Client.JoinAllocation]), binds a
// [Conn] and connects it to the host.
func (c *Client) Join(ctx context.Context, joinCode string) (*Conn, error) {
	if _, err := ParseTransport(string(c.cfg.Transport)); err != nil {
		return nil, err
	}
	a, err := c.JoinAllocation(ctx, joinCode)
	if err != nil {
		return nil, err
	}
	return c.Dial(ctx, a)
}
