package relayapi

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/control/internal/httpapi"
	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/tokens"
)

// Addresses of a relay node's registry entry (store.Node.Addresses).
const (
	AddrUDP  = "udp"  // public IPv4 UDP address, host:port
	AddrUDP6 = "udp6" // public IPv6 UDP address, [host]:port
	AddrWS   = "ws"   // WebSocket URL, ws:// or wss://host:port/
	AddrDTLS = "dtls" // DTLS address (UDP), host:port
)

// allocate: POST /relay/v1/allocate.
func (s *Server) allocate(ctx context.Context, c *call) (int, any, error) {
	var req api.RelayAllocateRequest
	if err := decode(c.w, c.r, s.cfg.MaxBodyBytes, &req); err != nil {
		return 0, nil, err
	}
	if req.MaxConnections == nil {
		return 0, nil, invalid("maxConnections is required")
	}
	if n := *req.MaxConnections; n < 1 || n > api.RelayMaxConnectionsLimit {
		return 0, nil, invalid("maxConnections must be 1 to %d", api.RelayMaxConnectionsLimit)
	}
	if len(req.Region) > api.RelayMaxRegionLen {
		return 0, nil, invalid("region is longer than %d bytes", api.RelayMaxRegionLen)
	}
	if err := s.checkIdle(req.IdleTimeoutSeconds); err != nil {
		return 0, nil, err
	}
	n, err := s.pickNode(ctx, req.Region)
	if err != nil {
		return 0, nil, err
	}
	a, blob, err := s.newAllocation(ctx, c, n, nil, allocOptions{
		maxConns: *req.MaxConnections, idle: req.IdleTimeoutSeconds, migrate: req.HostMigration})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, &api.RelayAllocationData{Allocation: s.answer(a, blob, n, nil)}, nil
}

// checkIdle checks an idleTimeoutSeconds against Config.MaxIdleTimeout.
func (s *Server) checkIdle(sec int) error {
	max := int(s.cfg.MaxIdleTimeout / time.Second)
	if sec < 0 || sec > max {
		if max <= 0 {
			return invalid("idleTimeoutSeconds is not allowed by this deployment")
		}
		return invalid("idleTimeoutSeconds must be 0 (the relay's) to %d", max)
	}
	return nil
}

// allocOptions are what a request asks of a new allocation.
type allocOptions struct {
	maxConns int  // a host's peer cap; 0 for a joiner
	idle     int  // idle timeout override, seconds; 0: the node's
	migrate  bool // a host that opted in to host migration
}

// newAllocation seals and stores a new allocation on node n; host is the
// host's allocation for a joiner.
func (s *Server) newAllocation(ctx context.Context, c *call, n *store.Node, host *store.RelayAllocation, o allocOptions) (*store.RelayAllocation, []byte, error) {
	maxConns := o.maxConns
	// The id names the secret its key derives from: a DTLS client names
	// its allocation by id alone (docs/protocol/relay.md §14).
	id, err := s.keys.NewAllocationID(s.cfg.Rand)
	if err != nil {
		return nil, nil, fmt.Errorf("relayapi: %w", err)
	}
	now := c.now.UTC().Truncate(1e9)
	conn := tokens.RelayConnection{
		AllocationID:   id,
		NodeID:         n.NodeID,
		BootEpoch:      n.BootEpoch,
		Issued:         now,
		Expires:        now.Add(s.cfg.AllocationTTL),
		Region:         n.Region,
		MaxConnections: uint16(maxConns),
		IdleTimeout:    time.Duration(o.idle) * time.Second,
	}
	a := &store.RelayAllocation{
		AllocationID:   hex.EncodeToString(id[:]),
		Owner:          c.who.owner,
		NodeID:         n.NodeID,
		BootEpoch:      n.BootEpoch,
		Region:         n.Region,
		MaxConnections: maxConns,
		CreatedAt:      now,
		ExpiresAt:      conn.Expires,

		IdleTimeoutSeconds: o.idle,
	}
	if o.migrate && host == nil {
		a.HostMigration, a.MigrationGrace = true, s.cfg.MigrationGrace
	}
	if host != nil {
		hid, _ := hex.DecodeString(host.AllocationID)
		copy(conn.HostAllocationID[:], hid)
		a.HostAllocationID = host.AllocationID
	}
	blob, err := s.keys.Seal(conn)
	if err != nil {
		return nil, nil, fmt.Errorf("relayapi: seal: %w", err)
	}
	a.ConnectionData = blob
	scopes, err := s.quota(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	if a.QuotaKeys, err = s.db.AddRelayQuota(ctx, a.AllocationID, a.ExpiresAt, scopes...); err != nil {
		return nil, nil, err
	}
	if err := s.db.CreateRelayAllocation(ctx, a); err != nil {
		return nil, nil, errors.Join(err, s.db.DropRelayQuota(ctx, a.QuotaKeys))
	}
	return a, blob, nil
}

// quota checks the live allocations of the caller's API key and source
// address against their limits, and returns the scopes the new
// allocation counts against. Two requests at once may both pass at the
// limit: the quota is exact to within the requests in flight.
func (s *Server) quota(ctx context.Context, c *call) ([]string, error) {
	type limit struct {
		scope, what string
		max         int
	}
	var limits []limit
	if c.who.key != "" && s.cfg.MaxAllocationsPerKey > 0 {
		limits = append(limits, limit{"key:" + c.who.key, "API key", s.cfg.MaxAllocationsPerKey})
	}
	if s.cfg.MaxAllocationsPerAddress > 0 {
		limits = append(limits, limit{"addr:" + httpapi.ClientIP(c.r), "source address", s.cfg.MaxAllocationsPerAddress})
	}
	scopes := make([]string, 0, len(limits))
	for _, l := range limits {
		n, err := s.db.CountRelayQuota(ctx, l.scope, c.now)
		if err != nil {
			return nil, err
		}
		if n >= l.max {
			return nil, &problem{status: http.StatusTooManyRequests, code: api.RelayCodeQuotaExceeded,
				detail: fmt.Sprintf("this %s has %d live allocations, its limit; release one (CLOSE) or wait for one to expire", l.what, l.max)}
		}
		scopes = append(scopes, l.scope)
	}
	return scopes, nil
}

// answer is the allocation as Unity's API shows it.
func (s *Server) answer(a *store.RelayAllocation, blob []byte, n *store.Node, host *store.RelayAllocation) api.RelayAllocation {
	id, _ := hex.DecodeString(a.AllocationID)
	var id16 [16]byte
	copy(id16[:], id)
	key, _ := s.keys.AllocationKey(blob[0], id16) // blob[0]: the key id it was sealed under
	out := api.RelayAllocation{
		AllocationID:      uuidString(id16),
		AllocationIDBytes: id,
		Key:               key[:],
		ConnectionData:    blob,
		ServerEndpoints:   []api.RelayServerEndpoint{},
		Region:            a.Region,
	}
	if host != nil {
		out.HostConnectionData = host.ConnectionData
	}
	out.ServerEndpoints, out.RelayServer = endpoints(n)
	return out
}

// endpoints lists the ways to reach node n: UDP over IPv4 first (UTP
// takes the first endpoint of the type it wants), then IPv6, then DTLS,
// then the WebSocket; and the deprecated IPv4 relayServer.
func endpoints(n *store.Node) ([]api.RelayServerEndpoint, *api.RelayServer) {
	eps := []api.RelayServerEndpoint{}
	var legacy *api.RelayServer
	for _, name := range []string{AddrUDP, AddrUDP6} {
		ap, err := netip.ParseAddrPort(n.Addresses[name])
		if err != nil {
			continue
		}
		eps = append(eps, api.RelayServerEndpoint{ConnectionType: "udp", Network: "udp",
			Host: ap.Addr().Unmap().String(), Port: int(ap.Port())})
		if ap.Addr().Unmap().Is4() && legacy == nil {
			legacy = &api.RelayServer{IPV4: ap.Addr().Unmap().String(), Port: int(ap.Port())}
		}
	}
	if ap, err := netip.ParseAddrPort(n.Addresses[AddrDTLS]); err == nil {
		eps = append(eps, api.RelayServerEndpoint{ConnectionType: "dtls", Network: "udp", Secure: true,
			Host: ap.Addr().Unmap().String(), Port: int(ap.Port())})
	}
	if u, err := url.Parse(n.Addresses[AddrWS]); err == nil && (u.Scheme == "ws" || u.Scheme == "wss") {
		if port, err := strconv.Atoi(u.Port()); err == nil {
			eps = append(eps, api.RelayServerEndpoint{ConnectionType: u.Scheme, Network: "tcp",
				Reliable: true, Secure: u.Scheme == "wss", Host: u.Hostname(), Port: port})
		}
	}
	return eps, legacy
}

// healthy reports whether n may take new allocations.
func healthy(n *store.Node) bool {
	if n.Draining || n.BootEpoch == 0 {
		return false
	}
	_, udp := n.Addresses[AddrUDP]
	_, udp6 := n.Addresses[AddrUDP6]
	_, ws := n.Addresses[AddrWS]
	_, dtls := n.Addresses[AddrDTLS]
	return udp || udp6 || ws || dtls
}

// pickNode chooses the least-loaded healthy relay node of region; without
// a region, of the default region, else of any region.
func (s *Server) pickNode(ctx context.Context, region string) (*store.Node, error) {
	nodes, err := s.db.ListRoleNodes(ctx, store.RoleRelay)
	if err != nil {
		return nil, err
	}
	in := func(region string) []*store.Node {
		var out []*store.Node
		for _, n := range nodes {
			if healthy(n) && (region == "" || n.Region == region) {
				out = append(out, n)
			}
		}
		return out
	}
	var cands []*store.Node
	if region != "" {
		if !slices.ContainsFunc(nodes, func(n *store.Node) bool { return n.Region == region }) {
			return nil, notFound(api.RelayCodeRegionNotFound, "no relay region "+strconv.Quote(truncate(region)))
		}
		cands = in(region)
	} else {
		if s.cfg.DefaultRegion != "" {
			cands = in(s.cfg.DefaultRegion)
		}
		if len(cands) == 0 {
			cands = in("")
		}
	}
	if len(cands) == 0 {
		return nil, &problem{status: http.StatusServiceUnavailable, code: api.RelayCodeNoSuitableRelay,
			detail: "no relay node can take an allocation now; retry"}
	}
	// Least loaded; among equals, any: loads change only at heartbeats.
	best := cands[:0:0]
	for _, n := range cands {
		switch {
		case len(best) == 0 || n.Load < best[0].Load:
			best = append(best[:0], n)
		case n.Load == best[0].Load:
			best = append(best, n)
		}
	}
	return best[rand.IntN(len(best))], nil
}

// liveNode returns the registry entry of the node an allocation is on,
// if it still runs the boot that allocation was made for.
func (s *Server) liveNode(ctx context.Context, id string, epoch uint64) (*store.Node, error) {
	n, err := s.db.GetRoleNode(ctx, store.RoleRelay, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if n.BootEpoch != epoch {
		return nil, nil
	}
	return n, nil
}

// joinCode: POST /relay/v1/joincode.
func (s *Server) joinCode(ctx context.Context, c *call) (int, any, error) {
	var req api.RelayJoinCodeRequest
	if err := decode(c.w, c.r, s.cfg.MaxBodyBytes, &req); err != nil {
		return 0, nil, err
	}
	id, ok := parseUUID(req.AllocationID)
	if !ok {
		return 0, nil, invalid("allocationId must be a UUID")
	}
	switch {
	case req.JoinCode != "" && req.PreviousAllocationID != "":
		return s.claimJoinCode(ctx, c, id, &req)
	case req.JoinCode != "" || req.PreviousAllocationID != "":
		return 0, nil, invalid("joinCode and previousAllocationId go together (a host migration claim)")
	}
	hexID := hex.EncodeToString(id[:])
	errNotFound := notFound(api.RelayCodeAllocationNotFound, "no such allocation")
	code, err := s.db.RelayJoinCode(ctx, hexID, s.newCode, func(a *store.RelayAllocation) error {
		if a.Owner != c.who.owner || a.HostAllocationID != "" {
			return errNotFound
		}
		n, err := s.liveNode(ctx, a.NodeID, a.BootEpoch)
		if err != nil {
			return err
		}
		if n == nil || !c.now.Before(a.ExpiresAt) {
			return errNotFound
		}
		return nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil, errNotFound
	}
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, &api.RelayJoinCodeData{JoinCode: code}, nil
}

// newCode returns a random join code of Config.JoinCodeLength characters.
func (s *Server) newCode() string {
	const alphabet = api.RelayJoinCodeAlphabet
	b := make([]byte, s.cfg.JoinCodeLength)
	var r [1]byte
	for i := 0; i < len(b); {
		if _, err := io.ReadFull(s.cfg.Rand, r[:]); err != nil {
			panic(fmt.Sprintf("relayapi: random source failed: %v", err)) // crypto/rand does not fail
		}
		if v := int(r[0]); v < 256-256%len(alphabet) { // no modulo bias
			b[i] = alphabet[v%len(alphabet)]
			i++
		}
	}
	return string(b)
}

// normalizeCode returns code in upper case, and false if it is not 6 to
// 12 characters of the alphabet in any case.
func normalizeCode(code string) (string, bool) {
	if len(code) < api.RelayMinJoinCodeLen || len(code) > api.RelayMaxJoinCodeLen {
		return "", false
	}
	up := strings.ToUpper(code)
	for i := 0; i < len(up); i++ {
		if strings.IndexByte(api.RelayJoinCodeAlphabet, up[i]) < 0 {
			return "", false
		}
	}
	return up, true
}

// join: POST /relay/v1/join.
func (s *Server) join(ctx context.Context, c *call) (int, any, error) {
	if err := s.takeJoin(c); err != nil {
		return 0, nil, err
	}
	var req api.RelayJoinRequest
	if err := decode(c.w, c.r, s.cfg.MaxBodyBytes, &req); err != nil {
		return 0, nil, err
	}
	if err := s.checkIdle(req.IdleTimeoutSeconds); err != nil {
		return 0, nil, err
	}
	errNotFound := notFound(api.RelayCodeJoinCodeNotFound, "no such join code")
	code, ok := normalizeCode(req.JoinCode)
	if !ok {
		if req.JoinCode == "" {
			return 0, nil, invalid("joinCode is required")
		}
		return 0, nil, errNotFound
	}
	jc, host, n, err := s.liveCode(ctx, code, c.now)
	if err != nil {
		return 0, nil, err
	}
	if n == nil {
		return 0, nil, errMigrating
	}
	// A joiner's allocation is on its host's node (the seed's step 11),
	// draining or not: the host's session is served there until it ends.
	a, blob, err := s.newAllocation(ctx, c, n, host, allocOptions{idle: req.IdleTimeoutSeconds})
	if err != nil {
		return 0, nil, err
	}
	if jc.Migration {
		// A claim after the host's death needs the join on record.
		if err := s.db.RecordRelayJoin(ctx, code, a.AllocationID, c.who.owner); err != nil {
			return 0, nil, err
		}
	}
	return http.StatusOK, &api.RelayAllocationData{Allocation: s.answer(a, blob, n, host)}, nil
}

var errMigrating = &problem{status: http.StatusConflict, code: api.RelayCodeJoinCodeMigrating,
	detail: "the host of this join code is gone and a peer may take it over; join again shortly"}

// liveCode returns the record of join code (upper case) and, while its
// host lives, the host's allocation and node; host and node are nil while
// the code is held for a claim (host migration). It fails with the 404 of
// an unknown code, and deletes the code of a host that was released (and
// not migrating), whose node stopped or restarted, or whose grace period
// is over.
func (s *Server) liveCode(ctx context.Context, code string, now time.Time) (*store.RelayJoinCode, *store.RelayAllocation, *store.Node, error) {
	errNotFound := notFound(api.RelayCodeJoinCodeNotFound, "no such join code")
	jc, err := s.db.GetRelayJoinCode(ctx, code)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, nil, errNotFound
	}
	if err != nil {
		return nil, nil, nil, err
	}
	if !jc.HeldUntil.IsZero() {
		if now.Before(jc.HeldUntil) {
			return jc, nil, nil, nil
		}
	} else {
		host, err := s.db.GetRelayAllocation(ctx, jc.HostAllocationID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, nil, nil, err
		}
		// The host's record gets its code just after the code's record
		// (made, or claimed): an empty one is not a sign of death.
		var n *store.Node
		if host != nil && (host.JoinCode == code || host.JoinCode == "") && now.Before(host.ExpiresAt) {
			if n, err = s.liveNode(ctx, jc.NodeID, jc.BootEpoch); err != nil {
				return nil, nil, nil, err
			}
		}
		if n != nil {
			return jc, host, n, nil
		}
	}
	// The host was released, its node stopped or restarted, or the grace
	// period is over.
	if err := s.db.DeleteStaleRelayJoinCode(ctx, code, jc.HostAllocationID, jc.HeldUntil); err != nil {
		s.log.Warn("relay join code not deleted", "err", err)
	}
	return nil, nil, nil, errNotFound
}

// regions: GET /relay/v1/regions, the regions of healthy relay nodes.
func (s *Server) regions(ctx context.Context, _ *call) (int, any, error) {
	nodes, err := s.db.ListRoleNodes(ctx, store.RoleRelay)
	if err != nil {
		return 0, nil, err
	}
	out := api.RelayRegionsData{Regions: []api.RelayRegion{}}
	seen := map[string]bool{}
	for _, n := range nodes {
		if !healthy(n) || n.Region == "" || seen[n.Region] {
			continue
		}
		seen[n.Region] = true
		d := s.cfg.RegionDescriptions[n.Region]
		if d == "" {
			d = n.Region
		}
		out.Regions = append(out.Regions, api.RelayRegion{ID: n.Region, Description: d})
	}
	slices.SortFunc(out.Regions, func(a, b api.RelayRegion) int { return strings.Compare(a.ID, b.ID) })
	return http.StatusOK, &out, nil
}

// maxQoSRegions bounds the region parameters of a QoS query.
const maxQoSRegions = 64

// qosServers: GET /qos/v1/servers?service=relay&region=…, one server per
// healthy relay node: its UDP addresses answer QoS probes.
func (s *Server) qosServers(ctx context.Context, c *call) (int, any, error) {
	q := c.r.URL.Query()
	out := api.QoSServersData{Servers: []api.QoSServer{}}
	if svc := q.Get("service"); svc != "" && svc != "relay" {
		return http.StatusOK, &out, nil
	}
	regions := q["region"]
	if len(regions) > maxQoSRegions {
		return 0, nil, invalid("at most %d region parameters", maxQoSRegions)
	}
	nodes, err := s.db.ListRoleNodes(ctx, store.RoleRelay)
	if err != nil {
		return 0, nil, err
	}
	for _, n := range nodes {
		if !healthy(n) || (len(regions) > 0 && !slices.Contains(regions, n.Region)) {
			continue
		}
		var eps []string
		for _, name := range []string{AddrUDP, AddrUDP6} {
			if a := n.Addresses[name]; a != "" {
				eps = append(eps, a)
			}
		}
		if len(eps) > 0 {
			out.Servers = append(out.Servers, api.QoSServer{Endpoints: eps, Region: n.Region, Services: []string{"relay"}})
		}
	}
	return http.StatusOK, &out, nil
}

// parseUUID parses the canonical text form of a UUID (any case) into its
// RFC 4122 bytes.
func parseUUID(s string) ([16]byte, bool) {
	var id [16]byte
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return id, false
	}
	h := s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:36]
	b, err := hex.DecodeString(h)
	if err != nil {
		return id, false
	}
	copy(id[:], b)
	return id, true
}

// uuidString is the canonical text form of id.
func uuidString(id [16]byte) string {
	h := hex.EncodeToString(id[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
