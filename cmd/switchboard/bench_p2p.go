package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/switchboardgg/switchboard/bench"
)

func newBenchP2PCmd() *cobra.Command {
	var cfg bench.P2PConfig
	var ucfg bench.P2PUDPConfig
	var udp bool
	var readyFile, metrics string
	cmd := &cobra.Command{
		Use:   "p2p",
		Short: "Pairs of peers echoing messages through a P2P hub over TLS",
		Long: `bench p2p connects --peers peers to a running hub over TLS, speaking the
wire protocol directly (so that the bench is not the limit), as anonymous peers
of one network: the hub must run with --allow-anonymous, and with its per-peer
limits off for the bench (--hub-peer-rate -1 --hub-peer-bandwidth -1
--hub-network-bandwidth -1). Peer i is paired with peer i^1; each peer keeps
--inflight 32-byte messages in flight to its partner, which echoes them (closed
loop). After --warmup it measures for --duration: messages/s received, the
round trip p50/p99, its own CPU, and the hub's CPU per message and RSS from
the hub's /metrics (the admin listener).

With --udp it measures the hub's UDP port instead: --pairs pairs of anonymous
peers register, and the first of each pair sends sealed UDP_MESSAGEs (--size
payload bytes) to the second through the hub, open loop, at a rate rising from
--start-rate by --factor every --step until two steps in a row lose more than
--max-loss; it prints each step's offered and delivered rate, loss and the
hub's CPU per datagram (--pid, or the hub's /metrics), and the loss-free rate
(the highest delivered rate of a step within --max-loss). The hub needs
--allow-anonymous and --hub-peer-datagram-rate -1. With --forwarder HOST:PORT
and --forwarder-to HOST:PORT it measures a bare UDP forwarder
(shared/baselines/udpfwd) with datagrams of the same size instead, for
comparison in the same run (scripts/bench-p2p-udp). See docs/benchmarks.md.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if readyFile != "" {
				r, err := readReady(readyFile)
				if err != nil {
					return err
				}
				if cfg.Hub == "" {
					cfg.Hub = r.Hub
				}
				if cfg.Fingerprint == "" {
					cfg.Fingerprint = r.HubFingerprint
				}
				if metrics == "" && r.Admin != "" {
					metrics = r.Admin + "/metrics"
				}
			}
			if udp {
				ucfg.Hub, ucfg.Fingerprint, ucfg.Network, ucfg.Out = cfg.Hub, cfg.Fingerprint, cfg.Network, cmd.OutOrStdout()
				if ucfg.PID == 0 && ucfg.Forwarder == "" {
					ucfg.MetricsURL = metrics
				}
				if ucfg.Hub == "" && ucfg.Forwarder == "" {
					return errors.New("bench p2p --udp: no hub: --hub HOST:PORT, --ready-file, or --forwarder")
				}
				_, err := bench.RunP2PUDP(cmd.Context(), ucfg)
				return err
			}
			if cfg.Hub == "" {
				return errors.New("bench p2p: no hub: --hub HOST:PORT or --ready-file of a process that runs one (dev --hub)")
			}
			cfg.MetricsURL, cfg.Out = metrics, cmd.OutOrStdout()
			if _, err := bench.RunP2P(cmd.Context(), cfg); err != nil {
				return err
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&readyFile, "ready-file", "", "read the hub address, its fingerprint and the admin URL from `FILE` (switchboard dev --hub --ready-file)")
	f.StringVar(&cfg.Hub, "hub", "", "the hub's `HOST:PORT` (default: from --ready-file)")
	f.StringVar(&cfg.Fingerprint, "fingerprint", "", "SHA-256 fingerprint of the hub's certificate to pin (default: from --ready-file; empty: not verified)")
	f.StringVar(&metrics, "metrics", "", "the hub process's /metrics `URL`, for its CPU and RSS (default: the ready file's admin)")
	f.StringVar(&cfg.Network, "network", bench.DefaultP2PNetwork, "network the peers join")
	f.IntVar(&cfg.Peers, "peers", bench.DefaultP2PPeers, "peers (even), paired")
	f.IntVar(&cfg.Inflight, "inflight", bench.DefaultP2PInflight, "messages in flight per peer")
	f.DurationVar(&cfg.Warmup, "warmup", bench.DefaultP2PWarmup, "time before measuring")
	f.DurationVar(&cfg.Duration, "duration", bench.DefaultP2PDuration, "measured time")
	f.BoolVar(&udp, "udp", false, "measure the hub's UDP port (sealed datagrams routed through it) instead of TLS")
	f.IntVar(&ucfg.Pairs, "pairs", bench.DefaultP2PUDPPairs, "--udp: sender/receiver pairs")
	f.IntVar(&ucfg.Size, "size", bench.DefaultP2PUDPSize, "--udp: envelope payload bytes per datagram")
	f.IntVar(&ucfg.StartRate, "start-rate", bench.DefaultP2PUDPStartRate, "--udp: first rate of the ladder, datagrams/s")
	f.IntVar(&ucfg.MaxRate, "max-rate", bench.DefaultP2PUDPMaxRate, "--udp: last rate of the ladder, datagrams/s")
	f.Float64Var(&ucfg.Factor, "factor", bench.DefaultP2PUDPFactor, "--udp: rate multiplier between steps")
	f.DurationVar(&ucfg.Step, "step", bench.DefaultP2PUDPStep, "--udp: duration of each rate")
	f.Float64Var(&ucfg.MaxLoss, "max-loss", bench.DefaultP2PUDPMaxLoss, "--udp: loss (fraction) above which a rate is not loss-free")
	f.IntVar(&ucfg.PID, "pid", 0, "--udp: the measured process (hub or forwarder), for its CPU per datagram from /proc")
	f.StringVar(&ucfg.Forwarder, "forwarder", "", "--udp: measure a bare UDP forwarder listening on `HOST:PORT` instead of the hub")
	f.StringVar(&ucfg.ForwarderTo, "forwarder-to", "", "--udp: where the forwarder writes, `HOST:PORT` (the bench listens there)")
	return cmd
}
