package rooms

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/switchboardgg/switchboard/api"
)

// Session is a login session: what C0 returns. Its fields are plain and
// JSON-tagged, so an app saves it (json.Marshal) and restores it after a
// restart with [NewClient]: the seed's C3 finds the room again only within
// the same login session, and a new login is "another device" for C1.
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
	return fmt.Sprintf("rooms.Session{SessionID:%q Username:%q ExpiresAt:%s}", s.SessionID, s.Username, s.ExpiresAt.Format(time.RFC3339))
}

// LogValue logs s without its tokens.
func (s Session) LogValue() slog.Value {
	return slog.GroupValue(slog.String("session_id", s.SessionID), slog.String("username", s.Username))
}

// Client calls the player HTTP API (C0–C3) for one login session and
// connects rooms. It refreshes the access token shortly before it expires,
// and once more on a 401. A Client is safe for concurrent use and starts no
// goroutines.
type Client struct {
	// immutable after Login or NewClient
	cfg  Config
	base string
	log  *slog.Logger

	refreshMu sync.Mutex // serializes refreshes

	mu   sync.Mutex // guards sess
	sess Session
}

// Login opens a new login session (C0, POST /client/v1/sessions) for
// username with the auth token the game backend minted, and returns a Client
// for it. baseURL is the API root, such as "https://api.example.com"; cfg
// may be nil for the defaults.
func Login(ctx context.Context, baseURL, username, authToken string, cfg *Config) (*Client, error) {
	c, err := newClient(baseURL, cfg)
	if err != nil {
		return nil, err
	}
	req := api.LoginRequest{Username: username, AuthToken: authToken}
	var resp api.SessionResponse
	if _, err := c.do(ctx, http.MethodPost, "/client/v1/sessions", req, "", &resp); err != nil {
		return nil, fmt.Errorf("rooms: login: %w", err)
	}
	if resp.AccessToken == "" {
		return nil, errors.New("rooms: login: answer without access_token")
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

// NewClient returns a Client for a saved login session. It makes no call;
// an expired access token is refreshed on first use. cfg may be nil.
func NewClient(baseURL string, s Session, cfg *Config) (*Client, error) {
	c, err := newClient(baseURL, cfg)
	if err != nil {
		return nil, err
	}
	if s.AccessToken == "" && s.RefreshToken == "" {
		return nil, errors.New("rooms: session without tokens")
	}
	c.sess = s
	return c, nil
}

func newClient(baseURL string, cfg *Config) (*Client, error) {
	rc, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("rooms: base url %q: want http(s)://host", baseURL)
	}
	return &Client{cfg: rc, base: strings.TrimRight(baseURL, "/"), log: rc.Logger}, nil
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
		return fmt.Errorf("rooms: refresh: no refresh token: %w", ErrUnauthenticated)
	}
	var resp api.SessionResponse
	req := api.RefreshRequest{RefreshToken: s.RefreshToken}
	if _, err := c.do(ctx, http.MethodPost, "/client/v1/sessions/refresh", req, "", &resp); err != nil {
		return fmt.Errorf("rooms: refresh: %w", err)
	}
	if resp.AccessToken == "" {
		return errors.New("rooms: refresh: answer without access_token")
	}
	c.mu.Lock()
	c.sess.AccessToken = resp.AccessToken
	c.sess.ExpiresAt = resp.ExpiresAt.Time
	if resp.RefreshToken != "" {
		c.sess.RefreshToken = resp.RefreshToken
	}
	s = c.sess
	c.mu.Unlock()
	c.log.Debug("rooms: access token refreshed", "session", s)
	if f := c.cfg.SessionChanged; f != nil {
		f(s)
	}
	return nil
}

// Logout ends the login session (DELETE /client/v1/sessions/current). The
// Client is useless afterwards.
func (c *Client) Logout(ctx context.Context) error {
	if _, err := c.authed(ctx, http.MethodDelete, "/client/v1/sessions/current", nil, nil); err != nil {
		return fmt.Errorf("rooms: logout: %w", err)
	}
	return nil
}

// authed makes an authenticated call: it refreshes a token about to expire
// first, and refreshes and retries once on 401. It returns the HTTP status of
// a success.
func (c *Client) authed(ctx context.Context, method, path string, body, out any) (int, error) {
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
	status, err := c.do(ctx, method, path, body, s.AccessToken, out)
	if !errors.Is(err, ErrUnauthenticated) || s.RefreshToken == "" {
		return status, err
	}
	if rerr := c.refresh(ctx, s.AccessToken); rerr != nil {
		return 0, errors.Join(err, rerr)
	}
	c.mu.Lock()
	token := c.sess.AccessToken
	c.mu.Unlock()
	return c.do(ctx, method, path, body, token, out)
}

// do makes one HTTP call and returns the status of a success. A non-2xx
// answer is an *APIError.
func (c *Client) do(ctx context.Context, method, path string, body any, token string, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.cfg.MaxResponseBytes+1))
	if err != nil {
		return 0, err
	}
	if int64(len(data)) > c.cfg.MaxResponseBytes {
		return 0, fmt.Errorf("%s %s: response over %d bytes", method, path, c.cfg.MaxResponseBytes)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return 0, ParseAPIError(resp.StatusCode, data)
	}
	if out == nil || len(bytes.TrimSpace(data)) == 0 {
		return resp.StatusCode, nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return 0, fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return resp.StatusCode, nil
}

// ParseAPIError turns an HTTP error answer of Switchboard's APIs (the error
// JSON {"error": {"code", "message", "details": {"reason"}}}) into an
// [*APIError]. An answer that is not that JSON (a proxy's page) keeps the
// status with its status text. Package client/backend uses it too.
func ParseAPIError(status int, data []byte) *APIError {
	var body api.ErrorBody
	e := &APIError{Status: status}
	if json.Unmarshal(data, &body) == nil && body.Error.Code != "" {
		e.Code = body.Error.Code
		e.Message = body.Error.Message
		if body.Error.Details != nil {
			e.Reason = body.Error.Details.Reason
		}
	} else {
		e.Message = http.StatusText(status)
	}
	return e
}
