package relayapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/control/internal/httpapi"
	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/tokens"
)

// Server serves the relay API. Its methods are safe for concurrent use.
type Server struct {
	// immutable after New
	cfg       Config
	log       *slog.Logger
	db        *store.DB
	keys      *tokens.RelayKeyring
	unity     *jwks                       // nil: no Unity keys
	limits    map[string]*httpapi.Limiter // by route name
	joinLimit *httpapi.Limiter            // per source address
	handler   http.Handler
}

// route is one Unity-facing endpoint.
type route struct {
	method, path string
	h            func(ctx context.Context, c *call) (int, any, error)
}

// call is one request as a Unity-facing handler sees it.
type call struct {
	w     http.ResponseWriter
	r     *http.Request
	who   principal
	now   time.Time
	param string // the {code} of a path that ends in one
}

// New checks cfg and returns a Server. It starts nothing.
func New(cfg Config) (*Server, error) {
	if cfg.DB == nil {
		return nil, fmt.Errorf("relayapi: %w: DB is nil", ErrConfig)
	}
	if cfg.Keys == nil {
		return nil, fmt.Errorf("relayapi: %w: Keys is nil", ErrConfig)
	}
	if cfg.AllocationTTL <= 0 {
		cfg.AllocationTTL = DefaultAllocationTTL
	}
	if cfg.AllocationTTL > MaxAllocationTTL {
		return nil, fmt.Errorf("relayapi: %w: AllocationTTL %s over %s (the store keeps relay records %s)", ErrConfig,
			cfg.AllocationTTL, MaxAllocationTTL, store.DefaultRelayTTL)
	}
	if cfg.MaxIdleTimeout == 0 {
		cfg.MaxIdleTimeout = DefaultMaxIdleTimeout
	}
	if cfg.MaxIdleTimeout > MaxIdleTimeoutLimit {
		return nil, fmt.Errorf("relayapi: %w: MaxIdleTimeout %s over %s", ErrConfig, cfg.MaxIdleTimeout, MaxIdleTimeoutLimit)
	}
	if cfg.MigrationGrace == 0 {
		cfg.MigrationGrace = DefaultMigrationGrace
	}
	if cfg.MigrationGrace < 0 || cfg.MigrationGrace > MaxMigrationGrace {
		return nil, fmt.Errorf("relayapi: %w: MigrationGrace %s not in (0, %s]", ErrConfig, cfg.MigrationGrace, MaxMigrationGrace)
	}
	if cfg.JoinCodeLength == 0 {
		cfg.JoinCodeLength = DefaultJoinCodeLength
	}
	if cfg.JoinCodeLength < api.RelayMinJoinCodeLen || cfg.JoinCodeLength > api.RelayMaxJoinCodeLen {
		return nil, fmt.Errorf("relayapi: %w: JoinCodeLength %d not in %d..%d", ErrConfig,
			cfg.JoinCodeLength, api.RelayMinJoinCodeLen, api.RelayMaxJoinCodeLen)
	}
	if len(cfg.DefaultRegion) > api.RelayMaxRegionLen {
		return nil, fmt.Errorf("relayapi: %w: DefaultRegion longer than %d bytes", ErrConfig, api.RelayMaxRegionLen)
	}
	if cfg.RequestsPerMinute == 0 {
		cfg.RequestsPerMinute = DefaultRequestsPerMinute
	}
	if cfg.JoinsPerMinutePerAddress == 0 {
		cfg.JoinsPerMinutePerAddress = DefaultJoinsPerMinutePerAddress
	}
	if cfg.MaxAllocationsPerKey == 0 {
		cfg.MaxAllocationsPerKey = DefaultMaxAllocationsPerKey
	}
	if cfg.MaxAllocationsPerAddress == 0 {
		cfg.MaxAllocationsPerAddress = DefaultMaxAllocationsPerAddress
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxRateLimitKeys <= 0 {
		cfg.MaxRateLimitKeys = DefaultMaxRateLimitKeys
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	s := &Server{cfg: cfg, log: cfg.Logger, db: cfg.DB, keys: cfg.Keys, limits: map[string]*httpapi.Limiter{}}
	if cfg.UnityKeys != nil {
		k, err := parseJWKS(cfg.UnityKeys)
		if err != nil {
			return nil, fmt.Errorf("relayapi: %w: UnityKeys: %w", ErrConfig, err)
		}
		s.unity = k
	}
	perMinute := func(n int) *httpapi.Limiter {
		if n < 0 {
			return nil
		}
		return httpapi.NewLimiter(float64(n)/60, n, cfg.MaxRateLimitKeys)
	}
	routes := s.unityRoutes()
	for _, rt := range routes {
		s.limits[rt.method+" "+rt.path] = perMinute(cfg.RequestsPerMinute)
	}
	s.joinLimit = perMinute(cfg.JoinsPerMinutePerAddress)
	s.handler = s.buildMux(routes)
	return s, nil
}

// Paths under which [Server.Handler] answers; control mounts it there.
const (
	RelayPrefix = "/relay/"
	QoSPrefix   = "/qos/"
)

func (s *Server) unityRoutes() []route {
	return []route{
		{"POST", "/relay/v1/allocate", s.allocate},
		{"POST", "/relay/v1/joincode", s.joinCode},
		{"GET", joinCodePath, s.joinCodeStatus},
		{"DELETE", joinCodePath, s.revokeJoinCode},
		{"POST", "/relay/v1/join", s.join},
		{"GET", "/relay/v1/regions", s.regions},
		{"GET", "/qos/v1/servers", s.qosServers},
	}
}

// RouteNames returns the metric names ("METHOD path") of the
// Unity-facing routes, of the unmatched requests under RelayPrefix and
// QoSPrefix, and of [Server.Routes]: control creates its metrics with
// them before it calls New.
func RouteNames() []string {
	s := &Server{}
	var names []string
	for _, rt := range s.unityRoutes() {
		names = append(names, rt.method+" "+rt.path)
	}
	for _, rt := range s.Routes() {
		names = append(names, rt.Method+" "+rt.Path)
	}
	return append(names, routeUnmatched)
}

const routeUnmatched = "relay unmatched"

// Handler returns the handler of the Unity-facing routes; mount it at
// RelayPrefix and QoSPrefix.
func (s *Server) Handler() http.Handler { return s.handler }

func (s *Server) buildMux(routes []route) http.Handler {
	byPath := map[string]map[string]http.Handler{}
	for _, rt := range routes {
		if byPath[rt.path] == nil {
			byPath[rt.path] = map[string]http.Handler{}
		}
		byPath[rt.path][rt.method] = s.endpoint(rt)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		methods := byPath[r.URL.Path]
		if rest, ok := strings.CutPrefix(r.URL.Path, joinCodePrefix); ok && rest != "" && !strings.Contains(rest, "/") {
			methods = byPath[joinCodePath]
		}
		if h := methods[r.Method]; h != nil {
			h.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		p := &problem{status: http.StatusNotFound, code: api.RelayCodeEntityNotFound, detail: "no such endpoint"}
		if methods != nil {
			for m := range methods {
				w.Header().Set("Allow", m)
			}
			p = &problem{status: http.StatusMethodNotAllowed, code: api.RelayCodeMethodNotAllowed, detail: "method " + r.Method + " not allowed here"}
		}
		writeProblem(w, p)
		s.cfg.Metrics.Observe(routeUnmatched, p.status, time.Since(start))
	})
}

// endpoint wraps a handler with authentication, the per-player rate
// limit, a deadline, panic recovery, problem JSON, logging and metrics.
func (s *Server) endpoint(rt route) http.Handler {
	name := rt.method + " " + rt.path
	limit := s.limits[name]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		status := http.StatusInternalServerError
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("handler panic", "route", name, "panic", fmt.Sprint(v))
				writeProblem(w, errInternal)
			}
			s.cfg.Metrics.Observe(name, status, time.Since(start))
		}()
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
		defer cancel()
		c := &call{w: w, r: r, now: s.cfg.Now()}
		if p, ok := strings.CutSuffix(rt.path, "{code}"); ok {
			c.param = strings.TrimPrefix(r.URL.Path, p)
		}
		var (
			body any
			err  error
		)
		c.who, err = s.authenticate(ctx, r, c.now)
		if err == nil {
			if ok, wait := limit.Take(c.who.player, c.now); !ok {
				err = rateLimited(wait)
			}
		}
		if err == nil {
			status, body, err = rt.h(ctx, c)
		}
		if err != nil {
			var p *problem
			if !errors.As(err, &p) {
				if ctx.Err() != nil && r.Context().Err() == nil {
					s.log.Warn("request timed out", "route", name, "err", err)
					p = &problem{status: http.StatusServiceUnavailable, code: api.RelayCodeServiceUnavailable, detail: "the request timed out"}
				} else {
					s.log.Error("request failed", "route", name, "err", err)
					p = errInternal
				}
			}
			status = p.status
			writeProblem(w, p)
			return
		}
		if status == http.StatusNoContent {
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(status)
			return
		}
		writeJSON(w, status, body)
	})
}

// problem is an error with its problem-JSON answer.
type problem struct {
	status int
	code   int
	detail string
	// retryAfter, when positive, is sent as the Retry-After header, in
	// whole seconds rounded up.
	retryAfter time.Duration
}

func (p *problem) Error() string {
	return fmt.Sprintf("relayapi: %d %d: %s", p.status, p.code, p.detail)
}

var errInternal = &problem{status: http.StatusInternalServerError, code: api.RelayCodeInternal, detail: "internal error"}

// rateLimited is the 429 15429 of a limiter that has a token again after
// wait (httpapi.Limiter.Take); its Retry-After is at least 1 second, as
// the other APIs' 429s (docs/api.md).
func rateLimited(wait time.Duration) *problem {
	return &problem{status: http.StatusTooManyRequests, code: api.RelayCodeRateLimited, detail: "too many requests",
		retryAfter: max(wait, time.Second)}
}

// takeJoin takes a token of the per-address join limit for c: nil, or
// the 429 to answer.
func (s *Server) takeJoin(c *call) error {
	if ok, wait := s.joinLimit.Take("addr:"+httpapi.ClientIP(c.r), c.now); !ok {
		return rateLimited(wait)
	}
	return nil
}

func invalid(format string, args ...any) *problem {
	return &problem{status: http.StatusBadRequest, code: api.RelayCodeInvalidRequest, detail: fmt.Sprintf(format, args...)}
}

func malformed(format string, args ...any) *problem {
	return &problem{status: http.StatusBadRequest, code: api.RelayCodeInvalidArgument, detail: fmt.Sprintf(format, args...)}
}

func unauthorized(detail string) *problem {
	return &problem{status: http.StatusUnauthorized, code: api.RelayCodeUnauthorized, detail: detail}
}

func notFound(code int, detail string) *problem {
	return &problem{status: http.StatusNotFound, code: code, detail: detail}
}

func writeProblem(w http.ResponseWriter, p *problem) {
	title := http.StatusText(p.status)
	body := api.RelayProblem{
		Status: p.status,
		Title:  title,
		Detail: p.detail,
		Type:   api.RelayProblemTypePrefix + strings.ReplaceAll(strings.ToLower(title), " ", "-"),
		Code:   p.code,
	}
	data, _ := json.Marshal(body)
	h := w.Header()
	h.Set("Content-Type", api.RelayProblemContentType)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if p.retryAfter > 0 {
		h.Set("Retry-After", httpapi.RetryAfter(p.retryAfter))
	}
	w.WriteHeader(p.status)
	_, _ = w.Write(append(data, '\n'))
}

// writeJSON writes body in Unity's envelope: {meta, data, links}.
func writeJSON(w http.ResponseWriter, status int, data any) {
	var id [16]byte
	_, _ = rand.Read(id[:])
	env := struct {
		Meta  api.RelayMeta  `json:"meta"`
		Data  any            `json:"data"`
		Links api.RelayLinks `json:"links"`
	}{api.RelayMeta{RequestID: hex.EncodeToString(id[:]), Status: status}, data, api.RelayLinks{}}
	httpapi.WriteJSON(w, status, env)
}

// decode reads the JSON object of r's body into v under the relay API's
// rule: unknown fields are ignored, but malformed JSON, a wrong type,
// trailing data, text that is not UTF-8 and a key given twice (in any
// case, as encoding/json matches names) are 400. An empty body is {}.
func decode(w http.ResponseWriter, r *http.Request, max int64, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return malformed("request body is larger than %d bytes", max)
		}
		return malformed("cannot read the request body")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if !utf8.Valid(body) {
		return malformed("request body is not valid UTF-8")
	}
	if err := checkDuplicates(body); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			if typeErr.Field == "" {
				return malformed("request body must be a JSON object")
			}
			return malformed("field %q has the wrong JSON type", typeErr.Field)
		}
		return malformed("malformed JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return malformed("request body must hold a single JSON object")
	}
	return nil
}

// maxDepth bounds the nesting checkDuplicates follows.
const maxDepth = 32

// checkDuplicates refuses a key given twice in one object, comparing keys
// without case as encoding/json matches them to fields.
func checkDuplicates(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	var walk func(depth int) error
	walk = func(depth int) error {
		if depth > maxDepth {
			return malformed("JSON nested deeper than %d", maxDepth)
		}
		tok, err := dec.Token()
		if err != nil {
			return malformed("malformed JSON")
		}
		d, ok := tok.(json.Delim)
		if !ok {
			return nil
		}
		switch d {
		case '{':
			var seen []string
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return malformed("malformed JSON")
				}
				k, _ := kt.(string)
				for _, s := range seen {
					if strings.EqualFold(s, k) {
						return malformed("key %q given twice", truncate(k))
					}
				}
				seen = append(seen, k)
				if err := walk(depth + 1); err != nil {
					return err
				}
			}
		case '[':
			for dec.More() {
				if err := walk(depth + 1); err != nil {
					return err
				}
			}
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return malformed("malformed JSON")
		}
		return nil
	}
	return walk(0)
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
