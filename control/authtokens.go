package control

import (
	"context"
	"net/http"
	"time"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/control/internal/httpapi"
	"github.com/switchboardgg/switchboard/tokens"
)

// createAuthToken: POST /server/v1/auth-tokens.
func (s *Server) createAuthToken(_ context.Context, c *httpapi.Call) (int, any, error) {
	var req api.AuthTokenRequest
	if err := httpapi.DecodeBody(c.W, c.R, s.cfg.MaxBodyBytes, &req); err != nil {
		return 0, nil, err
	}
	if !httpapi.ValidUsername(req.Username) {
		return 0, nil, httpapi.Invalid("username must be 1 to %d characters of A-Z a-z 0-9 _ . -", api.MaxUsernameLen)
	}
	ttl, err := httpapi.TTLSeconds("ttl_seconds", req.TTLSeconds, s.cfg.AuthTokenTTL, s.cfg.MaxAuthTokenTTL)
	if err != nil {
		return 0, nil, err
	}
	exp := c.Now.Add(ttl).Truncate(time.Second)
	tok, err := s.authSigner.SignAuthToken(tokens.AuthToken{Username: req.Username, Expires: exp.Unix()})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, &api.AuthTokenResponse{AuthToken: tok, ExpiresAt: api.NewTime(exp)}, nil
}
