package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/backbone"
	"github.com/switchboardgg/switchboard/control"
	"github.com/switchboardgg/switchboard/node/udp"
	"github.com/switchboardgg/switchboard/system"
)

// readyInfo is the JSON of --ready-file, as system writes it.
type readyInfo = system.Ready

// systemOptions are the flags of `dev` and `serve` that are not fields of
// system.Config already.
type systemOptions struct {
	cfg            system.Config
	logLevel       string
	tls            bool // dev --tls
	hub            bool // dev --hub
	frameRetention time.Duration
	relay          relayOptions
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

// runSystem starts the roles of cfg through system.Start, reloads the TLS
// certificate on SIGHUP, and drains when ctx ends or a role fails.
func runSystem(ctx context.Context, out io.Writer, o *systemOptions) error {
	log, err := newLogger(o.logLevel, os.Stderr)
	if err != nil {
		return err
	}
	cfg := o.cfg
	cfg.Logger = log
	cfg.Version = buildVersion()
	cfg.Node.Node.Rooms.Retention = o.frameRetention
	cfg.TLS.SelfSigned = o.tls && cfg.TLS.CertFile == ""
	if cfg.TLS.CertFile != "" && o.tls {
		log.Info("--tls with --tls-cert: serving the given certificate")
	}

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	sys, err := system.Start(ctx, cfg)
	if errors.Is(err, backbone.ErrNotReady) && errors.Is(err, syscall.EADDRINUSE) {
		// The embedded NATS server of dev: say what to do, once.
		return fmt.Errorf("NATS port %s in use; pass --nats 127.0.0.1:0 or stop the other process", cfg.NATS.Addr)
	}
	if err != nil {
		return err
	}
	printBanner(out, cfg, sys.Ready())

	var runErr error
	for done := false; !done; {
		select {
		case <-ctx.Done():
			log.Info("shutting down")
			done = true
		case <-sys.Done():
			runErr = sys.Err()
			log.Error("a role failed; shutting down", "err", runErr)
			done = true
		case <-hup:
			if err := sys.ReloadTLS(); err != nil {
				log.Error("SIGHUP: TLS certificate not reloaded; the old one stays in use", "err", err)
			}
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := sys.Drain(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		log.Warn("shutdown", "err", err)
	}
	return runErr
}

func printBanner(w io.Writer, cfg system.Config, r system.Ready) {
	fmt.Fprintln(w, "switchboard", buildVersion())
	if r.API != "" {
		fmt.Fprintln(w, "  api     ", r.API)
	}
	if r.NodeWS != "" {
		fmt.Fprintln(w, "  node ws ", r.NodeWS, "(node id "+r.NodeID+")")
	}
	if r.NodeUDP != "" {
		fmt.Fprintln(w, "  node udp", r.NodeUDP)
	}
	if r.RelayUDP != "" {
		fmt.Fprintln(w, "  relay udp", r.RelayUDP)
	}
	if r.RelayWS != "" {
		fmt.Fprintln(w, "  relay ws ", r.RelayWS)
	}
	if r.RelayDTLS != "" {
		fmt.Fprintln(w, "  relay dtls", r.RelayDTLS)
	}
	if r.Hub != "" {
		fmt.Fprintln(w, "  hub     ", r.Hub, "(TLS, sha256 "+r.HubFingerprint+")")
	}
	if r.Admin != "" {
		fmt.Fprintln(w, "  admin   ", r.Admin+"/metrics")
	}
	fmt.Fprintln(w, "  nats    ", r.NATS)
	if cfg.NATS.URL == "" {
		fmt.Fprintln(w, "  nats credentials (for serve --nats-creds):", filepath.Join(cfg.DataDir, backbone.CredentialsFileName))
	}
	if r.TLSFingerprint != "" {
		fmt.Fprintln(w, "  tls sha256", r.TLSFingerprint)
	}
	if r.ServerKey != "" {
		fmt.Fprintln(w, "  server key (dev only; kept in "+filepath.Join(cfg.DataDir, system.ServerKeyFile)+"):", r.ServerKey)
	}
}

// addDataDir registers --data-dir with def as its default.
func addDataDir(f *pflag.FlagSet, o *systemOptions, def string) {
	f.StringVar(&o.cfg.DataDir, "data-dir", def,
		"directory this process owns (one process per directory): its lock, node id, generated keys and certificate, JetStream when embedded")
}

func addCommonFlags(f *pflag.FlagSet, o *systemOptions) {
	f.StringVar(&o.cfg.ReadyFile, "ready-file", "", "write the bound addresses as JSON to this file once every role has started (removed on exit)")
	f.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	f.StringVar(&o.cfg.Admin.Key, "admin-key", "", "admin key for pprof on the admin listener (default: $SWITCHBOARD_ADMIN_KEY, else the server key of a process running control; a node without one serves no pprof)")
	f.StringVar(&o.cfg.TLS.CertFile, "tls-cert", "", "PEM certificate (chain) for every TCP listener of this process: the API and admin (https), the node WebSocket (wss); reloaded on SIGHUP")
	f.StringVar(&o.cfg.TLS.KeyFile, "tls-key", "", "PEM private key of --tls-cert")
}

// addControlTuning registers the control role's limits with the given
// default login rate and burst.
func addControlTuning(f *pflag.FlagSet, o *systemOptions, loginRate float64, loginBurst int) {
	c := &o.cfg.API.Control
	f.Float64Var(&c.LoginRate, "login-rate", loginRate,
		"C0 logins and refreshes per second and client IP; negative turns the limit off")
	f.IntVar(&c.LoginBurst, "login-burst", loginBurst, "C0 calls a client IP may make at once above --login-rate")
	f.Float64Var(&c.JoinRate, "join-rate", control.DefaultJoinRate,
		fmt.Sprintf("C1 joins per second and login session (burst %d); negative turns the limit off", control.DefaultJoinBurst))
	f.IntVar(&c.P2PMaxPeers, "p2p-max-peers", api.DefaultMaxPeers,
		fmt.Sprintf("peer cap of a P2P network made without max_peers (by its first join; at most %d)", api.MaxMaxPeers))
}

// addNodeTuning registers the node role's limits with the given default
// rate and burst of new UDP HANDSHAKEs per source address.
func addNodeTuning(f *pflag.FlagSet, o *systemOptions, srcRate, srcBurst int) {
	f.DurationVar(&o.frameRetention, "frame-retention", 0,
		"how long the node keeps frames for FRAME_REQ and resume (0: 60s, the protocol's minimum for clients)")
	f.StringVar(&o.cfg.Node.ID, "node-id", "",
		"this node's id, unique in the deployment (default: kept in --data-dir, derived from the host name on first start)")
	f.StringVar(&o.cfg.Node.PublicURL, "node-public-url", "",
		"WebSocket URL clients are told to dial (default: ws:// or wss:// of the node address and /game/v1/ws)")
	f.StringVar(&o.cfg.Node.UDPPublic, "node-udp-public", "",
		"UDP address clients are told (connect.udp), HOST:PORT (default: the bound --node-udp address)")
	f.IntVar(&o.cfg.Node.UDP.MTU, "node-udp-mtu", udp.DefaultMTU,
		"largest UDP datagram the node sends, in bytes")
	f.IntVar(&o.cfg.Node.UDP.SourceHandshakeRate, "node-udp-source-handshake-rate", srcRate,
		fmt.Sprintf("new UDP HANDSHAKEs (joins and resumes) per second one IPv4 address or IPv6 /64 may send; beyond, they are dropped unanswered; negative turns the limit off, 0 means %d", udp.DefaultSourceHandshakeRate))
	f.IntVar(&o.cfg.Node.UDP.SourceHandshakeBurst, "node-udp-source-handshake-burst", srcBurst,
		fmt.Sprintf("new UDP HANDSHAKEs one IPv4 address or IPv6 /64 may send at once above --node-udp-source-handshake-rate (0 means %d)", udp.DefaultSourceHandshakeBurst))
}

// resolveKeys fills the keys given by environment variables.
func resolveKeys(o *systemOptions) {
	if o.cfg.API.ServerKey == "" {
		o.cfg.API.ServerKey = os.Getenv("SWITCHBOARD_SERVER_KEY")
	}
	if o.cfg.Admin.Key == "" {
		o.cfg.Admin.Key = os.Getenv("SWITCHBOARD_ADMIN_KEY")
	}
	if o.cfg.NATS.CredentialsFile == "" && o.cfg.NATS.URL != "" {
		o.cfg.NATS.CredentialsFile = os.Getenv("SWITCHBOARD_NATS_CREDS")
	}
}
