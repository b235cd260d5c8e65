package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/switchboardgg/switchboard/api"
)

// Session is a login session: what C0 returns. Its fields are plain and
// JSON-tagged, so an app saves it (json.Marshal) and restores it after a
// restart with [New]: C3 finds a room again only within the same login
// session, and a new login is "another device" for C1.
//
// Session holds secrets. Its String and LogValue methods hide the tokens;
// store the JSON where the platform keeps credentials.
type Session struct {
	SessionID    string    `json:"session_id"`
	Username     string    `json:"username"`
	AccessToken  string    `json:"access_token"`
	RefreshToken string    `json:"refresh_token"`
	ExpiresAt    time.Time `json:"expires_at"` // of the access token; zero if unknown
}

// String describes s without its tokens.
func (s Session) String() string {
	return fmt.Sprintf("Session{SessionID:%q Username:%q ExpiresAt:%s}", s.SessionID, s.Username, s.ExpiresAt.Format(time.RFC3339))
}

// LogValue logs s without its tokens.
func (s Session) LogValue() slog.Value {
	return slog.GroupValue(slog.String("session_id", s.SessionID), slog.String("username", s.Username))
}

// Client makes the calls of one login session. It refreshes the access
// token shortly before it expires, and once more on a 401. A Client is
// safe for concurrent use and starts no goroutines.
type Client struct {
	// immutable after Login or New
	cfg    Config
	caller *Caller

	refreshMu sync.Mutex // serializes refreshes

	mu   sync.Mutex // guards sess
	sess Session
}

// Login opens a new login session (C0, POST /client/v1/sessions) for
// username with the auth token the game backend minted ("" only where the
// server allows anonymous logins), and returns a Client for it. baseURL is
// the API root, such as "https://api.example.com"; cfg may be nil.
func Login(ctx context.Context, baseURL, username, authToken string, cfg *Config) (*Client, error) {
	c, err := newClient(baseURL, cfg)
	if err != nil {
		return nil, err
	}
	var resp api.SessionResponse
	req := api.LoginRequest{Username: username, AuthToken: authToken}
	if _, err := c.caller.Do(ctx, http.MethodPost, "/client/v1/sessions", "", req, &resp); err != nil {
		return nil, fmt.Errorf("login: %w", err)
	}
	if resp.AccessToken == "" {
		return nil, errors.New("login: answer without access_token")
	}
	c.sess = Session{
		SessionID:    resp.SessionID,
		Username:     resp.User.Username,
		AccessToken:  resp.AccessToken,
		RefreshToken: resp.RefreshToken,
		ExpiresAt:    resp.ExpiresAt.Time,
	}
	if c.sess.Username == "" {
		c.sess.Username = username
	}
	return c, nil
}

// New returns a Client for a saved login session. It makes no call; an
// expired access token is refreshed on first use. cfg may be nil.
func New(baseURL string, s Session, cfg *Config) (*Client, error) {
	c, err := newClient(baseURL, cfg)
	if err != nil {
		return nil, err
	}
	if s.AccessToken == "" && s.RefreshToken == "" {
		return nil, errors.New("session without tokens")
	}
	c.sess = s
	return c, nil
}

func newClient(baseURL string, cfg *Config) (*Client, error) {
	caller, err := NewCaller(baseURL, cfg)
	if err != nil {
		return nil, err
	}
	return &Client{cfg: caller.cfg, caller: caller}, nil
}

// Session returns the current login session, with the newest tokens.
func (c *Client) Session() Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess
}

// Refresh renews the access token (POST /client/v1/sessions/refresh). The
// client does this by itself; call it to renew ahead of time. A refresh
// token the server no longer accepts fails with ErrUnauthenticated.
func (c *Client) Refresh(ctx context.Context) error {
	c.mu.Lock()
	old := c.sess.AccessToken
	c.mu.Unlock()
	return c.refresh(ctx, old)
}

// refresh renews the access token unless another caller already replaced
// old while this one waited.
func (c *Client) refresh(ctx context.Context, old string) error {
	c.refreshMu.Lock()
	defer c.refreshMu.Unlock()
	c.mu.Lock()
	s := c.sess
	c.mu.Unlock()
	if s.AccessToken != old {
		return nil
	}
	if s.RefreshToken == "" {
		return fmt.Errorf("refresh: no refresh token: %w", ErrUnauthenticated)
	}
	var resp api.SessionResponse
	req := api.RefreshRequest{RefreshToken: s.RefreshToken}
	if _, err := c.caller.Do(ctx, http.MethodPost, "/client/v1/sessions/refresh", "", req, &resp); err != nil {
		return fmt.Errorf("refresh: %w", err)
	}
	if resp.AccessToken == "" {
		return errors.New("refresh: answer without access_token")
	}
	c.mu.Lock()
	c.sess.AccessToken = resp.AccessToken
	c.sess.ExpiresAt = resp.ExpiresAt.Time
	if resp.RefreshToken != "" {
		c.sess.RefreshToken = resp.RefreshToken
	}
	s = c.sess
	c.mu.Unlock()
	c.cfg.Logger.Debug("access token refreshed", "session", s)
	if f := c.cfg.SessionChanged; f != nil {
		f(s)
	}
	return nil
}

// Logout ends the login session (DELETE /client/v1/sessions/current). The
// Client is useless afterwards.
func (c *Client) Logout(ctx context.Context) error {
	if _, err := c.Do(ctx, http.MethodDelete, "/client/v1/sessions/current", nil, nil); err != nil {
		return fmt.Errorf("logout: %w", err)
	}
	return nil
}

// Do makes an authenticated call with the access token, as [Caller.Do]
// does: it refreshes a token about to expire first, and refreshes and
// retries once on a 401. It returns the HTTP status of a success; after a
// failed refresh the error matches ErrUnauthenticated.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) (int, error) {
	c.mu.Lock()
	s := c.sess
	c.mu.Unlock()
	if !s.ExpiresAt.IsZero() && c.cfg.Now().Add(c.cfg.RefreshBefore).After(s.ExpiresAt) && s.RefreshToken != "" {
		if err := c.refresh(ctx, s.AccessToken); err != nil {
			return 0, err
		}
		c.mu.Lock()
		s = c.sess
		c.mu.Unlock()
	}
	status, err := c.caller.Do(ctx, method, path, s.AccessToken, body, out)
	if !errors.Is(err, ErrUnauthenticated) || s.RefreshToken == "" {
		return status, err
	}
	if rerr := c.refresh(ctx, s.AccessToken); rerr != nil {
		return 0, errors.Join(err, rerr)
	}
	c.mu.Lock()
	token := c.sess.AccessToken
	c.mu.Unlock()
	return c.caller.Do(ctx, method, path, token, body, out)
}
