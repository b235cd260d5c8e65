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
	"net/netip"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/netutil"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/backbone"
	"github.com/switchboardgg/switchboard/control/internal/httpapi"
	"github.com/switchboardgg/switchboard/control/p2papi"
	"github.com/switchboardgg/switchboard/control/relayapi"
	"github.com/switchboardgg/switchboard/control/roomsapi"
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
	metrics    *httpapi.Metrics
	loginLimit *httpapi.Limiter // per IPv4 address or IPv6 /64
	prefixLim  *httpapi.Limiter // per IPv6 /48
	rooms      *roomsapi.Server
	relay      *relayapi.Server // nil: Config.Relay is nil
	p2p        *p2papi.Server   // nil without Config.HubTickets
	handler    http.Handler
	srv        *http.Server
}

// routeUnmatched labels the metrics of requests no route matched.
const routeUnmatched = "unmatched"

// New checks cfg and returns a Server. It starts nothing: serve
// [Server.Handler] yourself or call [Server.Serve].
func New(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	switch {
	case cfg.DB == nil:
		return nil, fmt.Errorf("%w: DB is nil", ErrConfig)
	case cfg.Backbone == nil:
		return nil, fmt.Errorf("%w: Backbone is nil", ErrConfig)
	case cfg.Signer == nil:
		return nil, fmt.Errorf("%w: Signer is nil", ErrConfig)
	case len(cfg.ServerKey) < tokens.MinKeyLen:
		return nil, fmt.Errorf("%w: server key is shorter than %d bytes", ErrConfig, tokens.MinKeyLen)
	}
	authSigner, err := tokens.NewSigner([]byte(cfg.ServerKey))
	if err != nil {
		return nil, fmt.Errorf("control: server key: %w", err)
	}
	rooms, err := roomsapi.New(roomsapi.Config{
		DB:                        cfg.DB,
		Backbone:                  cfg.Backbone,
		Signer:                    cfg.Signer,
		JoinTicketTTL:             cfg.JoinTicketTTL,
		MaxJoinTicketTTL:          cfg.MaxJoinTicketTTL,
		MaxRoomDuration:           cfg.MaxRoomDuration,
		MaxSnapshotIntervalFrames: cfg.MaxSnapshotIntervalFrames,
		Limits:                    cfg.limits(),
		Logger:                    cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("control: rooms API: %w", err)
	}
	var p2p *p2papi.Server
	if cfg.HubTickets != nil {
		if p2p, err = p2papi.New(p2papi.Config{
			DB:       cfg.DB,
			Backbone: cfg.Backbone,
			Tickets:  cfg.HubTickets,
			MaxPeers: cfg.P2PMaxPeers,
			Limits:   cfg.limits(),
			Logger:   cfg.Logger,
		}); err != nil {
			return nil, fmt.Errorf("control: P2P API: %w", err)
		}
	}
	s := &Server{
		cfg:        cfg,
		log:        cfg.Logger,
		db:         cfg.DB,
		bb:         cfg.Backbone,
		signer:     cfg.Signer,
		authSigner: authSigner,
		keyHash:    sha256.Sum256([]byte(cfg.ServerKey)),
		loginLimit: httpapi.NewLimiter(cfg.LoginRate, cfg.LoginBurst, cfg.MaxRateLimitKeys),
		prefixLim:  httpapi.NewLimiter(cfg.LoginPrefixRate, cfg.LoginPrefixBurst, cfg.MaxRateLimitKeys),
		rooms:      rooms,
		p2p:        p2p,
	}
	names := []string{routeUnmatched}
	for _, rt := range s.routes() {
		names = append(names, rt.Method+" "+rt.Path)
	}
	if cfg.Relay != nil {
		names = append(names, relayapi.RouteNames()...)
	}
	if s.metrics, err = httpapi.NewMetrics(cfg.Registerer, names); err != nil {
		return nil, err
	}
	if cfg.Relay != nil {
		rc := *cfg.Relay
		rc.DB, rc.AuthClient, rc.Metrics = cfg.DB, s.authClient, s.metrics
		rc.RequestTimeout, rc.MaxRateLimitKeys = cfg.RequestTimeout, cfg.MaxRateLimitKeys
		rc.Backbone, rc.CommandTimeout = cfg.Backbone, cfg.CommandTimeout
		if rc.Logger == nil {
			rc.Logger = cfg.Logger
		}
		if rc.Now == nil {
			rc.Now = cfg.Now
		}
		if s.relay, err = relayapi.New(rc); err != nil {
			return nil, fmt.Errorf("control: relay API: %w", err)
		}
		if cfg.Registerer != nil {
			if err := cfg.Registerer.Register(s.relay.Collector()); err != nil {
				return nil, fmt.Errorf("control: relay metrics: %w", err)
			}
		}
	}
	s.handler = s.buildMux(s.routes())
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

// routes is the route table: control's own routes, then those of the
// APIs it mounts (roomsapi, relayapi's server routes, p2papi). relayapi's
// Unity-facing routes are mounted whole at their prefixes (buildMux).
func (s *Server) routes() []httpapi.Route {
	const (
		none   = httpapi.AuthNone
		server = httpapi.AuthServer
		client = httpapi.AuthClient
	)
	own := []httpapi.Route{
		{Method: "GET", Path: "/healthz", Auth: none, H: s.health},
		{Method: "POST", Path: "/client/v1/sessions", Auth: none, H: s.login},
		{Method: "POST", Path: "/client/v1/sessions/refresh", Auth: none, H: s.refresh},
		{Method: "DELETE", Path: "/client/v1/sessions/current", Auth: client, H: s.logout},
		{Method: "POST", Path: "/server/v1/auth-tokens", Auth: server, H: s.createAuthToken},
		{Method: "GET", Path: "/server/v1/nodes", Auth: server, H: s.listNodes},
		{Method: "POST", Path: "/server/v1/nodes/{node_id}/drain", Auth: server, H: s.drainNode},
	}
	routes := append(own, s.rooms.Routes()...)
	if s.relay != nil {
		routes = append(routes, s.relay.Routes()...)
	}
	if s.p2p != nil {
		routes = append(routes, s.p2p.Routes()...)
	}
	return routes
}

// buildMux routes by path with a ServeMux, then by method itself, so that
// an unknown path is a JSON 404 and a wrong method a JSON 405.
func (s *Server) buildMux(routes []httpapi.Route) http.Handler {
	wr := &httpapi.Wrapper{
		Log:              s.log,
		Metrics:          s.metrics,
		RequestTimeout:   s.cfg.RequestTimeout,
		Now:              s.cfg.Now,
		AuthServer:       s.authServer,
		AuthClient:       s.authClient,
		AuthClientRecent: s.authClientRecent,
	}
	mux := http.NewServeMux()
	byPath := map[string]map[string]http.Handler{}
	var paths []string
	for _, rt := range routes {
		if byPath[rt.Path] == nil {
			byPath[rt.Path] = map[string]http.Handler{}
			paths = append(paths, rt.Path)
		}
		byPath[rt.Path][rt.Method] = wr.Endpoint(rt.Method+" "+rt.Path, rt.Auth, rt.H)
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
			s.unmatched(w, r, &httpapi.Error{Status: http.StatusMethodNotAllowed, Code: api.CodeInvalidArgument,
				Message: "method " + r.Method + " not allowed here; allowed: " + strings.Join(allow, ", ")})
		}))
	}
	if s.relay != nil {
		mux.Handle(relayapi.RelayPrefix, s.relay.Handler())
		mux.Handle(relayapi.QoSPrefix, s.relay.Handler())
	}
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.unmatched(w, r, httpapi.NotFound("no such endpoint"))
	}))
	return mux
}

func (s *Server) unmatched(w http.ResponseWriter, r *http.Request, e *httpapi.Error) {
	start := time.Now()
	httpapi.WriteJSON(w, e.Status, e.Body())
	s.metrics.Observe(routeUnmatched, e.Status, time.Since(start))
}

// authServer checks the server API key in constant time.
func (s *Server) authServer(r *http.Request) error {
	key, ok := bearer(r)
	if !ok {
		return httpapi.Unauthenticated("missing server API key")
	}
	h := sha256.Sum256([]byte(key))
	if subtle.ConstantTimeCompare(h[:], s.keyHash[:]) != 1 {
		return httpapi.Unauthenticated("invalid server API key")
	}
	return nil
}

// authClient checks the access token and that its login session still
// exists (it does not after logout).
func (s *Server) authClient(ctx context.Context, r *http.Request, now time.Time) (*store.Session, error) {
	at, err := s.accessToken(r, now)
	if err != nil {
		return nil, err
	}
	return s.readSession(ctx, at, now)
}

// readSession reads the login session of at and checks that it is live.
func (s *Server) readSession(ctx context.Context, at tokens.AccessToken, now time.Time) (*store.Session, error) {
	sess, err := s.db.GetSession(ctx, at.SessionID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, httpapi.Unauthenticated("login session ended")
	}
	if err != nil {
		return nil, err
	}
	if !sessionLive(sess, at, now) {
		return nil, httpapi.Unauthenticated("login session ended")
	}
	return sess, nil
}

// authClientRecent is authClient with this process's copy of the login
// session when it has one (the one the login on this process wrote):
// recent reports it, and the handler proves the session still exists by
// writing it (httpapi.AuthClientRecent). Without a copy, or with one
// that says the session ended, it reads the session.
func (s *Server) authClientRecent(ctx context.Context, r *http.Request, now time.Time) (*store.Session, bool, error) {
	at, err := s.accessToken(r, now)
	if err != nil {
		return nil, false, err
	}
	if sess, ok := s.db.RecentSession(at.SessionID); ok && sessionLive(sess, at, now) {
		return sess, true, nil
	}
	sess, err := s.readSession(ctx, at, now)
	return sess, false, err
}

// accessToken checks the access token of a request.
func (s *Server) accessToken(r *http.Request, now time.Time) (tokens.AccessToken, error) {
	tok, ok := bearer(r)
	if !ok {
		return tokens.AccessToken{}, httpapi.Unauthenticated("missing access token")
	}
	at, err := s.signer.VerifyAccessToken(tok, now)
	if errors.Is(err, tokens.ErrExpired) {
		return tokens.AccessToken{}, httpapi.Unauthenticated("access token expired")
	}
	if err != nil {
		return tokens.AccessToken{}, httpapi.Unauthenticated("invalid access token")
	}
	return at, nil
}

// sessionLive reports whether sess is the live login session of at.
func sessionLive(sess *store.Session, at tokens.AccessToken, now time.Time) bool {
	return sess.Username == at.Username && now.Before(sess.ExpiresAt)
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

// clientIP is the rate-limit key of C0: see httpapi.ClientIP.
func clientIP(r *http.Request) string { return httpapi.ClientIP(r) }

// sitePrefix is the key of the second C0 limiter: the /48 of an IPv6
// client, a site's prefix (RFC 6177); "" for an IPv4 client.
func sitePrefix(r *http.Request) string {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return ""
	}
	a := ap.Addr().Unmap().WithZone("")
	if !a.Is6() {
		return ""
	}
	p, _ := a.Prefix(48)
	return p.String()
}

// allowLogin takes a C0 token of the client's address or /64, then one of
// its /48, and returns the 429, with the wait for a token, when either has none.
func (s *Server) allowLogin(c *httpapi.Call) error {
	if ok, wait := s.loginLimit.Take(clientIP(c.R), c.Now); !ok {
		return httpapi.RateLimited(wait)
	}
	if p := sitePrefix(c.R); p != "" {
		if ok, wait := s.prefixLim.Take(p, c.Now); !ok {
			return httpapi.RateLimited(wait)
		}
	}
	return nil
}

// Handler returns the handler of every route; mount it at the root.
func (s *Server) Handler() http.Handler { return s.handler }

// Serve serves HTTP on ln until Shutdown or Close, and then returns
// http.ErrServerClosed. It holds at most Config.MaxConnections
// connections open at once; beyond, accepts wait. Serve does not close ln
// on other errors; the caller does.
func (s *Server) Serve(ln net.Listener) error {
	return s.srv.Serve(netutil.LimitListener(ln, s.cfg.MaxConnections))
}

// Shutdown stops accepting connections and waits for the requests in
// flight until ctx is done.
func (s *Server) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }

// Close closes the listeners and connections of Serve at once. It is
// idempotent.
func (s *Server) Close() error { return s.srv.Close() }

// health answers 200 when the backbone is connected and the store
// writable (Config.Health), 503 otherwise.
func (s *Server) health(ctx context.Context, _ *httpapi.Call) (int, any, error) {
	if !s.bb.NATS().IsConnected() {
		return 0, nil, httpapi.Unavailable("the NATS backbone is not connected", "")
	}
	if s.cfg.Health != nil && s.cfg.Health(ctx) != nil {
		return 0, nil, httpapi.Unavailable("the store does not accept writes", "")
	}
	return http.StatusOK, &api.HealthResponse{Status: "ok"}, nil
}
