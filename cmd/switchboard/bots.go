package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboardgg/switchboard/bench"
	"github.com/switchboardgg/switchboard/client/rooms"
)

func newBotsCmd() *cobra.Command {
	var af apiFlags
	var roomID string
	var n int
	var duration time.Duration
	var transport string
	var loss float64
	var jitter time.Duration
	cmd := &cobra.Command{
		Use:   "bots --room ROOM -n N",
		Short: "Join bots to a room: each sends an input every frame and checks frame order",
		Long: `bots joins -n bots to the room as players, each in a free seat: each says
READY, sends an input every frame and checks that frames arrive in order,
until --duration passes, the command is interrupted or the room is closed. It
prints progress every second, and exits non-zero when a bot failed (the
reasons are printed, counted) or frames arrived out of order.

--transport auto (the SDK's default) uses the encrypted UDP channel when the
node offers it and falls back to WebSocket when UDP gets no answer; udp uses
UDP only, ws WebSocket only. UDP bots share sockets; --loss and --jitter drop
and delay their datagrams both ways through an impairment proxy in front of
the node.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if roomID == "" || n < 1 {
				return errors.New("--room and -n ≥ 1 are required")
			}
			api, be, err := af.client()
			if err != nil {
				return err
			}
			cfg := roomsConfig(af.tls) // pins dev --tls's certificate
			if cfg == nil {
				cfg = &rooms.Config{}
			}
			switch transport {
			case "auto":
			case rooms.TransportUDP, rooms.TransportWS:
				cfg.Transport = transport
			default:
				return fmt.Errorf("--transport %q: want auto, udp or ws", transport)
			}
			if transport == rooms.TransportWS && (loss != 0 || jitter != 0) {
				return errors.New("--loss and --jitter impair the UDP channel only")
			}
			var path *bench.UDPPath
			if transport != rooms.TransportWS {
				if path, err = bench.NewUDPPath(n, loss, jitter, nil); err != nil {
					return err
				}
				defer path.Close()
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			if duration > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, duration)
				defer cancel()
			}
			var cnt bench.Counters
			var lat bench.Histogram
			var wg sync.WaitGroup
			errs := make([]error, n)
			run := bench.NewRunID()
			for i := range n {
				bc := *cfg
				if path != nil {
					bc.UDPSocket = path.Socket(i)
				}
				b := &bench.Bot{API: api, Backend: be, RoomID: roomID, Username: fmt.Sprintf("bot-%s-%d", run, i),
					Seat: -1, Client: &bc, Latency: &lat, Counters: &cnt}
				wg.Add(1)
				go func() { defer wg.Done(); errs[i] = b.Run(ctx) }()
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			out := cmd.OutOrStdout()
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for loop := true; loop; {
				select {
				case <-done:
					loop = false
				case <-t.C:
					fmt.Fprintf(out, "bots %d/%d connected (%d joined over udp)  frames %d  inputs %d  order errors %d  disconnects %d  input→frame p99 %v\n",
						cnt.Connected.Load(), n, cnt.JoinedUDP.Load(), cnt.Frames.Load(), cnt.Inputs.Load(), cnt.OrderErrors.Load(), cnt.Disconnects.Load(), lat.Quantile(0.99))
				}
			}
			<-done
			var failed bench.Failures
			for _, err := range errs {
				if err != nil && !errors.Is(err, rooms.ErrRoomClosed) {
					failed.Add(err)
				}
			}
			var problems []string
			if nf := failed.Total(); nf > 0 {
				fmt.Fprintf(out, "%d of %d bots failed, by reason:\n", nf, n)
				bench.WriteCounts(out, failed.Counts())
				problems = append(problems, fmt.Sprintf("%d of %d bots failed", nf, n))
			}
			if e := cnt.OrderErrors.Load(); e > 0 {
				problems = append(problems, fmt.Sprintf("%d frames arrived out of order", e))
			}
			if len(problems) > 0 {
				return errors.New("bots: " + strings.Join(problems, "; "))
			}
			fmt.Fprintf(out, "done: %d frames in order, input→frame p50 %v p99 %v\n", cnt.Frames.Load(), lat.Quantile(0.5), lat.Quantile(0.99))
			return nil
		},
	}
	af.register(cmd)
	cmd.Flags().StringVar(&roomID, "room", "", "room id")
	cmd.Flags().IntVarP(&n, "n", "n", 1, "number of bots")
	cmd.Flags().DurationVar(&duration, "duration", 0, "stop after this long (default: until interrupted or the room ends)")
	cmd.Flags().StringVar(&transport, "transport", "auto", "auto, udp or ws (see above)")
	cmd.Flags().Float64Var(&loss, "loss", 0, "UDP only: the fraction of datagrams dropped each way, e.g. 0.02")
	cmd.Flags().DurationVar(&jitter, "jitter", 0, "UDP only: a uniform extra delay in [0, jitter) per datagram")
	return cmd
}
