package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/switchboardgg/switchboard/backbone"
	"github.com/switchboardgg/switchboard/control"
	"github.com/switchboardgg/switchboard/node"
	"github.com/switchboardgg/switchboard/rooms"
	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/tokens"
)

// role is a bit set of the roles one process runs.
type role int

const (
	roleControl role = 1 << iota
	roleNode
)

// systemOptions are the flags of `dev` and `serve`.
type systemOptions struct {
	roles          role
	embedNATS      bool
	natsURL        string // when not embedded
	natsAddr       string // embedded server's listen address
	apiAddr        string
	nodeAddr       string
	adminAddr      string
	dataDir        string
	serverKey      string
	printKey       bool
	readyFile      string
	allowAnonymous bool
	nodeID         string
	nodePublicURL  string
	region         string
	logLevel       string
	loginRate      float64       // control: C0 logins per second and client IP; negative: off
	frameRetention time.Duration // node: frames kept for FRAME_REQ and resume
}

// nodeStartTimeout bounds the wait for the game node's registration
// before the ready file is written.
const nodeStartTimeout = 30 * time.Second

// readyInfo is the JSON of --ready-file.
type readyInfo struct {
	API       string `json:"api,omitempty"`
	NodeWS    string `json:"node_ws,omitempty"`
	Admin     string `json:"admin,omitempty"`
	NATS      string `json:"nats,omitempty"`
	ServerKey string `json:"server_key,omitempty"`
}

// shutdownGrace bounds the drain on SIGINT/SIGTERM.
const shutdownGrace = 5 * time.Second

func signalContext(parent context.Context) (context.Context, context.CancelFunc) {
	if parent == nil {
		parent = context.Background()
	}
	return signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
}

func newLogger(level string, w io.Writer) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: %w", level, err)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}

// runSystem runs the roles in o until ctx ends, then drains them.
func runSystem(ctx context.Context, out io.Writer, o systemOptions) error {
	log, err := newLogger(o.logLevel, os.Stderr)
	if err != nil {
		return err
	}
	var closers []func()
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}()

	natsURL := o.natsURL
	if o.embedNATS {
		host, port, err := splitHostPort(o.natsAddr)
		if err != nil {
			return fmt.Errorf("--nats: %w", err)
		}
		emb, err := backbone.StartEmbedded(backbone.EmbeddedConfig{
			DataDir: o.dataDir, Host: host, Port: port, Logger: log.With("component", "nats"),
		})
		if err != nil {
			return err
		}
		closers = append(closers, emb.Shutdown)
		natsURL = emb.ClientURL()
	}
	bb, err := backbone.Connect(ctx, backbone.Config{URL: natsURL, Name: "switchboard", Logger: log.With("component", "backbone")})
	if err != nil {
		return err
	}
	closers = append(closers, bb.Close)
	db, err := store.Open(ctx, bb, store.Config{Logger: log})
	if err != nil {
		return err
	}
	key, err := db.SigningKey(ctx)
	if err != nil {
		return err
	}
	signer, err := tokens.NewSigner(key)
	if err != nil {
		return err
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	ready := readyInfo{NATS: natsURL}
	if o.printKey {
		ready.ServerKey = o.serverKey
	}

	var wg sync.WaitGroup
	errc := make(chan error, 4)
	serve := func(name string, fn func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, node.ErrServerClosed) {
				errc <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}
	var shutdowns []func(context.Context) error
	var nodeStarted <-chan struct{} // of the game node, when this process runs one

	if o.roles&roleControl != 0 {
		if o.serverKey == "" {
			return errors.New("a server key is required: --server-key or $SWITCHBOARD_SERVER_KEY")
		}
		ln, err := net.Listen("tcp", o.apiAddr)
		if err != nil {
			return fmt.Errorf("--api: %w", err)
		}
		ctl, err := control.New(control.Config{
			DB: db, Backbone: bb, ServerKey: o.serverKey, Signer: signer,
			AllowAnonymous: o.allowAnonymous, LoginRate: o.loginRate,
			Logger: log.With("component", "control"), Registerer: reg,
		})
		if err != nil {
			ln.Close()
			return err
		}
		hs := &http.Server{Handler: ctl.Handler(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
		serve("api", func() error { return hs.Serve(ln) })
		shutdowns = append(shutdowns, hs.Shutdown)
		ready.API = "http://" + ln.Addr().String()
	}
	if o.roles&roleNode != 0 {
		ln, err := net.Listen("tcp", o.nodeAddr)
		if err != nil {
			return fmt.Errorf("--node: %w", err)
		}
		wsURL := o.nodePublicURL
		if wsURL == "" {
			wsURL = "ws://" + ln.Addr().String() + "/game/v1/ws"
		}
		nodeID := o.nodeID
		if nodeID == "" {
			nodeID = defaultNodeID()
		}
		n, err := node.New(node.Config{
			ID: nodeID, WSURL: wsURL, Region: o.region, Version: buildVersion(),
			Signer: signer, DB: db, Backbone: bb,
			Logger: log.With("component", "node", "node_id", nodeID), Registerer: reg,
			Rooms: rooms.Config{Retention: o.frameRetention},
		})
		if err != nil {
			ln.Close()
			return err
		}
		serve("node", func() error { return n.Serve(ln) })
		nodeStarted = n.Started()
		// The node drains first (ERROR 10 to its players), so it is
		// shut down before the API.
		shutdowns = append([]func(context.Context) error{n.Shutdown}, shutdowns...)
		// The ready file has the bound address; C1 hands out wsURL.
		ready.NodeWS = "ws://" + ln.Addr().String() + "/game/v1/ws"
	}
	if o.adminAddr != "" {
		ln, err := net.Listen("tcp", o.adminAddr)
		if err != nil {
			return fmt.Errorf("--admin: %w", err)
		}
		hs := &http.Server{Handler: adminHandler(reg), ReadHeaderTimeout: 10 * time.Second}
		serve("admin", func() error { return hs.Serve(ln) })
		shutdowns = append(shutdowns, hs.Shutdown)
		ready.Admin = "http://" + ln.Addr().String()
	}

	// Ready once the node serves commands and is in the registry, so that
	// a room can be created at once.
	if nodeStarted != nil {
		select {
		case <-nodeStarted:
		case <-time.After(nodeStartTimeout):
			log.Warn("the game node has not registered yet; creating rooms may fail until it has", "waited", nodeStartTimeout)
		}
	}
	if o.readyFile != "" {
		if err := writeJSONAtomic(o.readyFile, ready); err != nil {
			return err
		}
	}
	printBanner(out, o, ready)
	log.Info("switchboard ready", "api", ready.API, "node_ws", ready.NodeWS, "admin", ready.Admin)

	var runErr error
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case runErr = <-errc:
		log.Error("listener failed; shutting down", "err", runErr)
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	for _, sd := range shutdowns {
		if err := sd(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			log.Warn("shutdown", "err", err)
		}
	}
	wg.Wait()
	return runErr
}

func printBanner(w io.Writer, o systemOptions, r readyInfo) {
	fmt.Fprintln(w, "switchboard", buildVersion())
	if r.API != "" {
		fmt.Fprintln(w, "  api     ", r.API)
	}
	if r.NodeWS != "" {
		fmt.Fprintln(w, "  node ws ", r.NodeWS)
	}
	if r.Admin != "" {
		fmt.Fprintln(w, "  admin   ", r.Admin+"/metrics")
	}
	fmt.Fprintln(w, "  nats    ", r.NATS)
	if o.printKey {
		fmt.Fprintln(w, "  server key (dev only; kept in "+filepath.Join(o.dataDir, "server-key")+"):", o.serverKey)
	}
}

func adminHandler(reg *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

func writeJSONAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".ready-*")
	if err != nil {
		return fmt.Errorf("ready file: %w", err)
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("ready file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("ready file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("ready file: %w", err)
	}
	return nil
}

func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := net.LookupPort("tcp", p)
	if err != nil {
		return "", 0, err
	}
	return host, port, nil
}

func defaultNodeID() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "node"
	}
	h = strings.ToLower(h)
	return h + "-" + tokens.Random(3)
}
