package admin

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/switchboardgg/switchboard/api"
)

// Defaults and limits of [Config].
const (
	// DefaultHealthTimeout bounds one call of Config.Health.
	DefaultHealthTimeout = 2 * time.Second
	// MaxProfileSeconds caps the seconds parameter of /debug/pprof/profile
	// and /debug/pprof/trace; longer requests answer 400.
	MaxProfileSeconds = 60
	// Realm is the realm of the WWW-Authenticate header of a 401.
	Realm = "switchboard-admin"
)

// Config configures [New]. Its zero value works: empty metrics, /healthz
// always ok, pprof refused to everyone.
type Config struct {
	// Key is the admin key that /debug/pprof/ requires as
	// "Authorization: Bearer <Key>". Empty means pprof answers 401 to
	// every request. Only its SHA-256 is kept.
	Key string
	// Gatherer is what /metrics serves. Nil means an empty registry.
	Gatherer prometheus.Gatherer
	// Health tells /healthz whether the process can do its work; a
	// non-nil error answers 503 with the error's text. It is called once
	// per request with a deadline of HealthTimeout, so it should report a
	// state measured elsewhere rather than do I/O. Nil means always
	// healthy.
	Health func(ctx context.Context) error
	// HealthTimeout bounds one call of Health. Zero means
	// DefaultHealthTimeout.
	HealthTimeout time.Duration
}

// Handler serves the admin routes. It is safe for concurrent use.
type Handler struct {
	// immutable after New
	cfg     Config
	keyHash [sha256.Size]byte
	hasKey  bool
	mux     *http.ServeMux
}

// New returns the admin handler of cfg. It starts no goroutines and
// copies cfg; the key itself is not kept.
func New(cfg Config) (*Handler, error) {
	if cfg.Gatherer == nil {
		cfg.Gatherer = prometheus.NewRegistry()
	}
	if cfg.HealthTimeout < 0 {
		return nil, fmt.Errorf("admin: HealthTimeout %v is negative", cfg.HealthTimeout)
	}
	if cfg.HealthTimeout == 0 {
		cfg.HealthTimeout = DefaultHealthTimeout
	}
	h := &Handler{hasKey: cfg.Key != "", keyHash: sha256.Sum256([]byte(cfg.Key))}
	cfg.Key = ""
	h.cfg = cfg

	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(cfg.Gatherer, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", h.health)
	for path, fn := range map[string]http.HandlerFunc{
		"/debug/pprof/":        pprof.Index, // and every named profile below it
		"/debug/pprof/cmdline": pprof.Cmdline,
		"/debug/pprof/profile": pprof.Profile,
		"/debug/pprof/symbol":  pprof.Symbol,
		"/debug/pprof/trace":   pprof.Trace,
	} {
		mux.Handle(path, h.requireKey(limitSeconds(fn)))
	}
	h.mux = mux
	return h, nil
}

// ServeHTTP serves /metrics, /healthz and, with the admin key,
// /debug/pprof/.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// health answers as the API's /healthz does: 200 api.HealthResponse, or
// 503 api.ErrorBody with code unavailable and the error's text.
func (h *Handler) health(w http.ResponseWriter, r *http.Request) {
	status, body := http.StatusOK, any(api.HealthResponse{Status: "ok"})
	if h.cfg.Health != nil {
		ctx, cancel := context.WithTimeout(r.Context(), h.cfg.HealthTimeout)
		err := h.cfg.Health(ctx)
		cancel()
		if err != nil {
			// Not logged: probes ask every few seconds, and whatever
			// measures the health logs its changes.
			status = http.StatusServiceUnavailable
			body = api.ErrorBody{Error: api.ErrorObject{Code: api.CodeUnavailable, Message: err.Error()}}
		}
	}
	data, _ := json.Marshal(body) // our own types: cannot fail
	hd := w.Header()
	hd.Set("Content-Type", "application/json")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(data, '\n'))
}

// requireKey answers 401 unless the request carries the admin key.
func (h *Handler) requireKey(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="`+Realm+`"`)
			http.Error(w, "admin key required: Authorization: Bearer <admin key>", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authorized compares the bearer token's digest with the key's in
// constant time.
func (h *Handler) authorized(r *http.Request) bool {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got := sha256.Sum256([]byte(token))
	match := subtle.ConstantTimeCompare(got[:], h.keyHash[:]) == 1
	return match && h.hasKey
}

// limitSeconds refuses a profile, trace or delta profile longer than
// MaxProfileSeconds.
func limitSeconds(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s := r.URL.Query().Get("seconds"); s != "" {
			n, err := strconv.ParseFloat(s, 64)
			if err != nil || n <= 0 || n > MaxProfileSeconds {
				http.Error(w, fmt.Sprintf("seconds must be in (0, %d]", MaxProfileSeconds), http.StatusBadRequest)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
