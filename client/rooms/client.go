package rooms

import (
	"context"
	"log/slog"

	"github.com/switchboardgg/switchboard/client/session"
)

// Session is a login session: what C0 returns (package session's). An app
// saves it and restores it with [NewClient].
type Session = session.Session

// Client calls the player HTTP API (C1–C3) for one login session and
// connects rooms. The login session itself — login, refresh, logout — is a
// [session.Client], which other SDKs (relay, P2P) can share. A Client is
// safe for concurrent use and starts no goroutines.
type Client struct {
	// immutable after Login, NewClient or FromSession
	cfg Config
	log *slog.Logger
	sc  *session.Client
}

// Login opens a new login session (C0, POST /client/v1/sessions) for
// username with the auth token the game backend minted, and returns a Client
// for it. baseURL is the API root, such as "https://api.example.com"; cfg
// may be nil for the defaults.
func Login(ctx context.Context, baseURL, username, authToken string, cfg *Config) (*Client, error) {
	rc, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	sc, err := session.Login(ctx, baseURL, username, authToken, rc.sessionConfig())
	if err != nil {
		return nil, err
	}
	return &Client{cfg: rc, log: rc.Logger, sc: sc}, nil
}

// NewClient returns a Client for a saved login session. It makes no call;
// an expired access token is refreshed on first use. cfg may be nil.
func NewClient(baseURL string, s Session, cfg *Config) (*Client, error) {
	rc, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	sc, err := session.New(baseURL, s, rc.sessionConfig())
	if err != nil {
		return nil, err
	}
	return &Client{cfg: rc, log: rc.Logger, sc: sc}, nil
}

// FromSession returns a Client that makes its calls with the login
// session sc, shared with other SDKs. The HTTP settings of cfg
// (HTTPClient, MaxResponseBytes, RefreshBefore, SessionChanged) are sc's
// and ignored here; cfg may be nil.
func FromSession(sc *session.Client, cfg *Config) (*Client, error) {
	rc, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	return &Client{cfg: rc, log: rc.Logger, sc: sc}, nil
}

// SessionClient returns the login session the Client calls with.
func (c *Client) SessionClient() *session.Client { return c.sc }

// Session returns the current login session, with the newest tokens.
func (c *Client) Session() Session { return c.sc.Session() }

// Refresh renews the access token (POST /client/v1/sessions/refresh). The
// client does this by itself; call it to renew ahead of time. A refresh
// token the server no longer accepts fails with ErrUnauthenticated.
func (c *Client) Refresh(ctx context.Context) error { return c.sc.Refresh(ctx) }

// Logout ends the login session (DELETE /client/v1/sessions/current). The
// Client is useless afterwards.
func (c *Client) Logout(ctx context.Context) error { return c.sc.Logout(ctx) }
