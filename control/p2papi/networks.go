package p2papi

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/control/internal/httpapi"
	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/tokens"
)

// createdByServer is P2PNetwork.CreatedBy of a network the server API
// made.
const createdByServer = "server"

// toJSON converts a network record to the API's object.
func toJSON(n *store.P2PNetwork) api.P2PNetwork {
	out := api.P2PNetwork{
		Network: n.Name, HubID: n.HubID, Access: api.AccessOpenNetwork,
		AllowList: slices.Clone(n.AllowList), Bans: slices.Clone(n.Bans),
		MaxPeers: n.MaxPeers, CreatedBy: n.CreatedBy, CreatedAt: api.NewTime(n.CreatedAt),
	}
	switch {
	case n.JoinCodeHash != "":
		out.Access = api.AccessJoinCode
	case len(n.AllowList) > 0:
		out.Access = api.AccessAllowList
	}
	if out.AllowList == nil {
		out.AllowList = []string{}
	}
	if out.Bans == nil {
		out.Bans = []string{}
	}
	return out
}

// checkAllowList validates an allow list.
func checkAllowList(l []string) error {
	if len(l) > api.MaxAllowListLen {
		return httpapi.Invalid("allow_list has more than %d usernames", api.MaxAllowListLen)
	}
	for _, u := range l {
		if !httpapi.ValidUsername(u) {
			return httpapi.Invalid("allow_list holds a username that is not 1 to %d of A-Z a-z 0-9 _ . -", api.MaxUsernameLen)
		}
	}
	return nil
}

// checkMaxPeers validates max_peers (0: the default).
func (s *Server) checkMaxPeers(v int) (int, error) {
	if v < 0 || v > api.MaxMaxPeers {
		return 0, httpapi.Invalid("max_peers must be between 1 and %d", api.MaxMaxPeers)
	}
	if v == 0 {
		return s.cfg.MaxPeers, nil
	}
	return v, nil
}

// loadNetwork reads the network of the path, or answers 404.
func (s *Server) loadNetwork(ctx context.Context, c *httpapi.Call) (*store.P2PNetwork, error) {
	name := c.R.PathValue("network")
	if !ValidNetworkName(name) {
		return nil, httpapi.NotFound("network not found")
	}
	n, err := s.db.GetP2PNetwork(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, httpapi.NotFound("network not found")
	}
	return n, err
}

// createNetwork: POST /p2p/v1/networks. 201 with the network, and its
// join code when one was asked for (shown this once).
func (s *Server) createNetwork(ctx context.Context, c *httpapi.Call) (int, any, error) {
	var req api.P2PCreateNetworkRequest
	if err := httpapi.DecodeBody(c.W, c.R, s.cfg.MaxBodyBytes, &req); err != nil {
		return 0, nil, err
	}
	if !ValidNetworkName(req.Network) {
		return 0, nil, httpapi.Invalid("network must be 1 to %d of A-Z a-z 0-9 _ -", api.MaxNetworkNameLen)
	}
	if err := checkAllowList(req.AllowList); err != nil {
		return 0, nil, err
	}
	maxPeers, err := s.checkMaxPeers(req.MaxPeers)
	if err != nil {
		return 0, nil, err
	}
	hub, err := s.pickHub(ctx)
	if err != nil {
		return 0, nil, err
	}
	n := &store.P2PNetwork{Name: req.Network, HubID: hub.NodeID, AllowList: req.AllowList, MaxPeers: maxPeers,
		CreatedBy: createdByServer, CreatedAt: c.Now.UTC(), TouchedAt: c.Now.UTC()}
	var code string
	if req.RequireJoinCode {
		code = newJoinCode()
		n.JoinCodeHash = tokens.Hash(code)
	}
	err = s.db.CreateP2PNetwork(ctx, n)
	if errors.Is(err, store.ErrExists) {
		return 0, nil, httpapi.Conflict("a network of this name exists", api.ReasonNetworkExists)
	}
	if err != nil {
		return 0, nil, err
	}
	if n, err = s.db.GetP2PNetwork(ctx, n.Name); err != nil { // sorted as stored
		return 0, nil, err
	}
	out := toJSON(n)
	out.JoinCode = code
	return http.StatusCreated, &out, nil
}

// listNetworks: GET /p2p/v1/networks?page_token=&limit=, sorted by name;
// the page token is the last name of the page before.
func (s *Server) listNetworks(ctx context.Context, c *httpapi.Call) (int, any, error) {
	q := c.R.URL.Query()
	limit := api.DefaultPageSize
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > api.MaxPageSize {
			return 0, nil, httpapi.Invalid("limit must be between 1 and %d", api.MaxPageSize)
		}
		limit = n
	}
	after := q.Get("page_token")
	if after != "" && !ValidNetworkName(after) {
		return 0, nil, httpapi.Invalid("invalid page_token")
	}
	nets, more, err := s.db.ListP2PNetworks(ctx, after, limit)
	if err != nil {
		return 0, nil, err
	}
	out := &api.P2PNetworkList{Networks: make([]api.P2PNetwork, 0, len(nets))}
	for _, n := range nets {
		out.Networks = append(out.Networks, toJSON(n))
	}
	if more && len(nets) > 0 {
		out.NextPageToken = nets[len(nets)-1].Name
	}
	return http.StatusOK, out, nil
}

// getNetwork: GET /p2p/v1/networks/{network}.
func (s *Server) getNetwork(ctx context.Context, c *httpapi.Call) (int, any, error) {
	n, err := s.loadNetwork(ctx, c)
	if err != nil {
		return 0, nil, err
	}
	out := toJSON(n)
	return http.StatusOK, &out, nil
}

// updateNetwork: PATCH /p2p/v1/networks/{network}: max_peers, allow_list.
// A lower cap does not send peers away; it refuses joins over it.
func (s *Server) updateNetwork(ctx context.Context, c *httpapi.Call) (int, any, error) {
	var req api.P2PUpdateNetworkRequest
	if err := httpapi.DecodeBody(c.W, c.R, s.cfg.MaxBodyBytes, &req); err != nil {
		return 0, nil, err
	}
	if req.MaxPeers != nil && (*req.MaxPeers < 1 || *req.MaxPeers > api.MaxMaxPeers) {
		return 0, nil, httpapi.Invalid("max_peers must be between 1 and %d", api.MaxMaxPeers)
	}
	if req.AllowList != nil {
		if err := checkAllowList(*req.AllowList); err != nil {
			return 0, nil, err
		}
	}
	if _, err := s.loadNetwork(ctx, c); err != nil {
		return 0, nil, err
	}
	n, err := s.db.UpdateP2PNetwork(ctx, c.R.PathValue("network"), func(n *store.P2PNetwork) error {
		if req.MaxPeers != nil {
			n.MaxPeers = *req.MaxPeers
		}
		if req.AllowList != nil {
			n.AllowList = slices.Clone(*req.AllowList)
		}
		return nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil, httpapi.NotFound("network not found")
	}
	if err != nil {
		return 0, nil, err
	}
	out := toJSON(n)
	return http.StatusOK, &out, nil
}

// deleteNetwork: DELETE /p2p/v1/networks/{network}: the record and its
// join code go (204); peers on the hub stay until they leave, and the next
// join makes the network again.
func (s *Server) deleteNetwork(ctx context.Context, c *httpapi.Call) (int, any, error) {
	n, err := s.loadNetwork(ctx, c)
	if err != nil {
		return 0, nil, err
	}
	if err := s.db.DeleteP2PNetwork(ctx, n.Name); err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}

// listPeers: GET /p2p/v1/networks/{network}/peers, as the network's hub
// knows them now.
func (s *Server) listPeers(ctx context.Context, c *httpapi.Call) (int, any, error) {
	n, err := s.loadNetwork(ctx, c)
	if err != nil {
		return 0, nil, err
	}
	reply, err := s.hubCommand(ctx, n, store.HubVerbPeers, &store.HubPeersRequest{Network: n.Name})
	if err != nil {
		return 0, nil, err
	}
	out := &api.P2PPeerList{Network: n.Name, Peers: make([]api.P2PPeer, 0, len(reply.Peers))}
	for _, p := range reply.Peers {
		out.Peers = append(out.Peers, api.P2PPeer{PeerID: p.PeerID, Username: p.Username, UDP: p.UDP})
	}
	slices.SortFunc(out.Peers, func(a, b api.P2PPeer) int { return strings.Compare(a.PeerID, b.PeerID) })
	return http.StatusOK, out, nil
}

// kick: POST /p2p/v1/networks/{network}/peers/{peer_id}/kick: the hub
// sends the peer ERROR kicked and closes it (204); 404 when the hub does
// not have it.
func (s *Server) kick(ctx context.Context, c *httpapi.Call) (int, any, error) {
	var req api.P2PKickRequest
	if err := httpapi.DecodeBody(c.W, c.R, s.cfg.MaxBodyBytes, &req); err != nil {
		return 0, nil, err
	}
	if req.Reason != "" && !httpapi.ValidReason(req.Reason, api.MaxKickReasonLen) {
		return 0, nil, httpapi.Invalid("reason must be 1 to %d printable ASCII characters", api.MaxKickReasonLen)
	}
	n, err := s.loadNetwork(ctx, c)
	if err != nil {
		return 0, nil, err
	}
	peer := c.R.PathValue("peer_id")
	if peer == "" || len(peer) > api.MaxPeerIDLen {
		return 0, nil, httpapi.NotFound("no such peer in the network")
	}
	reply, err := s.hubCommand(ctx, n, store.HubVerbKick, &store.HubKickRequest{Network: n.Name, PeerID: peer, Reason: req.Reason})
	if err != nil {
		return 0, nil, err
	}
	if reply.Kicked == 0 {
		return 0, nil, httpapi.NotFound("no such peer in the network")
	}
	return http.StatusNoContent, nil, nil
}

// ban: POST /p2p/v1/networks/{network}/bans {"username"}: the user may no
// longer join (the record says so) and the hub kicks the user's peers.
// The ban holds even when the hub does not answer (then 503, and the
// peers on it stay until they leave; call again).
func (s *Server) ban(ctx context.Context, c *httpapi.Call) (int, any, error) {
	var req api.P2PBanRequest
	if err := httpapi.DecodeBody(c.W, c.R, s.cfg.MaxBodyBytes, &req); err != nil {
		return 0, nil, err
	}
	if !httpapi.ValidUsername(req.Username) {
		return 0, nil, httpapi.Invalid("username must be 1 to %d of A-Z a-z 0-9 _ . -", api.MaxUsernameLen)
	}
	if _, err := s.loadNetwork(ctx, c); err != nil {
		return 0, nil, err
	}
	n, err := s.db.UpdateP2PNetwork(ctx, c.R.PathValue("network"), func(n *store.P2PNetwork) error {
		if n.Banned(req.Username) {
			return nil
		}
		if len(n.Bans) >= api.MaxBansLen {
			return httpapi.Conflict("the network has the most bans it may hold; lift one first", "")
		}
		n.Bans = append(n.Bans, req.Username)
		return nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil, httpapi.NotFound("network not found")
	}
	if err != nil {
		return 0, nil, err
	}
	if _, err := s.hubCommand(ctx, n, store.HubVerbKick, &store.HubKickRequest{Network: n.Name, Username: req.Username, Reason: "banned", Ban: true}); err != nil {
		return 0, nil, err
	}
	out := toJSON(n)
	return http.StatusOK, &out, nil
}

// unban: DELETE /p2p/v1/networks/{network}/bans/{username} (204, also
// when the user was not banned).
func (s *Server) unban(ctx context.Context, c *httpapi.Call) (int, any, error) {
	if _, err := s.loadNetwork(ctx, c); err != nil {
		return 0, nil, err
	}
	user := c.R.PathValue("username")
	_, err := s.db.UpdateP2PNetwork(ctx, c.R.PathValue("network"), func(n *store.P2PNetwork) error {
		n.Bans = slices.DeleteFunc(n.Bans, func(u string) bool { return u == user })
		return nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil, httpapi.NotFound("network not found")
	}
	if err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}
