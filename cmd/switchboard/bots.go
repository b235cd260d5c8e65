package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboardgg/switchboard/bench"
	"github.com/switchboardgg/switchboard/client/rooms"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

func newBotsCmd() *cobra.Command {
	var af apiFlags
	var roomID string
	var n int
	var duration time.Duration
	cmd := &cobra.Command{
		Use:   "bots --room ROOM -n N",
		Short: "Join bots to a room: each sends an input every frame and checks frame order",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if roomID == "" || n < 1 {
				return errors.New("--room and -n ≥ 1 are required")
			}
			api, be, err := af.client()
			if err != nil {
				return err
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
				b := &bench.Bot{API: api, Backend: be, RoomID: roomID, Username: fmt.Sprintf("bot-%s-%d", run, i),
					Seat: -1, Latency: &lat, Counters: &cnt}
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
					fmt.Fprintf(out, "bots %d/%d connected  frames %d  inputs %d  order errors %d  disconnects %d  input→frame p99 %v\n",
						cnt.Connected.Load(), n, cnt.Frames.Load(), cnt.Inputs.Load(), cnt.OrderErrors.Load(), cnt.Disconnects.Load(), lat.Quantile(0.99))
				}
			}
			<-done
			for i, err := range errs {
				if err != nil && !errors.Is(err, rooms.ErrRoomClosed) {
					fmt.Fprintf(out, "bot %d: %v\n", i, err)
				}
			}
			if e := cnt.OrderErrors.Load(); e > 0 {
				return fmt.Errorf("%d frames arrived out of order", e)
			}
			fmt.Fprintf(out, "done: %d frames in order, input→frame p50 %v p99 %v\n", cnt.Frames.Load(), lat.Quantile(0.5), lat.Quantile(0.99))
			return nil
		},
	}
	af.register(cmd)
	cmd.Flags().StringVar(&roomID, "room", "", "room id")
	cmd.Flags().IntVarP(&n, "n", "n", 1, "number of bots")
	cmd.Flags().DurationVar(&duration, "duration", 0, "stop after this long (default: until interrupted or the room ends)")
	return cmd
}

func newRoomWatchCmd() *cobra.Command {
	var af apiFlags
	var every int
	var username string
	cmd := &cobra.Command{
		Use:   "watch ROOM_ID",
		Short: "Join a room and print its frames, members and state live",
		Long: `watch takes a seat in the room (it is a player that sends no inputs),
says READY, and prints every --every'th frame with its inputs, and every member
and room-state event, until interrupted or the room ends.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			api, be, err := af.client()
			if err != nil {
				return err
			}
			if username == "" {
				username = "watch-" + bench.NewRunID()
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			out := cmd.OutOrStdout()
			b := &bench.Bot{API: api, Backend: be, RoomID: args[0], Username: username, Seat: -1}
			err = watchRoom(ctx, b, out, every)
			if errors.Is(err, rooms.ErrRoomClosed) {
				return nil
			}
			return err
		},
	}
	af.register(cmd)
	cmd.Flags().IntVar(&every, "every", 1, "print every Nth frame")
	cmd.Flags().StringVar(&username, "username", "", "the watcher's username (default: watch-<random>)")
	return cmd
}

// watchRoom joins as b and prints until ctx ends or the room does.
func watchRoom(ctx context.Context, b *bench.Bot, out io.Writer, every int) error {
	if every < 1 {
		every = 1
	}
	room, err := b.Join(ctx)
	if err != nil {
		return err
	}
	defer room.Close()
	st := room.State()
	fmt.Fprintf(out, "joined %s as seat %d (%d seats, %d Hz, state %d)\n", b.RoomID, st.Seat, st.MaxPlayers, st.TickRate, st.RoomState)
	for _, m := range st.Members {
		fmt.Fprintf(out, "member seat %d %s online=%v\n", m.Seat, m.Username, m.Online)
	}
	if err := room.Ready(); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case f, ok := <-room.Frames():
			if !ok || f.Number%uint32(every) != 0 {
				continue
			}
			if f.Restore {
				fmt.Fprintf(out, "frame %d restored from a snapshot (%d bytes)\n", f.Number, len(f.Snapshot))
				continue
			}
			fmt.Fprintf(out, "frame %d", f.Number)
			for _, in := range f.Inputs {
				fmt.Fprintf(out, " [seat %d: %s]", in.Seat, hex.EncodeToString(in.Data))
			}
			fmt.Fprintln(out)
		case ev := <-room.Events():
			switch ev.Kind {
			case rooms.EventMember:
				kind := map[uint8]string{roomwire.MemberOnline: "online", roomwire.MemberOffline: "offline", roomwire.MemberLeft: "left"}[ev.MemberKind]
				fmt.Fprintf(out, "member seat %d %s %s %s\n", ev.Seat, ev.Username, kind, ev.Reason)
			case rooms.EventRoomState:
				fmt.Fprintf(out, "room state %d start_frame %d %s %s\n", ev.State, ev.StartFrame, ev.Reason, ev.Result)
			case rooms.EventCustom:
				fmt.Fprintf(out, "custom from seat %d to %#04x: %s\n", ev.Seat, ev.To, hex.EncodeToString(ev.Data))
			case rooms.EventClosed:
				fmt.Fprintf(out, "closed: %v %s\n", ev.Err, ev.Result)
			default:
				fmt.Fprintf(out, "%s %v\n", ev.Kind, ev.Err)
			}
		case <-room.Done():
			return room.Err()
		}
	}
}
