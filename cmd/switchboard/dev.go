package main

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/switchboardgg/switchboard/control"
)

// Default listen addresses of `switchboard dev` and `switchboard serve`. They
// are documented in docs/configuration.md.
const (
	defaultAPIAddr   = "127.0.0.1:7700"
	defaultNodeAddr  = "127.0.0.1:7701"
	defaultAdminAddr = "127.0.0.1:7790"
	defaultNATSAddr  = "127.0.0.1:7722"
	defaultDataDir   = "./switchboard-data"
)

func newDevCmd() *cobra.Command {
	var o systemOptions
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run the whole system in one process with an embedded NATS server",
		Long: `dev runs the control plane, a game node and an embedded NATS server
(JetStream on disk under --data-dir) in one process. Every listener takes
HOST:PORT; port 0 picks a free port, and --ready-file receives the real
addresses once everything listens. SIGINT or SIGTERM drains and exits.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.roles = roleControl | roleNode
			o.embedNATS = true
			if o.serverKey == "" {
				key, err := devServerKey(o.dataDir)
				if err != nil {
					return err
				}
				o.serverKey = key
				o.printKey = true
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			return runSystem(ctx, cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.apiAddr, "api", defaultAPIAddr, "HTTP API listen address (client, server, health)")
	f.StringVar(&o.nodeAddr, "node", defaultNodeAddr, "game node WebSocket listen address")
	f.StringVar(&o.adminAddr, "admin", defaultAdminAddr, "admin listen address (metrics, pprof); empty disables it")
	f.StringVar(&o.natsAddr, "nats", defaultNATSAddr, "embedded NATS client listen address")
	f.StringVar(&o.dataDir, "data-dir", defaultDataDir, "directory for JetStream and the generated server key")
	f.StringVar(&o.serverKey, "server-key", "", "server API key (default: $SWITCHBOARD_SERVER_KEY, else generated once and kept in --data-dir)")
	f.StringVar(&o.readyFile, "ready-file", "", "write the bound addresses as JSON to this file once every listener is up")
	f.BoolVar(&o.allowAnonymous, "allow-anonymous", false, "accept client logins without an auth token (never in production)")
	f.StringVar(&o.nodePublicURL, "node-public-url", "", "WebSocket URL clients are told to dial (default: ws://<node address>/game/v1/ws)")
	f.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	addControlTuning(f, &o)
	addNodeTuning(f, &o)
	return cmd
}

// devServerKey returns the server key of a dev data dir: the environment's,
// else the one kept in DIR/server-key, else a new one written there.
func devServerKey(dataDir string) (string, error) {
	if k := os.Getenv("SWITCHBOARD_SERVER_KEY"); k != "" {
		return k, nil
	}
	path := filepath.Join(dataDir, "server-key")
	if b, err := os.ReadFile(path); err == nil {
		if k := strings.TrimSpace(string(b)); k != "" {
			return k, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read server key: %w", err)
	}
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("generate server key: %w", err)
	}
	key := "sk_" + base64.RawURLEncoding.EncodeToString(raw)
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", fmt.Errorf("create data dir: %w", err)
	}
	if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write server key: %w", err)
	}
	return key, nil
}

func addControlTuning(f *pflag.FlagSet, o *systemOptions) {
	f.Float64Var(&o.loginRate, "login-rate", control.DefaultLoginRate,
		"C0 logins and refreshes per second and client IP (burst 20); negative turns the limit off, e.g. for bench rooms")
}

func addNodeTuning(f *pflag.FlagSet, o *systemOptions) {
	f.DurationVar(&o.frameRetention, "frame-retention", 0,
		"how long the node keeps frames for FRAME_REQ and resume (0: 60s, the protocol's minimum for clients)")
}
