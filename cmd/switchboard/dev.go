package main

import (
	"github.com/spf13/cobra"

	"github.com/switchboardgg/switchboard/node/udp"
	"github.com/switchboardgg/switchboard/system"
)

// Defaults of `switchboard dev` and `switchboard serve`. They are
// documented in docs/configuration.md.
const (
	defaultAPIAddr   = "127.0.0.1:7700"
	defaultNodeAddr  = "127.0.0.1:7701"
	defaultAdminAddr = "127.0.0.1:7790"
	defaultNATSAddr  = "127.0.0.1:7722"
	defaultDataDir   = "./switchboard-data"

	// devLoginRate and devLoginBurst are dev's C0 limit per client IP:
	// above what one developer machine makes (the load tools, a studio's
	// integration suite, `bench control` at thousands of flows per
	// second), while still a limit. `serve control` keeps control's
	// strict DefaultLoginRate and DefaultLoginBurst.
	devLoginRate  = 10000.0
	devLoginBurst = 10000

	// devSourceHandshakeRate and devSourceHandshakeBurst are dev's limit
	// of new UDP HANDSHAKEs per source address: the node-wide limit's,
	// since every bot and test client of one machine shares its address
	// (`bench rooms --transport udp` joins 64 at a time). `serve node`
	// keeps udp.DefaultSourceHandshakeRate and DefaultSourceHandshakeBurst.
	devSourceHandshakeRate  = udp.DefaultHandshakeRate
	devSourceHandshakeBurst = udp.DefaultHandshakeBurst
)

func newDevCmd() *cobra.Command {
	o := &systemOptions{}
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run the whole system in one process with an embedded NATS server",
		Long: `dev runs the control plane, a game node and an embedded NATS server
(JetStream on disk under --data-dir) in one process, and with --relay and
--relay-ws the relay data plane (with DTLS beside it on --relay-dtls; its
secret kept in --data-dir) behind Unity
Relay's REST API on --api (/relay/v1: an API key from 'switchboard relay keys
create', an access token, or --relay-allow-anonymous). Every
listener takes HOST:PORT; port 0 picks a free port, and --ready-file receives the real
addresses once every role has started. SIGINT or SIGTERM drains and exits;
SIGHUP reloads the TLS certificate.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.cfg.Roles = system.AllRoles
			if o.hub {
				o.cfg.Roles |= system.RoleHub
				o.cfg.Hub.Hub.AllowAnonymous = o.cfg.API.Control.AllowAnonymous
			}
			// A key given by flag or environment stays out of the ready
			// file and the banner; dev's own key (kept in --data-dir) is
			// shown, for the tools on this machine.
			resolveKeys(o)
			if err := resolveRelay(o); err != nil {
				return err
			}
			o.cfg.API.PublishServerKey = !cmd.Flags().Changed("server-key")
			if !cmd.Flags().Changed("relay-dtls") {
				o.cfg.Relay.DTLSAddr = devDTLSAddr(&o.cfg.Relay)
			}
			if !cmd.Flags().Changed("node-udp") {
				o.cfg.Node.UDPAddr = o.cfg.Node.Addr // the same port number, over UDP
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			return runSystem(ctx, cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.cfg.API.Addr, "api", defaultAPIAddr, "HTTP API listen address (client, server, health)")
	f.StringVar(&o.cfg.Node.Addr, "node", defaultNodeAddr, "game node WebSocket listen address")
	f.StringVar(&o.cfg.Node.UDPAddr, "node-udp", "", "game node UDP listen address (the encrypted UDP channel) (default: the --node address); empty: WebSocket only")
	f.StringVar(&o.cfg.Admin.Addr, "admin", defaultAdminAddr, "admin listen address (metrics, pprof); empty disables it")
	f.StringVar(&o.cfg.NATS.Addr, "nats", defaultNATSAddr, "embedded NATS client listen address")
	addDataDir(f, o, defaultDataDir)
	f.StringVar(&o.cfg.API.ServerKey, "server-key", "", "server API key (default: $SWITCHBOARD_SERVER_KEY, else generated once and kept in --data-dir)")
	f.BoolVar(&o.cfg.API.Control.AllowAnonymous, "allow-anonymous", false, "accept client logins without an auth token (never in production)")
	f.BoolVar(&o.tls, "tls", false, "serve https and wss with a self-signed certificate generated into --data-dir (its SHA-256 fingerprint is printed)")
	f.StringVar(&o.cfg.Node.Node.Region, "region", "", "region the game node serves")
	addRelayListenFlags(f, o, "")
	addRelaySecretFlag(f, o)
	addRelayAPIFlags(f, o)
	f.BoolVar(&o.hub, "hub", false, "run the P2P hub too (TLS on --hub-addr; --allow-anonymous applies to it as well)")
	addCommonFlags(f, o)
	addControlTuning(f, o, devLoginRate, devLoginBurst)
	addNodeTuning(f, o, devSourceHandshakeRate, devSourceHandshakeBurst)
	addHubFlags(f, o, "hub-addr")
	return cmd
}
