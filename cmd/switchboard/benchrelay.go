package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboardgg/switchboard/bench/relaybench"
	"github.com/switchboardgg/switchboard/relay"
	"github.com/switchboardgg/switchboard/tokens"
)

// relaySecretFlags name the relay secret the bench seals allocations with,
// until the relay REST API hands them out.
type relaySecretFlags struct {
	file      string
	keyID     uint8
	nodeID    string
	bootEpoch uint64
}

func (f *relaySecretFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.file, "secret-file", "", "file holding the relay secret, hex (at least 32 bytes: openssl rand -hex 32)")
	fs.Uint8Var(&f.keyID, "key-id", 1, "the secret's key id")
	fs.StringVar(&f.nodeID, "node-id", "bench-relay", "the relay node's id")
	fs.Uint64Var(&f.bootEpoch, "boot-epoch", 1, "the relay node's boot epoch")
}

func (f *relaySecretFlags) keyring() (*tokens.RelayKeyring, error) {
	if f.file == "" {
		return nil, errors.New("--secret-file is required")
	}
	b, err := os.ReadFile(f.file)
	if err != nil {
		return nil, fmt.Errorf("reading the relay secret: %w", err)
	}
	secret, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("relay secret in %s: not hex: %w", f.file, err)
	}
	return tokens.NewRelayKeyring(tokens.RelayKey{ID: f.keyID, Secret: secret})
}

func newBenchRelayCmd() *cobra.Command {
	var (
		sf  relaySecretFlags
		cfg relaybench.Config
	)
	cmd := &cobra.Command{
		Use:   "relay",
		Short: "Offer UDP traffic through a relay node (or the bare forwarder) and measure",
		Long: `bench relay makes --pairs host/joiner allocation pairs on a relay node's UDP port
(--target), sealing their connection data itself from the relay secret
(--secret-file, --node-id, --boot-epoch must be the node's), binds and connects
them, then offers --rate RELAY datagrams per second of --size payload bytes,
joiners to hosts, for --warmup then --duration. Each second it prints offered
and forwarded rates; at the end: offered, forwarded, loss, latency p50/p99/p999
and, with --server-pid, the server's CPU per forwarded datagram.

With --forwarder ADDR and --forwarder-to ADDR it sends datagrams of the same
size to a bare forwarder (shared/baselines/udpfwd -listen ADDR -to ADDR)
instead: the baseline. scripts/bench-relay runs both, pinned, three times.
See docs/benchmarks.md.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.Target != "" {
				keys, err := sf.keyring()
				if err != nil {
					return err
				}
				cfg.Keys, cfg.NodeID, cfg.BootEpoch = keys, sf.nodeID, sf.bootEpoch
			}
			cfg.Out = cmd.OutOrStdout()
			_, err := relaybench.Run(cmd.Context(), cfg)
			return err
		},
	}
	sf.register(cmd)
	f := cmd.Flags()
	f.StringVar(&cfg.Target, "target", "", "the relay node's UDP address")
	f.StringVar(&cfg.Forwarder, "forwarder", "", "a bare forwarder's address (baseline mode)")
	f.StringVar(&cfg.ForwarderTo, "forwarder-to", "127.0.0.1:9001", "where the forwarder sends (the bench listens there)")
	f.IntVar(&cfg.Pairs, "pairs", 10, "host/joiner pairs")
	f.IntVar(&cfg.Size, "size", 64, "payload bytes per RELAY")
	f.IntVar(&cfg.Rate, "rate", 50_000, "datagrams per second, all pairs together")
	f.DurationVar(&cfg.Duration, "duration", 10*time.Second, "measured window")
	f.DurationVar(&cfg.Warmup, "warmup", relaybench.DefaultWarmup, "traffic before the window")
	f.IntVar(&cfg.ServerPID, "server-pid", 0, "the relay's (or forwarder's) process id, for its CPU time")
	return cmd
}

// newBenchRelayTargetCmd runs a relay node's data plane alone, the target
// of bench relay until `serve relay` exists.
func newBenchRelayTargetCmd() *cobra.Command {
	var (
		sf      relaySecretFlags
		addr    string
		rate    int
		profile string
	)
	cmd := &cobra.Command{
		Use:   "relay-target",
		Short: "Run a relay node's data plane alone on a UDP port, for bench relay",
		Long: `bench relay-target serves the relay protocol on --udp with the relay secret of
--secret-file until interrupted, with limits raised for benchmarking
(--allocation-rate). It has no REST API, registry or metrics endpoint: it is the
target of bench relay, which seals its own allocations.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			keys, err := sf.keyring()
			if err != nil {
				return err
			}
			s, err := relay.New(relay.Config{
				Keys: keys, NodeID: sf.nodeID, BootEpoch: sf.bootEpoch,
				AllocationRate: rate, AllocationBurst: max(rate/10, relay.DefaultMaxDatagram),
				SourceRate: 1 << 20, SourceBurst: 1 << 20, // the bench binds every pair from two sockets
				Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
			})
			if err != nil {
				return err
			}
			pc, err := net.ListenPacket("udp", addr)
			if err != nil {
				return err
			}
			if profile != "" {
				pf, err := os.Create(profile)
				if err != nil {
					return err
				}
				defer pf.Close()
				if err := pprof.StartCPUProfile(pf); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			fmt.Fprintf(cmd.OutOrStdout(), "relay data plane on udp %s (pid %d)\n", pc.LocalAddr(), os.Getpid())
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			go func() {
				<-ctx.Done()
				s.Close()
			}()
			if err := s.ServePacket(pc); !errors.Is(err, relay.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	sf.register(cmd)
	cmd.Flags().StringVar(&addr, "udp", "127.0.0.1:37000", "UDP address to serve")
	cmd.Flags().IntVar(&rate, "allocation-rate", 1<<30, "bytes per second one allocation may send")
	cmd.Flags().StringVar(&profile, "cpuprofile", "", "write a CPU profile to this file until interrupted")
	return cmd
}
