package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/switchboardgg/switchboard/control"
	"github.com/switchboardgg/switchboard/node/udp"
	"github.com/switchboardgg/switchboard/system"
)

func newServeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve ROLE",
		Short: "Run one role (control, node, relay or hub) against a NATS cluster",
		Long: `serve runs one role of a production deployment. Every process of a
deployment points at the same NATS cluster (--nats-url, JetStream enabled);
run as many control, node, relay and hub processes as you need, on as many
machines.
Each process owns its --data-dir (lock, node id, certificate).`,
	}
	cmd.AddCommand(newServeRoleCmd(system.RoleControl), newServeRoleCmd(system.RoleNode), newServeRoleCmd(system.RoleRelay), newServeRoleCmd(system.RoleHub))
	return cmd
}

func newServeRoleCmd(r system.Role) *cobra.Command {
	o := &systemOptions{}
	cmd := &cobra.Command{
		Use:  r.String(),
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.cfg.Roles = r
			resolveKeys(o)
			if err := resolveRelay(o); err != nil {
				return err
			}
			if r == system.RoleRelay && o.cfg.Relay.UDPAddr == "" && o.cfg.Relay.WSAddr == "" && o.cfg.Relay.DTLSAddr == "" {
				return errors.New("a relay listener is required: --relay, --relay-ws or --relay-dtls")
			}
			if r == system.RoleRelay && len(o.cfg.Relay.Secret) == 0 {
				// A secret of its own would open no allocation control seals.
				return errors.New("the deployment's relay secret is required: --relay-secret-file or $SWITCHBOARD_RELAY_SECRET (the same as control's)")
			}
			if r == system.RoleControl && o.cfg.API.ServerKey == "" {
				return errors.New("a server key is required: --server-key or $SWITCHBOARD_SERVER_KEY")
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			return runSystem(ctx, cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.cfg.NATS.URL, "nats-url", "nats://127.0.0.1:4222", "NATS server URL(s), comma-separated")
	f.StringVar(&o.cfg.NATS.CredentialsFile, "nats-creds", "",
		"NATS credentials `file`: an nkey seed (a dev data dir's nats-user.nk) or a .creds file (default: $SWITCHBOARD_NATS_CREDS)")
	f.StringVar(&o.cfg.Admin.Addr, "admin", "", "admin listen address (metrics, pprof); empty disables it")
	addDataDir(f, o, "./switchboard-"+r.String()+"-data")
	addCommonFlags(f, o)
	switch r {
	case system.RoleControl:
		cmd.Short = "Serve the HTTP APIs (client, server, health)"
		f.StringVar(&o.cfg.API.Addr, "api", defaultAPIAddr, "HTTP API listen address")
		f.StringVar(&o.cfg.API.ServerKey, "server-key", "", "server API key (default: $SWITCHBOARD_SERVER_KEY; required)")
		f.BoolVar(&o.cfg.API.Control.AllowAnonymous, "allow-anonymous", false, "accept client logins without an auth token (never in production)")
		addControlTuning(f, o, control.DefaultLoginRate, control.DefaultLoginBurst)
		addRelaySecretFlag(f, o)
		addRelayAPIFlags(f, o)
	case system.RoleNode:
		cmd.Short = "Serve a game node (WebSocket, and UDP with --node-udp)"
		f.StringVar(&o.cfg.Node.Addr, "node", defaultNodeAddr, "game node WebSocket listen address")
		f.StringVar(&o.cfg.Node.UDPAddr, "node-udp", "", "game node UDP listen address, e.g. 0.0.0.0:7701 (the encrypted UDP channel); empty: WebSocket only")
		f.StringVar(&o.cfg.Node.Node.Region, "region", "", "region this node serves (rooms created with a region go to its nodes)")
		addNodeTuning(f, o, udp.DefaultSourceHandshakeRate, udp.DefaultSourceHandshakeBurst)
	case system.RoleRelay:
		cmd.Short = "Serve a relay node (Unity Relay protocol over UDP and WebSocket)"
		addRelayListenFlags(f, o, "127.0.0.1:7702")
		addRelaySecretFlag(f, o)
		f.StringVar(&o.cfg.Node.Node.Region, "region", "", "region this relay serves (allocations asking for a region go to its relays)")
		f.StringVar(&o.cfg.Node.ID, "node-id", "",
			"this relay's id, unique in the deployment (default: kept in --data-dir, derived from the host name on first start)")
	case system.RoleHub:
		cmd.Short = "Serve a P2P hub (TLS; peers come with tickets from the API)"
		addHubFlags(f, o, "hub")
		f.StringVar(&o.cfg.Node.ID, "node-id", "",
			"this hub's id, unique in the deployment (default: kept in --data-dir, derived from the host name on first start)")
		f.BoolVar(&o.cfg.Hub.Hub.AllowAnonymous, "allow-anonymous", false, "admit peers without a ticket (HELLO ticket \"anonymous:NETWORK\"; never in production)")
	}
	return cmd
}
