package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/switchboardgg/switchboard/store"
)

// AuthKind says how a route authenticates its caller.
type AuthKind int

// The ways a route authenticates its caller.
const (
	AuthNone   AuthKind = iota
	AuthServer          // Authorization: Bearer <server api key>
	AuthClient          // Authorization: Bearer <access token>
	// AuthClientRecent is AuthClient that takes the login session from
	// the copy this process has, when it has one, instead of reading it
	// (Call.SessionRecent). Only for a handler that writes the session
	// with a compare-and-set before its effects take hold, which proves
	// the session still exists (logout revokes) or reads it afresh.
	AuthClientRecent
)

// Call is one request as a handler sees it.
type Call struct {
	W       http.ResponseWriter
	R       *http.Request
	Session *store.Session // AuthClient and AuthClientRecent routes only
	// SessionRecent reports that Session is this process's copy of the
	// login session, not read for this call (AuthClientRecent): the
	// session may have ended since, which the handler must rule out.
	SessionRecent bool
	Now           time.Time
}

// HandlerFunc answers a request with a status and a value to encode as
// JSON (nil: no body), or an error: an *Error is answered as is,
// anything else is logged and answered 500 internal.
type HandlerFunc func(ctx context.Context, c *Call) (int, any, error)

// Route is one endpoint of an API: method and ServeMux pattern, how it
// authenticates, and its handler.
type Route struct {
	Method, Path string
	Auth         AuthKind
	H            HandlerFunc
}

// Wrapper turns handlers into endpoints. Its fields are set once, before
// the first call of Endpoint.
type Wrapper struct {
	Log            *slog.Logger
	Metrics        *Metrics // nil: no metrics
	RequestTimeout time.Duration
	Now            func() time.Time
	// AuthServer checks the server API key of an AuthServer route.
	AuthServer func(r *http.Request) error
	// AuthClient checks the access token of an AuthClient route and
	// returns its login session.
	AuthClient func(ctx context.Context, r *http.Request, now time.Time) (*store.Session, error)
	// AuthClientRecent checks the access token of an AuthClientRecent
	// route and returns its login session, and whether that is this
	// process's copy (not read). Nil means AuthClient.
	AuthClientRecent func(ctx context.Context, r *http.Request, now time.Time) (sess *store.Session, recent bool, err error)
}

// Endpoint wraps a handler with authentication, a deadline, panic
// recovery, error JSON, logging and metrics.
func (wr *Wrapper) Endpoint(name string, auth AuthKind, h HandlerFunc) http.Handler {
	metrics := wr.Metrics.Route(name)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		status := http.StatusInternalServerError
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				wr.Log.Error("handler panic", "route", name, "panic", fmt.Sprint(v))
				WriteJSON(w, ErrInternal.Status, ErrInternal.Body())
			}
			metrics.Observe(status, time.Since(start))
		}()
		ctx, cancel := context.WithTimeout(r.Context(), wr.RequestTimeout)
		defer cancel()
		c := &Call{W: w, R: r, Now: wr.Now()}
		var (
			body any
			err  error
		)
		switch auth {
		case AuthServer:
			err = wr.AuthServer(r)
		case AuthClient:
			c.Session, err = wr.AuthClient(ctx, r, c.Now)
		case AuthClientRecent:
			if wr.AuthClientRecent == nil {
				c.Session, err = wr.AuthClient(ctx, r, c.Now)
				break
			}
			c.Session, c.SessionRecent, err = wr.AuthClientRecent(ctx, r, c.Now)
		}
		if err == nil {
			status, body, err = h(ctx, c)
		}
		if err != nil {
			var ae *Error
			if !errors.As(err, &ae) {
				if ctx.Err() != nil && r.Context().Err() == nil {
					wr.Log.Warn("request timed out", "route", name, "err", err)
					ae = Unavailable("the request timed out", "")
				} else {
					wr.Log.Error("request failed", "route", name, "err", err)
					ae = ErrInternal
				}
			}
			status = ae.Status
			if ae.RetryAfter > 0 {
				w.Header().Set("Retry-After", ae.retryAfter())
			}
			WriteJSON(w, status, ae.Body())
			return
		}
		if body == nil {
			w.WriteHeader(status)
			return
		}
		WriteJSON(w, status, body)
	})
}
