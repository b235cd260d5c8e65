package control

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/switchboardgg/switchboard/backbone"
	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/tokens"
)

// Server serves the HTTP APIs of the rooms pillar. Its methods are safe
// for concurrent use.
type Server struct {
	// immutable after New
	cfg        Config
	log        *slog.Logger
	db         *store.DB
	bb         *backbone.Conn
	signer     *tokens.Signer // signing key: access tokens, connect tickets
	authSigner *tokens.Signer // server API key: auth tokens
	keyHash    [sha256.Size]byte
	metrics    *metrics
	loginLimit *keyedLimiter
	joinLimit  *keyedLimiter
	handler    http.Handler
	srv        *http.Server
}

// authKind says how a route authenticates its caller.
type authKind int

const (
	authNone   authKind = iota
	authServer          // Authorization: Bearer <server api key>
	authClient          // Authorization: Bearer <access token>
)

// call is one request as a handler sees it.
type call struct {
	w       http.ResponseWriter
	r       *http.Request
	session *store.Session // authClient routes only
	now     time.Time
}

// handlerFunc answers a request with a status and a value to encode as
// JSON (nil: no body), or an error: an *apiError is answered as is,
// anything else is logged and answered 500 internal.
type handlerFunc func(ctx context.Context, c *call) (int, any, error)

type route struct {
	method, path string
	auth         authKind
	h            handlerFunc
}

// routeUnmatched labels the metrics of requests no route matched.
const routeUnmatched = "unmatched"

// New checks cfg and returns a Server. It starts nothing: serve
// [Server.Handler] yourself or call [Server.Serve].
func New(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	switch {
	case cfg.DB == nil:
		return nil, fmt.Errorf("control: %w: DB is nil", ErrConfig)
	case cfg.Backbone == nil:
		return nil, fmt.Errorf("control: %w: Backbone is nil", ErrConfig)
	case cfg.Signer == nil:
		return nil, fmt.Errorf("control: %w: Signer is nil", ErrConfig)
	case len(cfg.ServerKey) < tokens.MinKeyLen:
		return nil, fmt.Errorf("control: %w: ServerKey is shorter than %d bytes", ErrConfig, tokens.MinKeyLen)
	}
	authSigner, err := tokens.NewSigner([]byte(cfg.ServerKey))
	if err != nil {
		return nil, fmt.Errorf("control: server key: %w", err)
	}
	s := &Server{
		cfg:        cfg,
		log:        cfg.Logger,
		db:         cfg.DB,
		bb:         cfg.Backbone,
		signer:     cfg.Signer,
		authSigner: authSigner,
		keyHash:    sha256.Sum256([]byte(cfg.ServerKey)),
		loginLimit: newKeyedLimiter(cfg.LoginRate, cfg.LoginBurst, cfg.MaxRateLimitKeys),
		joinLimit:  newKeyedLimiter(cfg.JoinRate, cfg.JoinBurst, cfg.MaxRateLimitKeys),
	}
	routes := s.routes()
	names := []string{routeUnmatched}
	for _, rt := range routes {
		names = append(names, rt.method+" "+rt.path)
	}
	if s.metrics, err = newMetrics(cfg.Registerer, names); err != nil {
		return nil, err
	}
	s.handler = s.buildMux(routes)
	s.srv = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	return s, nil
}

func (s *Server) routes() []route {
	const rooms = "/server/v1/game/rooms"
	return []route{
		{"GET", "/healthz", authNone, s.health},
		{"POST", "/client/v1/sessions", authNone, s.login},
		{"POST", "/client/v1/sessions/refresh", authNone, s.refresh},
		{"DELETE", "/client/v1/sessions/current", authClient, s.logout},
		{"POST", "/client/v1/game/rooms/{room_id}/join", authClient, s.join},
		{"POST", "/client/v1/game/rooms/{room_id}/leave", authClient, s.leave},
		{"GET", "/client/v1/game/current", authClient, s.current},
		{"POST", rooms, authServer, s.createRoom},
		{"GET", rooms, authServer, s.listRooms},
		{"GET", rooms + "/{room_id}", authServer, s.getRoom},
		{"POST", rooms + "/{room_id}/tickets", authServer, s.createTicket},
		{"POST", rooms + "/{room_id}/start", authServer, s.startRoom},
		{"POST", rooms + "/{room_id}/close", authServer, s.closeRoom},
		{"POST", rooms + "/{room_id}/members/{seat}/kick", authServer, s.kick},
		{"POST", "/server/v1/auth-tokens", authServer, s.createAuthToken},
		{"GET", "/server/v1/nodes", authServer, s.listNodes},
		{"POST", "/server/v1/nodes/{node_id}/drain", authServer, s.drainNode},
	}
}

// buildMux routes by path with a ServeMux, then by method itself, so that
// an unknown path is a JSON 404 and a wrong method a JSON 405.
func (s *Server) buildMux(routes []route) http.Handler {
	mux := http.NewServeMux()
	byPath := map[string]map[string]http.Handler{}
	var paths []string
	for _, rt := range routes {
		if byPath[rt.path] == nil {
			byPath[rt.path] = map[string]http.Handler{}
			paths = append(paths, rt.path)
		}
		byPath[rt.path][rt.method] = s.endpoint(rt.method+" "+rt.path, rt.auth, rt.h)
	}
	for _, p := range paths {
		methods := byPath[p]
		allow := make([]string, 0, len(methods))
		for m := range methods {
			allow = append(allow, m)
		}
		slices.Sort(allow)
		mux.Handle(p, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if h := methods[r.Method]; h != nil {
				h.ServeHTTP(w, r)
				return
			}
			w.Header().Set("Allow", strings.Join(allow, ", "))
			s.unmatched(w, r, &apiError{status: http.StatusMethodNotAllowed, code: codeInvalidArgument,
				message: "method " + r.Method + " not allowed here; allowed: " + strings.Join(allow, ", ")})
		}))
	}
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.unmatched(w, r, errNotFound("no such endpoint"))
	}))
	return mux
}

func (s *Server) unmatched(w http.ResponseWriter, r *http.Request, e *apiError) {
	start := time.Now()
	writeJSON(w, e.status, e.body())
	s.metrics.observe(routeUnmatched, e.status, time.Since(start))
}

// endpoint wraps a handler with authentication, a deadline, panic
// recovery, error JSON, logging and metrics.
func (s *Server) endpoint(name string, auth authKind, h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		status := http.StatusInternalServerError
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("handler panic", "route", name, "panic", fmt.Sprint(v))
				writeJSON(w, errInternal.status, errInternal.body())
			}
			s.metrics.observe(name, status, time.Since(start))
		}()
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
		defer cancel()
		c := &call{w: w, r: r, now: s.cfg.Now()}
		var (
			body any
			err  error
		)
		switch auth {
		case authServer:
			err = s.authServer(r)
		case authClient:
			c.session, err = s.authClient(ctx, r, c.now)
		}
		if err == nil {
			status, body, err = h(ctx, c)
		}
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) {
				if ctx.Err() != nil && r.Context().Err() == nil {
					s.log.Warn("request timed out", "route", name, "err", err)
					ae = errUnavailable("the request timed out", "")
				} else {
					s.log.Error("request failed", "route", name, "err", err)
					ae = errInternal
				}
			}
			status = ae.status
			writeJSON(w, status, ae.body())
			return
		}
		if body == nil {
			w.WriteHeader(status)
			return
		}
		writeJSON(w, status, body)
	})
}

// authServer checks the server API key in constant time.
func (s *Server) authServer(r *http.Request) error {
	key, ok := bearer(r)
	if !ok {
		return errUnauthenticated("missing server API key")
	}
	h := sha256.Sum256([]byte(key))
	if subtle.ConstantTimeCompare(h[:], s.keyHash[:]) != 1 {
		return errUnauthenticated("invalid server API key")
	}
	return nil
}

// authClient checks the access token and that its login session still
// exists (it does not after logout).
func (s *Server) authClient(ctx context.Context, r *http.Request, now time.Time) (*store.Session, error) {
	tok, ok := bearer(r)
	if !ok {
		return nil, errUnauthenticated("missing access token")
	}
	at, err := s.signer.VerifyAccessToken(tok, now)
	if errors.Is(err, tokens.ErrExpired) {
		return nil, errUnauthenticated("access token expired")
	}
	if err != nil {
		return nil, errUnauthenticated("invalid access token")
	}
	sess, err := s.db.GetSession(ctx, at.SessionID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errUnauthenticated("login session ended")
	}
	if err != nil {
		return nil, err
	}
	if sess.Username != at.Username || !now.Before(sess.ExpiresAt) {
		return nil, errUnauthenticated("login session ended")
	}
	return sess, nil
}

// bearer returns the credentials of an "Authorization: Bearer" header.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, cred, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	cred = strings.TrimSpace(cred)
	return cred, cred != ""
}

// clientIP is the rate-limit key of C0: the peer address. Proxy headers
// are not trusted.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// Handler returns the handler of every route; mount it at the root.
func (s *Server) Handler() http.Handler { return s.handler }

// Serve serves HTTP on ln until Shutdown or Close, and then returns
// http.ErrServerClosed. Serve does not close ln on other errors; the
// caller does.
func (s *Server) Serve(ln net.Listener) error { return s.srv.Serve(ln) }

// Shutdown stops accepting connections and waits for the requests in
// flight until ctx is done.
func (s *Server) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }

// Close closes the listeners and connections of Serve at once. It is
// idempotent.
func (s *Server) Close() error { return s.srv.Close() }

// health answers 200 when the backbone is connected and the store
// writable (Config.Health), 503 otherwise.
func (s *Server) health(ctx context.Context, _ *call) (int, any, error) {
	if !s.bb.NATS().IsConnected() {
		return 0, nil, errUnavailable("the NATS backbone is not connected", "")
	}
	if s.cfg.Health != nil && s.cfg.Health(ctx) != nil {
		return 0, nil, errUnavailable("the store does not accept writes", "")
	}
	return http.StatusOK, map[string]string{"status": "ok"}, nil
}
