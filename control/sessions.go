package control

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/control/internal/httpapi"
	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/tokens"
)

// sessionLifetime is how long a login session lasts after login or its
// last refresh: the sessions bucket's TTL.
const sessionLifetime = store.DefaultSessionTTL

// login is C0: POST /client/v1/sessions. Each success opens a new login
// session.
func (s *Server) login(ctx context.Context, c *httpapi.Call) (int, any, error) {
	if err := s.allowLogin(c); err != nil {
		return 0, nil, err
	}
	var req api.LoginRequest
	if err := httpapi.DecodeBody(c.W, c.R, s.cfg.MaxBodyBytes, &req); err != nil {
		return 0, nil, err
	}
	if !httpapi.ValidUsername(req.Username) {
		return 0, nil, httpapi.Invalid("username must be 1 to %d characters of A-Z a-z 0-9 _ . -", api.MaxUsernameLen)
	}
	if len(req.AuthToken) > tokens.MaxTokenLen {
		return 0, nil, httpapi.Invalid("auth_token is longer than %d bytes", tokens.MaxTokenLen)
	}
	switch {
	case req.AuthToken != "":
		at, err := s.authSigner.VerifyAuthToken(req.AuthToken, c.Now)
		if errors.Is(err, tokens.ErrExpired) {
			return 0, nil, httpapi.Unauthenticated("auth token expired")
		}
		if err != nil {
			return 0, nil, httpapi.Unauthenticated("invalid auth token")
		}
		if at.Username != req.Username {
			return 0, nil, httpapi.Unauthenticated("auth token is for another username")
		}
	case !s.cfg.AllowAnonymous:
		return 0, nil, httpapi.Unauthenticated("auth_token is required")
	}

	sess := &store.Session{
		SessionID: tokens.NewID(),
		Username:  req.Username,
		CreatedAt: c.Now.UTC(),
		ExpiresAt: c.Now.Add(sessionLifetime).UTC(),
	}
	refresh := newRefreshToken(sess.SessionID)
	sess.RefreshHash = tokens.Hash(refresh)
	if err := s.db.CreateSession(ctx, sess); err != nil {
		return 0, nil, err
	}
	resp, err := s.sessionResponse(c, sess, refresh)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, resp, nil
}

// refresh rotates the refresh token and returns a new access token for
// the same login session: POST /client/v1/sessions/refresh.
func (s *Server) refresh(ctx context.Context, c *httpapi.Call) (int, any, error) {
	if err := s.allowLogin(c); err != nil {
		return 0, nil, err
	}
	var req api.RefreshRequest
	if err := httpapi.DecodeBody(c.W, c.R, s.cfg.MaxBodyBytes, &req); err != nil {
		return 0, nil, err
	}
	if req.RefreshToken == "" {
		return 0, nil, httpapi.Invalid("refresh_token is required")
	}
	if len(req.RefreshToken) > tokens.MaxTokenLen {
		return 0, nil, httpapi.Invalid("refresh_token is longer than %d bytes", tokens.MaxTokenLen)
	}
	denied := httpapi.Unauthenticated("invalid refresh token")
	sid, ok := refreshSessionID(req.RefreshToken)
	if !ok {
		return 0, nil, denied
	}
	oldHash := tokens.Hash(req.RefreshToken)
	next := newRefreshToken(sid)
	sess, err := s.db.UpdateSession(ctx, sid, func(sess *store.Session) error {
		// Refresh also ends the session at its absolute lifetime.
		if subtle.ConstantTimeCompare([]byte(sess.RefreshHash), []byte(oldHash)) != 1 || !sess.Refresh(c.Now, sessionLifetime) {
			return denied
		}
		sess.RefreshHash = tokens.Hash(next)
		return nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil, denied
	}
	if err != nil {
		return 0, nil, err
	}
	resp, err := s.sessionResponse(c, sess, next)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, resp, nil
}

// logout ends the caller's login session: DELETE
// /client/v1/sessions/current. Its access and refresh tokens stop working.
func (s *Server) logout(ctx context.Context, c *httpapi.Call) (int, any, error) {
	if err := s.db.DeleteSession(ctx, c.Session.SessionID); err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}

func (s *Server) sessionResponse(c *httpapi.Call, sess *store.Session, refresh string) (*api.SessionResponse, error) {
	exp := c.Now.Add(s.cfg.AccessTokenTTL)
	at, err := s.signer.SignAccessToken(tokens.AccessToken{SessionID: sess.SessionID, Username: sess.Username, ExpiresMS: exp.UnixMilli()})
	if err != nil {
		return nil, err
	}
	return &api.SessionResponse{
		AccessToken:  at,
		RefreshToken: refresh,
		ExpiresAt:    api.NewTime(exp),
		SessionID:    sess.SessionID,
		User:         api.User{Username: sess.Username},
	}, nil
}

// newRefreshToken returns "rf1_<session_id>.<32 random bytes>". The
// session id lets refresh find the session; the random part, whose
// SHA-256 the session stores, is the secret.
func newRefreshToken(sessionID string) string {
	return tokens.PrefixRefreshToken + sessionID + "." + tokens.Random(32)
}

// refreshSessionID returns the session id inside a refresh token.
func refreshSessionID(tok string) (string, bool) {
	rest, ok := strings.CutPrefix(tok, tokens.PrefixRefreshToken)
	if !ok {
		return "", false
	}
	sid, secret, ok := strings.Cut(rest, ".")
	if !ok || sid == "" || secret == "" || len(sid) > store.MaxIDLength {
		return "", false
	}
	return sid, true
}
