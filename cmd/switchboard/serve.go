package main

import (
	"os"

	"github.com/spf13/cobra"
)

func newServeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve ROLE",
		Short: "Run one role (control or node) against a NATS cluster",
		Long: `serve runs one role of a production deployment. Every process of a
deployment points at the same NATS cluster (--nats-url, JetStream enabled);
run as many control and node processes as you need, on as many machines.`,
	}
	cmd.AddCommand(newServeRoleCmd(roleControl), newServeRoleCmd(roleNode))
	return cmd
}

func newServeRoleCmd(r role) *cobra.Command {
	var o systemOptions
	cmd := &cobra.Command{
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.roles = r
			if o.serverKey == "" {
				o.serverKey = os.Getenv("SWITCHBOARD_SERVER_KEY")
			}
			if o.natsCreds == "" {
				o.natsCreds = os.Getenv("SWITCHBOARD_NATS_CREDS")
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			return runSystem(ctx, cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.natsURL, "nats-url", "nats://127.0.0.1:4222", "NATS server URL(s), comma-separated")
	f.StringVar(&o.natsCreds, "nats-creds", "", "NATS credentials `file`: an nkey seed (a dev data dir's nats-user.nk) or a .creds file (default: $SWITCHBOARD_NATS_CREDS)")
	f.StringVar(&o.adminAddr, "admin", "", "admin listen address (metrics, pprof); empty disables it")
	f.StringVar(&o.readyFile, "ready-file", "", "write the bound addresses as JSON to this file once every listener is up")
	f.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	switch r {
	case roleControl:
		cmd.Use = "control"
		cmd.Short = "Serve the HTTP APIs (client, server, health)"
		f.StringVar(&o.apiAddr, "api", defaultAPIAddr, "HTTP API listen address")
		f.StringVar(&o.serverKey, "server-key", "", "server API key (default: $SWITCHBOARD_SERVER_KEY; required)")
		f.BoolVar(&o.allowAnonymous, "allow-anonymous", false, "accept client logins without an auth token (never in production)")
		addControlTuning(f, &o)
	case roleNode:
		cmd.Use = "node"
		cmd.Short = "Serve a game node (WebSocket)"
		f.StringVar(&o.nodeAddr, "node", defaultNodeAddr, "game node WebSocket listen address")
		f.StringVar(&o.nodeID, "node-id", "", "this node's id, unique in the deployment (default: hostname plus a random suffix)")
		f.StringVar(&o.nodePublicURL, "node-public-url", "", "WebSocket URL clients are told to dial (default: ws://<node address>/game/v1/ws)")
		f.StringVar(&o.region, "region", "", "region this node serves (rooms created with a region go to its nodes)")
		addNodeTuning(f, &o)
	}
	return cmd
}
