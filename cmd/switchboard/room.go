package main

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/client/backend"
)

// apiFlags locate a deployment's API and server key for the client verbs.
type apiFlags struct {
	api       string
	serverKey string
	readyFile string

	// tls is set by resolve: the pinned certificate of a ready file with
	// tls_fingerprint_sha256 (dev --tls), else nil.
	tls *tls.Config
}

func (f *apiFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	// A word in backquotes is the value's name in the help (pflag).
	fl.StringVar(&f.api, "api", "", "the API base `URL` (default: from --ready-file, else $SWITCHBOARD_API, else http://"+defaultAPIAddr+")")
	fl.StringVar(&f.serverKey, "server-key", "", "the server API `KEY` (default: from --ready-file, else $SWITCHBOARD_SERVER_KEY)")
	fl.StringVar(&f.readyFile, "ready-file", "", "read the API URL and server key from `FILE`, the ready file that switchboard dev --ready-file writes")
}

// resolve fills the API URL and key from the flags, the ready file and the
// environment, in that order.
func (f *apiFlags) resolve() (api, key string, err error) {
	api, key = f.api, f.serverKey
	if f.readyFile != "" {
		r, err := readReady(f.readyFile)
		if err != nil {
			return "", "", err
		}
		if api == "" {
			api = r.API
		}
		if key == "" {
			key = r.ServerKey
		}
		f.tls = pinnedTLS(r.TLSFingerprint)
	}
	if api == "" {
		api = os.Getenv("SWITCHBOARD_API")
	}
	if api == "" {
		api = "http://" + defaultAPIAddr
	}
	if key == "" {
		key = os.Getenv("SWITCHBOARD_SERVER_KEY")
	}
	return api, key, nil
}

func readReady(path string) (readyInfo, error) {
	var r readyInfo
	b, err := os.ReadFile(path)
	if err != nil {
		return r, fmt.Errorf("--ready-file: %w", err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("--ready-file %s: %w", path, err)
	}
	return r, nil
}

func (f *apiFlags) backend() (*backend.Client, error) {
	_, c, err := f.client()
	return c, err
}

// client resolves the flags once and returns the API URL with a server-API
// client for it.
func (f *apiFlags) client() (string, *backend.Client, error) {
	api, key, err := f.resolve()
	if err != nil {
		return "", nil, err
	}
	if key == "" {
		return "", nil, errors.New("no server key: pass --server-key, --ready-file or set $SWITCHBOARD_SERVER_KEY")
	}
	c, err := backend.New(api, key, httpClient(f.tls))
	return api, c, err
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newRoomCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "room",
		Short: "Create, inspect, close and watch rooms through the server API",
	}
	cmd.AddCommand(newRoomCreateCmd(), newRoomGetCmd(), newRoomListCmd(), newRoomCloseCmd(), newRoomKickCmd(), newRoomStartCmd(), newRoomWatchCmd())
	return cmd
}

func newRoomCreateCmd() *cobra.Command {
	var af apiFlags
	var req backend.CreateRoomRequest
	var tick, players, window, duration, snapshot int
	var metadata string
	cmd := &cobra.Command{
		Use:   "create [ROOM_ID]",
		Short: "Create a room (the id is generated when absent)",
		Args:  optionalArg(argNewRoomID),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := af.backend()
			if err != nil {
				return err
			}
			if len(args) == 1 {
				req.RoomID = args[0]
			}
			req.TickRate, req.MaxPlayers, req.ReconnectWindowSeconds = &tick, &players, &window
			if cmd.Flags().Changed("max-duration") {
				req.MaxDurationSeconds = &duration
			}
			if cmd.Flags().Changed("snapshot-interval") {
				req.SnapshotIntervalFrames = &snapshot
			}
			if metadata != "" {
				req.Metadata = json.RawMessage(metadata)
			}
			room, err := c.CreateRoom(cmd.Context(), req)
			if err != nil {
				return err
			}
			return printJSON(cmd.OutOrStdout(), map[string]any{"room": room})
		},
	}
	af.register(cmd)
	f := cmd.Flags()
	f.StringVar(&req.SyncMode, "sync-mode", "frame", "frame (lockstep) or relay")
	f.IntVar(&tick, "tick-rate", 30, "frames per second, 1–60 (frame rooms)")
	f.IntVar(&players, "max-players", 4, "seats, 1–16")
	f.StringVar(&req.StartMode, "start-mode", "all_ready", "all_ready, auto or manual")
	f.StringVar(&req.Access, "access", "ticket", "ticket or open")
	f.IntVar(&window, "reconnect-window", api.DefaultReconnectWindowSeconds, "seconds a seat waits for its player to come back, 0–600")
	f.IntVar(&duration, "max-duration", api.DefaultMaxDurationSeconds, "seconds before the room closes as expired (default: the server's)")
	f.IntVar(&snapshot, "snapshot-interval", 0, "frames between snapshots, 0 = off")
	f.StringVar(&req.Region, "region", "", "place the room on a node of this region")
	f.StringVar(&metadata, "metadata", "", "a JSON object kept with the room")
	return cmd
}

func newRoomGetCmd() *cobra.Command {
	var af apiFlags
	cmd := &cobra.Command{
		Use:   "get ROOM_ID",
		Short: "Show a room and its members",
		Args:  exactArgs(argRoomID),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := af.backend()
			if err != nil {
				return err
			}
			res, err := c.GetRoom(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if res.Members == nil {
				res.Members = []backend.Member{}
			}
			return printJSON(cmd.OutOrStdout(), res)
		},
	}
	af.register(cmd)
	return cmd
}

func newRoomListCmd() *cobra.Command {
	var af apiFlags
	var status string
	var all bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List rooms, newest pages first",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := af.backend()
			if err != nil {
				return err
			}
			var rooms []backend.Room
			page := ""
			for {
				rs, next, err := c.ListRooms(cmd.Context(), status, page)
				if err != nil {
					return err
				}
				rooms = append(rooms, rs...)
				if next == "" || !all {
					break
				}
				page = next
			}
			if rooms == nil {
				rooms = []backend.Room{}
			}
			return printJSON(cmd.OutOrStdout(), map[string]any{"rooms": rooms})
		},
	}
	af.register(cmd)
	cmd.Flags().StringVar(&status, "status", "", "only rooms with this status: open, closing, closed")
	cmd.Flags().BoolVar(&all, "all", false, "follow every page")
	return cmd
}

func newRoomCloseCmd() *cobra.Command {
	var af apiFlags
	var reason, result string
	cmd := &cobra.Command{
		Use:   "close ROOM_ID",
		Short: "Close a room; players get ROOM_STATE 3 and ERROR 9 with the result",
		Args:  exactArgs(argRoomID),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := af.backend()
			if err != nil {
				return err
			}
			var res json.RawMessage
			if result != "" {
				res = json.RawMessage(result)
			}
			if err := c.CloseRoom(cmd.Context(), args[0], reason, res); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "room %s closed\n", args[0])
			return nil
		},
	}
	af.register(cmd)
	cmd.Flags().StringVar(&reason, "reason", "", "end reason (default closed_by_server)")
	cmd.Flags().StringVar(&result, "result", "", "result JSON sent to the players")
	return cmd
}

func newRoomKickCmd() *cobra.Command {
	var af apiFlags
	var reason string
	cmd := &cobra.Command{
		Use:   "kick ROOM_ID SEAT",
		Short: "Remove the player in a seat (ERROR 8 kicked)",
		Args:  exactArgs(argRoomID, argSeat),
		RunE: func(cmd *cobra.Command, args []string) error {
			seat, err := strconv.Atoi(args[1])
			if err != nil {
				return fmt.Errorf("seat %q is not a number", args[1])
			}
			c, err := af.backend()
			if err != nil {
				return err
			}
			if err := c.Kick(cmd.Context(), args[0], seat, reason); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "seat %d of room %s kicked\n", seat, args[0])
			return nil
		},
	}
	af.register(cmd)
	cmd.Flags().StringVar(&reason, "reason", "", "reason given to the player")
	return cmd
}

func newRoomStartCmd() *cobra.Command {
	var af apiFlags
	cmd := &cobra.Command{
		Use:   "start ROOM_ID",
		Short: "Start a room whose start mode is manual",
		Args:  exactArgs(argRoomID),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := af.backend()
			if err != nil {
				return err
			}
			room, err := c.StartRoom(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printJSON(cmd.OutOrStdout(), map[string]any{"room": room})
		},
	}
	af.register(cmd)
	return cmd
}

func newTicketCmd() *cobra.Command {
	var af apiFlags
	var seat, ttl int
	cmd := &cobra.Command{
		Use:   "ticket ROOM_ID USERNAME",
		Short: "Issue a join ticket (and an auth token) for a player",
		Args:  exactArgs(argRoomID, argUsername),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := af.backend()
			if err != nil {
				return err
			}
			req := backend.TicketRequest{Username: args[1]}
			if ttl > 0 {
				req.TTLSeconds = new(int64(ttl))
			}
			if seat >= 0 {
				req.Seat = &seat
			}
			ticket, expires, err := c.CreateTicket(cmd.Context(), args[0], req)
			if err != nil {
				return err
			}
			auth, err := c.CreateAuthToken(cmd.Context(), args[1], 0)
			if err != nil {
				return err
			}
			return printJSON(cmd.OutOrStdout(), map[string]any{
				"room_id": args[0], "username": args[1], "ticket": ticket,
				"expires_at": expires.UTC().Format(time.RFC3339), "auth_token": auth,
			})
		},
	}
	af.register(cmd)
	cmd.Flags().IntVar(&seat, "seat", -1, "reserve this seat number (default: the lowest free seat at join)")
	cmd.Flags().IntVar(&ttl, "ttl", 0, "ticket lifetime in seconds (0: server default 300)")
	return cmd
}
