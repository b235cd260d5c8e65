package p2papi

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/control/internal/httpapi"
	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/tokens"
)

// peerIDRandomBytes is the randomness of a peer id after the '~': 6
// bytes, 8 characters of base64url.
const peerIDRandomBytes = 6

// join: POST /p2p/v1/join. The checks run in this order: rate → fields →
// network (made by this join when it does not exist and no code was
// given) → ban → allow list → join code → hub; then the answer carries a
// new peer id and a hub ticket naming it.
func (s *Server) join(ctx context.Context, c *httpapi.Call) (int, any, error) {
	if ok, wait := s.joinLimit.Take(c.Session.SessionID, c.Now); !ok {
		return 0, nil, httpapi.RateLimited(wait)
	}
	var req api.P2PJoinRequest
	if err := httpapi.DecodeBody(c.W, c.R, s.cfg.MaxBodyBytes, &req); err != nil {
		return 0, nil, err
	}
	code := strings.ToUpper(req.JoinCode)
	switch {
	case req.Network == "" && code == "":
		return 0, nil, httpapi.Invalid("give network, join_code or both")
	case req.Network != "" && !ValidNetworkName(req.Network):
		return 0, nil, httpapi.Invalid("network must be 1 to %d of A-Z a-z 0-9 _ -", api.MaxNetworkNameLen)
	case req.JoinCode != "" && !ValidJoinCode(code):
		return 0, nil, httpapi.Invalid("join_code must be %d of %s", api.JoinCodeLen, api.JoinCodeAlphabet)
	}
	name := req.Network
	if code != "" {
		byCode, err := s.db.P2PNetworkByCode(ctx, tokens.Hash(code))
		switch {
		case errors.Is(err, store.ErrNotFound) && name == "":
			return 0, nil, httpapi.NotFound("no network has this join code")
		case errors.Is(err, store.ErrNotFound), err == nil && name != "" && byCode != name:
			return 0, nil, &httpapi.Error{Status: http.StatusForbidden, Code: api.CodePermissionDenied,
				Message: "the join code is not this network's", Reason: api.ReasonJoinCodeRequired}
		case err != nil:
			return 0, nil, err
		}
		name = byCode
	}
	n, err := s.db.GetP2PNetwork(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		if code != "" {
			return 0, nil, httpapi.NotFound("no network has this join code")
		}
		n, err = s.createOnJoin(ctx, name, c.Session.Username, c.Now)
	}
	if err != nil {
		return 0, nil, err
	}
	if err := admits(n, c.Session.Username, code); err != nil {
		return 0, nil, err
	}
	hub, n, err := s.networkHub(ctx, n, c.Now)
	if err != nil {
		return 0, nil, err
	}
	if err := s.checkCap(ctx, n); err != nil {
		return 0, nil, err
	}
	if c.Now.Sub(n.TouchedAt) >= store.P2PTouchInterval {
		s.touch(ctx, n.Name, c.Now)
	}
	peerID := c.Session.Username + "~" + tokens.Random(peerIDRandomBytes)
	exp := c.Now.Add(api.HubTicketTTL)
	ticket, err := s.tickets.Seal(tokens.HubTicket{
		Username: c.Session.Username, Network: n.Name, PeerID: peerID, HubID: hub.NodeID,
		Issued: c.Now, Expires: exp,
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, &api.P2PJoinResponse{
		Network:   n.Name,
		PeerID:    peerID,
		Hub:       api.P2PHub{NodeID: hub.NodeID, Address: hub.Addresses[store.HubAddressTLS], CertSHA256: hub.Addresses[store.HubAddressCertSHA256]},
		Ticket:    ticket,
		ExpiresAt: api.NewTime(exp),
	}, nil
}

// capCheckTimeout bounds the wait for the hub's peer count at a join.
const capCheckTimeout = time.Second

// checkCap refuses a join when the network's hub reports max_peers peers
// already. Joins in flight at once may overshoot the network's cap; the
// hub's own cap (p2p.Config.MaxPeersPerNetwork) holds whatever happens. A
// hub that does not answer is not asked: its own cap then applies.
func (s *Server) checkCap(ctx context.Context, n *store.P2PNetwork) error {
	ctx, cancel := context.WithTimeout(ctx, min(capCheckTimeout, s.cfg.CommandTimeout))
	defer cancel()
	reply, err := store.SendHubCommand(ctx, s.bb, n.HubID, store.HubVerbPeers, &store.HubPeersRequest{Network: n.Name})
	if err != nil {
		if !errors.Is(err, store.ErrNodeUnavailable) {
			s.log.Warn("p2p join: peer count", "network", n.Name, "hub", n.HubID, "err", err)
		}
		return nil
	}
	if len(reply.Peers) >= n.MaxPeers {
		return httpapi.Conflict("the network has its maximum number of peers", api.ReasonNetworkFull)
	}
	return nil
}

// admits checks a join of username, with join code code (upper case),
// against the network's rules.
func admits(n *store.P2PNetwork, username, code string) error {
	switch {
	case n.Banned(username):
		return &httpapi.Error{Status: http.StatusForbidden, Code: api.CodePermissionDenied,
			Message: "banned from this network", Reason: api.ReasonBanned}
	case !n.Allowed(username):
		return &httpapi.Error{Status: http.StatusForbidden, Code: api.CodePermissionDenied,
			Message: "not on this network's allow list", Reason: api.ReasonNotAllowed}
	case n.JoinCodeHash != "" && (code == "" || tokens.Hash(code) != n.JoinCodeHash):
		return &httpapi.Error{Status: http.StatusForbidden, Code: api.CodePermissionDenied,
			Message: "this network needs its join code", Reason: api.ReasonJoinCodeRequired}
	}
	return nil
}

// createOnJoin makes the network a join names, open to all, on the least
// loaded hub; when another join made it first, it returns that one.
func (s *Server) createOnJoin(ctx context.Context, name, username string, now time.Time) (*store.P2PNetwork, error) {
	hub, err := s.pickHub(ctx)
	if err != nil {
		return nil, err
	}
	n := &store.P2PNetwork{Name: name, HubID: hub.NodeID, MaxPeers: s.cfg.MaxPeers,
		CreatedBy: username, CreatedAt: now.UTC(), TouchedAt: now.UTC()}
	err = s.db.CreateP2PNetwork(ctx, n)
	if errors.Is(err, store.ErrExists) {
		return s.db.GetP2PNetwork(ctx, name)
	}
	if err != nil {
		return nil, err
	}
	return n, nil
}

// touch rewrites the network's record so that it does not expire while
// it is used; a failure only shortens its life, so it is logged.
func (s *Server) touch(ctx context.Context, name string, now time.Time) {
	_, err := s.db.UpdateP2PNetwork(ctx, name, func(n *store.P2PNetwork) error {
		n.TouchedAt = now.UTC()
		return nil
	})
	if err != nil {
		s.log.Warn("p2p join: touch network", "network", name, "err", err)
	}
}

// ValidNetworkName reports whether s is 1–api.MaxNetworkNameLen of
// [A-Za-z0-9_-].
func ValidNetworkName(s string) bool {
	return httpapi.ValidRoomID(s) && len(s) <= api.MaxNetworkNameLen
}

// ValidJoinCode reports whether s (upper case) is a join code's form.
func ValidJoinCode(s string) bool {
	if len(s) != api.JoinCodeLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !strings.ContainsRune(api.JoinCodeAlphabet, rune(s[i])) {
			return false
		}
	}
	return true
}

// newJoinCode returns a random join code, each character uniform over
// api.JoinCodeAlphabet (about 43 bits).
func newJoinCode() string {
	const alpha = api.JoinCodeAlphabet
	limit := byte(256 - 256%len(alpha))
	out := make([]byte, 0, api.JoinCodeLen)
	var b [32]byte
	for len(out) < api.JoinCodeLen {
		_, _ = rand.Read(b[:]) // crypto/rand documents failure as fatal
		for _, c := range b {
			if c < limit && len(out) < api.JoinCodeLen {
				out = append(out, alpha[int(c)%len(alpha)])
			}
		}
	}
	return string(out)
}
