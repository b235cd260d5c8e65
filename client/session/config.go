package session

import (
	"log/slog"
	"net/http"
	"time"
)

// Defaults of [Config].
const (
	// DefaultHTTPTimeout is the timeout of the HTTP client made when
	// Config.HTTPClient is nil.
	DefaultHTTPTimeout = 15 * time.Second
	// DefaultRefreshBefore is how long before its expiry the access token
	// is refreshed.
	DefaultRefreshBefore = time.Minute
	// DefaultMaxResponseBytes caps an answer's body.
	DefaultMaxResponseBytes = 1 << 20
)

// Config configures a [Client] or a [Caller]. The zero value works: every
// zero field takes the default named in its comment. The Config is
// copied; changing it afterwards has no effect.
type Config struct {
	// HTTPClient makes the HTTP calls. Nil means a client with a
	// DefaultHTTPTimeout timeout.
	HTTPClient *http.Client
	// MaxResponseBytes caps an answer's body; a larger one is an error.
	// Zero means DefaultMaxResponseBytes (1 MiB).
	MaxResponseBytes int64
	// RefreshBefore is how long before the access token expires the
	// client refreshes it. Zero means DefaultRefreshBefore (1 min).
	RefreshBefore time.Duration
	// SessionChanged, when set, is called with the new session after each
	// refresh of the tokens, so an app can save it. It must not block.
	SessionChanged func(Session)
	// Logger receives rare events (a refresh), never tokens. Nil means
	// slog.Default().
	Logger *slog.Logger
	// Now is the clock of token expiry. Nil means time.Now.
	Now func() time.Time
}

// resolve returns a copy of c with the defaults filled in.
func (c *Config) resolve() Config {
	var r Config
	if c != nil {
		r = *c
	}
	if r.HTTPClient == nil {
		r.HTTPClient = &http.Client{Timeout: DefaultHTTPTimeout}
	}
	if r.MaxResponseBytes <= 0 {
		r.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if r.RefreshBefore <= 0 {
		r.RefreshBefore = DefaultRefreshBefore
	}
	if r.Logger == nil {
		r.Logger = slog.Default()
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	return r
}
