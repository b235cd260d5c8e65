// Command lockstep is a small game loop on Switchboard game rooms, written as
// documentation of the Go SDK, package client/rooms (docs/sdk/go.md).
//
// It logs a player in, joins a frame-sync room, applies every lockstep frame
// to a deterministic game state, sends one input per frame, sends snapshots
// when it is the room's snapshot provider, and prints its progress and the
// room's events. The "game" is a running SHA-256 over the frames: every
// client of a room that applied the same frames holds the same state, so the
// printed states can be compared across players and runs.
//
// Try it against a local deployment (switchboard dev serves the API on
// 127.0.0.1:7700, the default of --api):
//
//	go run ./cmd/switchboard dev --ready-file /tmp/sb.json &
//	go run ./examples/lockstep --server-key "$(jq -r .server_key /tmp/sb.json)" --session /tmp/alice.json
//
// With --server-key the program plays the game backend's part as well (a
// demo only: a real game client never holds the server key): it creates a
// room unless --room names one, and mints the player's auth token and join
// ticket. A real client gets those from its own backend and passes
// --auth-token and --ticket.
//
// With --session FILE it survives an app restart: it saves the login session
// to FILE after login and after every token refresh, and when FILE exists it
// restores that session instead of logging in, asks the API which room the
// session holds (C3, GET /client/v1/game/current) and rejoins it without a
// ticket. Kill the program (kill -9) while it plays and start it again with
// the same --session: it comes back to its seat and rebuilds its state from
// the frames, or from a snapshot when the early frames are gone.
//
// Flags:
//
//	--api URL               the API base URL (http://127.0.0.1:7700)
//	--user NAME             the player's username (player-1)
//	--auth-token TOKEN      the auth token from the game backend
//	--ticket TICKET         the join ticket from the game backend
//	--room ID               the room to join
//	--server-key KEY        demo: act as the game backend
//	--session FILE          save and restore the login session
//	--snapshot-interval N   the room's snapshot_interval_frames (60)
//	--print-every N         print the state every N frames (20)
//	--until-frame N         leave the room after frame N (0: play on)
//
// Ctrl-C closes the room without leaving it: the seat stays held for the
// room's reconnect window, so a restart with --session finds it again.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/switchboardgg/switchboard/client/backend"
	"github.com/switchboardgg/switchboard/client/rooms"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// options are the command-line flags.
type options struct {
	api, user, authToken, ticket, room, serverKey, session string
	snapshotInterval, printEvery, untilFrame               uint
}

func main() {
	var o options
	flag.StringVar(&o.api, "api", "http://127.0.0.1:7700", "the API base URL")
	flag.StringVar(&o.user, "user", "player-1", "the player's username")
	flag.StringVar(&o.authToken, "auth-token", "", "the auth token the game backend minted for --user")
	flag.StringVar(&o.ticket, "ticket", "", "the join ticket the game backend issued for --room")
	flag.StringVar(&o.room, "room", "", "the room to join")
	flag.StringVar(&o.serverKey, "server-key", "", "demo only: act as the game backend with this server API key")
	flag.StringVar(&o.session, "session", "", "save the login session to this file, and restore it from there after a restart")
	flag.UintVar(&o.snapshotInterval, "snapshot-interval", 60, "the room's snapshot_interval_frames (WELCOME does not say it)")
	flag.UintVar(&o.printEvery, "print-every", 20, "print the game state every this many frames")
	flag.UintVar(&o.untilFrame, "until-frame", 0, "leave the room after this frame; 0 plays until the room ends or Ctrl-C")
	flag.Parse()

	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, log); err != nil {
		log.Error("lockstep", "err", err)
		os.Exit(1)
	}
}

// run connects the room, by a restored session or a new login, and plays.
func run(ctx context.Context, o options, log *slog.Logger) error {
	cfg := &rooms.Config{
		Logger: log,
		// The room's snapshot_interval_frames: with it the SDK marks the
		// frames after which this client, when it is the room's snapshot
		// provider, sends its state (Frame.SnapshotDue).
		SnapshotInterval: uint32(o.snapshotInterval),
	}
	if o.session != "" {
		// Refreshing rotates the refresh token: save every new session.
		cfg.SessionChanged = func(s rooms.Session) {
			if err := saveSession(o.session, s); err != nil {
				log.Warn("lockstep: session not saved", "err", err)
			}
		}
	}
	room, err := connect(ctx, o, cfg)
	if err != nil {
		return err
	}
	defer room.Close() // without leaving: idempotent after Leave
	return play(ctx, room, o)
}

// connect returns a connected room: the one a saved login session holds
// (an app restart), or a new join.
func connect(ctx context.Context, o options, cfg *rooms.Config) (*rooms.Room, error) {
	var c *rooms.Client
	if o.session != "" {
		s, err := loadSession(o.session)
		switch {
		case errors.Is(err, fs.ErrNotExist): // first run
		case err != nil:
			return nil, err
		default:
			if c, err = rooms.NewClient(o.api, s, cfg); err != nil {
				return nil, err
			}
			// C3: which room does this login session hold? Only the same
			// login session finds it; a new login would be "another device".
			cur, err := c.Current(ctx)
			switch {
			case errors.Is(err, rooms.ErrUnauthenticated):
				c = nil // the session is gone: log in again below
			case err != nil:
				return nil, fmt.Errorf("find the current room: %w", err)
			case cur.Room != nil && cur.Room.Status == "open" && cur.Member != nil:
				fmt.Printf("restart: found room %s with C3, rejoining seat %d\n", cur.Room.RoomID, cur.Member.Seat)
				// No ticket: the session holds the seat. FromStart: the
				// game state died with the old process, so ask for every
				// frame from the first (or a snapshot and the frames after
				// it when the early ones are gone).
				return c.Connect(ctx, cur.Room.RoomID, rooms.JoinOptions{FromStart: true})
			}
		}
	}

	roomID, authToken, ticket := o.room, o.authToken, o.ticket
	if o.serverKey != "" {
		var err error
		if roomID, authToken, ticket, err = demoBackend(ctx, o); err != nil {
			return nil, err
		}
	}
	if roomID == "" {
		return nil, errors.New("no room: pass --room (or --server-key for a demo room)")
	}
	if c == nil {
		var err error
		if c, err = rooms.Login(ctx, o.api, o.user, authToken, cfg); err != nil { // C0
			return nil, err
		}
		if o.session != "" {
			if err := saveSession(o.session, c.Session()); err != nil {
				return nil, err
			}
		}
	}
	// C1, dial, HELLO, WELCOME. FromStart: a player joining a game already
	// running needs the frames from the first to build its state.
	room, err := c.Connect(ctx, roomID, rooms.JoinOptions{Ticket: ticket, FromStart: true})
	switch {
	case errors.Is(err, rooms.ErrRoomFull):
		return nil, fmt.Errorf("room %s is full", roomID)
	case errors.Is(err, rooms.ErrJoinedOnOtherDevice), errors.Is(err, rooms.ErrSeatTaken):
		return nil, fmt.Errorf("%s plays room %s on another device", o.user, roomID)
	case err != nil:
		return nil, err
	}
	fmt.Printf("joined room %s, seat %d\n", roomID, room.State().Seat)
	return room, nil
}

// demoBackend does what a game backend does for its player, with the server
// API key: create a room (unless --room names one), mint an auth token and
// issue a join ticket.
func demoBackend(ctx context.Context, o options) (roomID, authToken, ticket string, err error) {
	be, err := backend.New(o.api, o.serverKey, nil)
	if err != nil {
		return "", "", "", err
	}
	roomID = o.room
	if roomID == "" {
		r, err := be.CreateRoom(ctx, backend.CreateRoomRequest{
			SyncMode: "frame", TickRate: new(20), MaxPlayers: new(4), StartMode: "auto",
			SnapshotIntervalFrames: new(int(o.snapshotInterval)),
		})
		if err != nil {
			return "", "", "", fmt.Errorf("create a room: %w", err)
		}
		roomID = r.RoomID
		fmt.Printf("created room %s\n", roomID)
	}
	authToken = o.authToken
	if authToken == "" {
		if authToken, err = be.CreateAuthToken(ctx, o.user, 0); err != nil {
			return "", "", "", err
		}
	}
	ticket = o.ticket
	if ticket == "" {
		if ticket, _, err = be.CreateTicket(ctx, roomID, backend.TicketRequest{Username: o.user}); err != nil {
			return "", "", "", err
		}
	}
	return roomID, authToken, ticket, nil
}

// play is the game loop: it applies the frames in order and reports the
// room's events, until --until-frame, the end of the room, or Ctrl-C.
func play(ctx context.Context, room *rooms.Room, o options) error {
	var g game
	seat := room.State().Seat
	// Both channels must be drained: when either is full the SDK stops
	// reading the socket.
	frames, events := room.Frames(), room.Events()
	for {
		select {
		case <-ctx.Done():
			// Close keeps the seat for the reconnect window: a restart
			// with --session comes back to it.
			fmt.Println("interrupted: closing without leaving")
			return room.Close()

		case f, ok := <-frames:
			if !ok {
				return endErr(room.Err())
			}
			if f.Restore {
				// The frames we missed are gone: the snapshot is the state
				// after frame f.Number, and the next frame is f.Number+1.
				if err := g.load(f.Number, f.Snapshot); err != nil {
					return err
				}
				fmt.Printf("restored from snapshot at frame %d state %x\n", f.Number, g.state)
				continue
			}
			if err := g.step(f); err != nil {
				return err
			}
			if f.SnapshotDue {
				// We are the snapshot provider: the node keeps this state
				// for players who come back after their frames are gone.
				_ = room.PutSnapshot(f.Number, g.snapshot())
			}
			// One input per frame, only for the newest frame: while the
			// SDK replays a backlog (after a resume or a restart) the
			// frames behind LastFrame are history, and the node limits
			// inputs to twice the tick rate. ErrNotConnected while the SDK
			// reconnects: this frame's input is simply skipped.
			if f.Number >= room.LastFrame() {
				_ = room.SendInput(localInput(seat, f.Number))
			}
			if o.printEvery > 0 && f.Number%uint32(o.printEvery) == 0 {
				fmt.Printf("frame %d state %x\n", f.Number, g.state)
			}
			if o.untilFrame > 0 && f.Number >= uint32(o.untilFrame) {
				fmt.Printf("done at frame %d: leaving\n", f.Number)
				lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				defer cancel()
				return room.Leave(lctx) // LEAVE, close, C2: the seat is given up
			}

		case ev, ok := <-events:
			if !ok {
				events = nil // Frames closes right after: return there
				continue
			}
			report(ev)
		}
	}
}

// endErr is the result of a room that ended by itself: nil when the game
// backend closed it (the match is over), the cause otherwise.
func endErr(err error) error {
	if errors.Is(err, rooms.ErrRoomClosed) {
		return nil
	}
	return err
}

// report prints an event of the room.
func report(ev rooms.Event) {
	switch ev.Kind {
	case rooms.EventMember:
		kind := map[uint8]string{roomwire.MemberOnline: "online", roomwire.MemberOffline: "offline", roomwire.MemberLeft: "left"}[ev.MemberKind]
		fmt.Printf("event: seat %d %s is %s %s\n", ev.Seat, ev.Username, kind, ev.Reason)
	case rooms.EventRoomState:
		fmt.Printf("event: room state %d from frame %d %s\n", ev.State, ev.StartFrame, ev.Reason)
	case rooms.EventCustom:
		fmt.Printf("event: %d bytes from seat %d\n", len(ev.Data), ev.Seat)
	case rooms.EventDisconnected:
		fmt.Printf("event: disconnected (%v), reconnecting\n", ev.Err)
	case rooms.EventResumed:
		fmt.Printf("event: reconnected, rejoined=%v\n", ev.Rejoined)
	case rooms.EventSnapshot: // the restore itself comes on Frames
	case rooms.EventClosed:
		if errors.Is(ev.Err, rooms.ErrRoomClosed) {
			fmt.Printf("event: room closed: %s %s\n", ev.Reason, ev.Result)
		} else {
			fmt.Printf("event: room ended: %v\n", ev.Err)
		}
	}
}

// game is the deterministic state of this example: a running SHA-256 over
// every frame's number and inputs. A real game runs its simulation here; what
// matters is the same rule: the state is a function of the frames alone.
type game struct {
	frame uint32   // the frame the state stands at
	state [32]byte // after frame
}

// step applies the next frame: SHA-256(state, frame, inputs as seat, length,
// data).
func (g *game) step(f rooms.Frame) error {
	if f.Number != g.frame+1 {
		// The SDK delivers frames in order without gaps; a game joining
		// late without FromStart would start from a frame it cannot build.
		return fmt.Errorf("frame %d after %d: the state cannot be built", f.Number, g.frame)
	}
	h := sha256.New()
	h.Write(g.state[:])
	h.Write(binary.BigEndian.AppendUint32(nil, f.Number))
	for _, in := range f.Inputs {
		h.Write([]byte{in.Seat, byte(len(in.Data))})
		h.Write(in.Data)
	}
	h.Sum(g.state[:0])
	g.frame = f.Number
	return nil
}

// snapshot is the state to send as SNAPSHOT_PUT.
func (g *game) snapshot() []byte { return bytes.Clone(g.state[:]) }

// load replaces the state with a snapshot taken after frame.
func (g *game) load(frame uint32, data []byte) error {
	if len(data) != len(g.state) {
		return fmt.Errorf("snapshot of %d bytes, want %d", len(data), len(g.state))
	}
	copy(g.state[:], data)
	g.frame = frame
	return nil
}

// localInput is what the player did this frame; here, a made-up move.
func localInput(seat uint8, frame uint32) []byte {
	return []byte{seat, byte(frame % 4)} // ≤ 128 bytes
}

// saveSession writes the login session to path, readable by its owner only:
// it holds the tokens. It writes a temporary file and renames it, so a crash
// never leaves half a session.
func saveSession(path string, s rooms.Session) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".session-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing to remove
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// loadSession reads a login session saved by saveSession.
func loadSession(path string) (rooms.Session, error) {
	var s rooms.Session
	b, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("session %s: %w", path, err)
	}
	return s, nil
}
