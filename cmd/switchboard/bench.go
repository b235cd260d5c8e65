package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboardgg/switchboard/bench"
)

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Load generators that drive a running server",
	}
	cmd.AddCommand(newBenchRoomsCmd(), newBenchControlCmd(), newBenchRelayCmd(), newBenchRelayTargetCmd(), newBenchP2PCmd())
	return cmd
}

func newBenchRoomsCmd() *cobra.Command {
	var af apiFlags
	var cfg bench.RoomsConfig
	var metrics, profile string
	cmd := &cobra.Command{
		Use:   "rooms",
		Short: "Fill lockstep rooms with bots over WebSocket or UDP and measure",
		Long: `bench rooms creates --rooms rooms of --players seats at --tick Hz on a
running server, joins a bot to every seat (the same Go SDK games use), and once
all have joined measures for --duration: players connected, frames/s delivered,
input→frame latency, and — from the server's /metrics — tick lateness and server
CPU. --transport udp uses the encrypted UDP channel (bots share sockets with
batched I/O, and never fall back to WebSocket); --loss and --jitter then drop
and delay its datagrams both ways through an impairment proxy in front of the
node. switchboard dev allows one machine thousands of logins a second; a
server started with serve control needs --login-rate -1 for that. It exits non-zero when a player failed to join or play,
or frames arrived out of order, and prints the reasons, counted. See
docs/benchmarks.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			api, key, err := af.resolve()
			if err != nil {
				return err
			}
			cfg.API, cfg.ServerKey, cfg.Out = api, key, cmd.OutOrStdout()
			cfg.MetricsURL = metrics
			if cfg.MetricsURL == "" && af.readyFile != "" {
				if r, err := readReady(af.readyFile); err == nil && r.Admin != "" {
					cfg.MetricsURL = r.Admin + "/metrics"
				}
			}
			if profile != "" {
				pf, err := os.Create(profile)
				if err != nil {
					return fmt.Errorf("bench rooms: %w", err)
				}
				defer pf.Close()
				cfg.CPUProfile = pf
			}
			res, err := bench.RunRooms(cmd.Context(), cfg)
			switch {
			case err == nil:
				return nil
			case errors.Is(err, bench.ErrPlayersFailed) && res != nil:
				return fmt.Errorf("bench rooms: %d of %d players failed, %d frames out of order (reasons above)", res.Failed, res.PlayersWanted, res.OrderErrors)
			case errors.Is(err, bench.ErrPlayersFailed):
				return errors.New("bench rooms: no player joined (reasons above)")
			}
			return fmt.Errorf("bench rooms: %s", describe(err))
		},
	}
	af.register(cmd)
	f := cmd.Flags()
	f.IntVar(&cfg.Rooms, "rooms", 10, "rooms")
	f.IntVar(&cfg.Players, "players", 4, "players per room")
	f.IntVar(&cfg.Tick, "tick", 30, "tick rate, Hz")
	f.DurationVar(&cfg.Duration, "duration", 30*time.Second, "measured time after every player joined")
	f.IntVar(&cfg.JoinConcurrency, "join-concurrency", bench.DefaultJoinConcurrency, "players joining at once")
	f.StringVar(&cfg.Transport, "transport", "ws", "the bots' channel: ws or udp")
	f.Float64Var(&cfg.Loss, "loss", 0, "UDP only: the fraction of datagrams dropped each way, e.g. 0.02")
	f.DurationVar(&cfg.Jitter, "jitter", 0, "UDP only: a uniform extra delay in [0, jitter) per datagram")
	f.StringVar(&metrics, "metrics", "", "the server's metrics URL (default: admin address from --ready-file + /metrics)")
	f.StringVar(&profile, "cpuprofile", "", "write a CPU profile of the load generator over the measured window to `FILE`")
	return cmd
}

func newBenchControlCmd() *cobra.Command {
	var af apiFlags
	var cfg bench.ControlConfig
	cmd := &cobra.Command{
		Use:   "control",
		Short: "Measure the control plane: auth token, login and join flows",
		Long: `bench control runs --concurrency flows at once against a running server,
each one "mint an auth token → log in (C0) → join an open room (C1)" as a new
user, rooms of --room-size seats created ahead, nobody connecting to the node. It
prints flows/s every second, then flows/s, the flow latency p50/p99 and the
server's CPU per flow, read from /proc/<--server-pid>/stat or else from the
server's /metrics. Start the server with --login-rate -1. See
docs/benchmarks.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			api, key, err := af.resolve()
			if err != nil {
				return err
			}
			cfg.API, cfg.ServerKey, cfg.Out = api, key, cmd.OutOrStdout()
			if cfg.MetricsURL == "" && af.readyFile != "" {
				if r, err := readReady(af.readyFile); err == nil && r.Admin != "" {
					cfg.MetricsURL = r.Admin + "/metrics"
				}
			}
			_, err = bench.RunControl(cmd.Context(), cfg)
			return err
		},
	}
	af.register(cmd)
	f := cmd.Flags()
	f.DurationVar(&cfg.Duration, "duration", bench.DefaultControlDuration, "measured time")
	f.IntVar(&cfg.Concurrency, "concurrency", bench.DefaultControlConcurrency, "flows in flight")
	f.IntVar(&cfg.RoomSize, "room-size", bench.DefaultControlRoomSize, "max_players of the rooms joined")
	f.IntVar(&cfg.ServerPID, "server-pid", 0, "the server's process id, to read its CPU from /proc (default: from --metrics)")
	f.StringVar(&cfg.MetricsURL, "metrics", "", "the server's metrics URL (default: admin address from --ready-file + /metrics)")
	return cmd
}
