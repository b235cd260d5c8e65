package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/switchboardgg/switchboard/bench"
	"github.com/switchboardgg/switchboard/client/rooms"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

func newRoomWatchCmd() *cobra.Command {
	var af apiFlags
	var every int
	var username string
	cmd := &cobra.Command{
		Use:   "watch ROOM_ID",
		Short: "Join a room as a player and print its frames, members and state live",
		Long: `watch joins the room as a player: it takes a free seat (so a full room
cannot be watched, and a room that starts when all are ready waits for it too),
says READY, sends no inputs, and prints every --every'th frame with its inputs,
and every member and room-state event, until interrupted or the room ends.
Rooms have no spectator seats yet.`,
		Args: exactArgs(argRoomID),
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
			b := &bench.Bot{API: api, Backend: be, RoomID: args[0], Username: username, Seat: -1, Client: roomsConfig(af.tls)}
			err = watchRoom(ctx, b, cmd.OutOrStdout(), every)
			if err == nil || errors.Is(err, rooms.ErrRoomClosed) || ctx.Err() != nil {
				return nil // the room ended, or the user interrupted
			}
			return fmt.Errorf("room watch %s: %s", args[0], describe(err))
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
	fmt.Fprintln(out, formatJoined(b.RoomID, st))
	for _, m := range st.Members {
		fmt.Fprintln(out, formatMember(m))
	}
	if err := room.Ready(); err != nil {
		return &bench.StageError{Username: b.Username, Stage: bench.StageReady, Err: err}
	}
	// Until both channels close, which the room does when it ends, after
	// its last event (EventClosed): waiting on room.Done instead let the
	// select take Done before that event, and "room closed" went unsaid.
	frames, events := room.Frames(), room.Events()
	for frames != nil || events != nil {
		select {
		case <-ctx.Done():
			return nil
		case f, ok := <-frames:
			if !ok {
				frames = nil
			} else if f.Number%uint32(every) == 0 {
				fmt.Fprintln(out, formatFrame(f))
			}
		case ev, ok := <-events:
			if !ok {
				events = nil
			} else {
				fmt.Fprintln(out, formatEvent(ev))
			}
		}
	}
	if err := room.Err(); err != nil && !errors.Is(err, rooms.ErrRoomClosed) {
		return &bench.StageError{Username: b.Username, Stage: bench.StagePlay, Err: err}
	}
	return room.Err()
}

// formatJoined describes the WELCOME: the watcher's seat and the room.
func formatJoined(roomID string, st rooms.State) string {
	mode := roomwire.SyncModeName(st.SyncMode)
	if st.SyncMode == roomwire.SyncFrame {
		mode = fmt.Sprintf("%s sync at %d Hz", mode, st.TickRate)
	}
	return fmt.Sprintf("joined room %s in seat %d of %d (%s); room %s",
		roomID, st.Seat, st.MaxPlayers, mode, roomwire.StateName(st.RoomState))
}

// formatMember describes a member of the WELCOME.
func formatMember(m rooms.Member) string {
	kind := roomwire.MemberKindName(roomwire.MemberOffline)
	if m.Online {
		kind = roomwire.MemberKindName(roomwire.MemberOnline)
	}
	return fmt.Sprintf("member seat %d %s %s", m.Seat, m.Username, kind)
}

// formatFrame prints a frame with its inputs in hex.
func formatFrame(f rooms.Frame) string {
	if f.Restore {
		return fmt.Sprintf("frame %d restored from a snapshot (%d bytes)", f.Number, len(f.Snapshot))
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "frame %d", f.Number)
	for _, in := range f.Inputs {
		fmt.Fprintf(&sb, " [seat %d: %s]", in.Seat, hex.EncodeToString(in.Data))
	}
	return sb.String()
}

// formatEvent describes an event with the protocol's names (room states,
// member kinds), never raw numbers.
func formatEvent(ev rooms.Event) string {
	var sb strings.Builder
	switch ev.Kind {
	case rooms.EventMember:
		fmt.Fprintf(&sb, "member seat %d %s %s", ev.Seat, ev.Username, roomwire.MemberKindName(ev.MemberKind))
		if ev.Reason != "" {
			sb.WriteString(" " + ev.Reason)
		}
	case rooms.EventRoomState:
		sb.WriteString("room " + roomwire.StateName(ev.State))
		if ev.State == roomwire.StatePlaying {
			fmt.Fprintf(&sb, " from frame %d", ev.StartFrame)
		}
		if ev.Reason != "" {
			sb.WriteString(" " + ev.Reason)
		}
		if len(ev.Result) > 0 {
			sb.WriteString(" result " + string(ev.Result))
		}
	case rooms.EventCustom:
		fmt.Fprintf(&sb, "custom from seat %d to %#04x: %s", ev.Seat, ev.To, hex.EncodeToString(ev.Data))
	case rooms.EventSnapshot:
		fmt.Fprintf(&sb, "snapshot of frame %d", ev.Frame)
	case rooms.EventDisconnected:
		fmt.Fprintf(&sb, "disconnected (%v); reconnecting", ev.Err)
	case rooms.EventResumed:
		sb.WriteString("reconnected")
		if ev.Rejoined {
			sb.WriteString(" (joined again)")
		}
	case rooms.EventClosed:
		if errors.Is(ev.Err, rooms.ErrRoomClosed) {
			sb.WriteString("room closed")
			if ev.Reason != "" {
				sb.WriteString(" " + ev.Reason)
			}
			if len(ev.Result) > 0 {
				sb.WriteString(" result " + string(ev.Result))
			}
		} else {
			fmt.Fprintf(&sb, "closed (%v)", ev.Err)
		}
	default:
		fmt.Fprintf(&sb, "%s %v", ev.Kind, ev.Err)
	}
	return sb.String()
}
