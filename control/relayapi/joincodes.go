package relayapi

import (
	"context"
	"encoding/hex"
	"errors"
	"net/http"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/store"
)

// The join code routes beyond Unity's (issue 9 items 4–5): a code's
// status, its revocation, and the claim of a held code (host migration).
const (
	joinCodePrefix = "/relay/v1/joincode/"
	joinCodePath   = joinCodePrefix + "{code}"
)

// joinCodeStatus: GET /relay/v1/joincode/{code}, for any authenticated
// caller. It counts against the per-address join limit too: a status
// tells whether a code exists, so it must not walk the code space faster
// than joins can.
func (s *Server) joinCodeStatus(ctx context.Context, c *call) (int, any, error) {
	if err := s.takeJoin(c); err != nil {
		return 0, nil, err
	}
	code, ok := normalizeCode(c.param)
	if !ok {
		return 0, nil, notFound(api.RelayCodeJoinCodeNotFound, "no such join code")
	}
	jc, host, _, err := s.liveCode(ctx, code, c.now)
	if err != nil {
		return 0, nil, err
	}
	id, _ := hex.DecodeString(jc.HostAllocationID)
	var id16 [16]byte
	copy(id16[:], id)
	out := api.RelayJoinCodeStatus{
		JoinCode: code, Status: api.RelayJoinCodeActive, HostAllocationID: uuidString(id16),
		Region: jc.Region, ExpiresAt: api.NewTime(jc.ExpiresAt), HostMigration: jc.Migration,
	}
	if host == nil {
		out.Status, out.ExpiresAt = api.RelayJoinCodeMigrating, api.NewTime(jc.HeldUntil)
	}
	return http.StatusOK, &api.RelayJoinCodeStatusData{JoinCode: out}, nil
}

// revokeJoinCode: DELETE /relay/v1/joincode/{code}, by its creator only.
// The host keeps running; a revoked code is unknown from then on. Its
// answer (403 or 404) tells whether a code exists: it counts against the
// per-address join limit, as a status does.
func (s *Server) revokeJoinCode(ctx context.Context, c *call) (int, any, error) {
	if err := s.takeJoin(c); err != nil {
		return 0, nil, err
	}
	errNotFound := notFound(api.RelayCodeJoinCodeNotFound, "no such join code")
	code, ok := normalizeCode(c.param)
	if !ok {
		return 0, nil, errNotFound
	}
	err := s.db.RevokeRelayJoinCode(ctx, code, c.who.owner)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return 0, nil, errNotFound
	case errors.Is(err, store.ErrForbidden):
		return 0, nil, &problem{status: http.StatusForbidden, code: api.RelayCodeForbidden,
			detail: "only the caller that created a join code may revoke it"}
	case err != nil:
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}

// claimJoinCode serves POST /relay/v1/joincode with joinCode and
// previousAllocationId: host allocation id (the caller's, live, with no
// join code of its own) takes over code, held since its host died, if the
// caller joined with code as prev. Its answers tell whether a code
// exists: it counts against the per-address join limit, as a status does.
func (s *Server) claimJoinCode(ctx context.Context, c *call, id [16]byte, req *api.RelayJoinCodeRequest) (int, any, error) {
	if err := s.takeJoin(c); err != nil {
		return 0, nil, err
	}
	errNotFound := notFound(api.RelayCodeJoinCodeNotFound, "no such join code")
	code, ok := normalizeCode(req.JoinCode)
	if !ok {
		return 0, nil, errNotFound
	}
	prev, ok := parseUUID(req.PreviousAllocationID)
	if !ok {
		return 0, nil, invalid("previousAllocationId must be a UUID")
	}
	a, err := s.db.GetRelayAllocation(ctx, hex.EncodeToString(id[:]))
	if errors.Is(err, store.ErrNotFound) || err == nil && (a.Owner != c.who.owner || a.HostAllocationID != "") {
		return 0, nil, notFound(api.RelayCodeAllocationNotFound, "no such allocation")
	}
	if err != nil {
		return 0, nil, err
	}
	if a.JoinCode != "" && a.JoinCode != code {
		return 0, nil, invalid("allocation %s has a join code already", req.AllocationID)
	}
	if n, err := s.liveNode(ctx, a.NodeID, a.BootEpoch); err != nil {
		return 0, nil, err
	} else if n == nil || !c.now.Before(a.ExpiresAt) {
		return 0, nil, notFound(api.RelayCodeAllocationNotFound, "no such allocation")
	}
	err = s.db.ClaimRelayJoinCode(ctx, code, a, hex.EncodeToString(prev[:]), c.who.owner, c.now)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return 0, nil, errNotFound
	case errors.Is(err, store.ErrTaken):
		return 0, nil, &problem{status: http.StatusConflict, code: api.RelayCodeJoinCodeTaken,
			detail: "another peer took this join code over first; join it"}
	case errors.Is(err, store.ErrNotHeld):
		return 0, nil, &problem{status: http.StatusConflict, code: api.RelayCodeJoinCodeNotHeld,
			detail: "the host of this join code is alive, or its end is not recorded yet; retry shortly"}
	case errors.Is(err, store.ErrForbidden):
		return 0, nil, &problem{status: http.StatusForbidden, code: api.RelayCodeForbidden,
			detail: "previousAllocationId did not join with this code as the caller"}
	case err != nil:
		return 0, nil, err
	}
	s.log.Info("relay join code taken over", "host_allocation", req.AllocationID)
	return http.StatusOK, &api.RelayJoinCodeData{JoinCode: code}, nil
}
