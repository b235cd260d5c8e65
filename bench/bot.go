package bench

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"sync/atomic"
	"time"

	"github.com/switchboardgg/switchboard/client/backend"
	"github.com/switchboardgg/switchboard/client/rooms"
)

// Counters are what bots count, shared by every bot of a run. All fields
// are updated atomically, or are safe for concurrent use.
type Counters struct {
	Connected   atomic.Int64 // bots with a live room connection
	Joined      atomic.Int64 // bots that ever got a WELCOME
	JoinedUDP   atomic.Int64 // of those, bots whose first connection was over UDP
	Frames      atomic.Int64 // frames delivered to bots
	Inputs      atomic.Int64 // INPUTs sent
	OrderErrors atomic.Int64 // frames that did not follow the previous one
	// InFrame counts a bot's own inputs that came back in a frame;
	// Superseded those that never did because a later input of the same
	// bot took their tick (the room keeps a seat's last input of a tick):
	// an input repaired late over UDP, or held behind a lost TCP segment.
	InFrame, Superseded atomic.Int64
	Disconnects         atomic.Int64
	Resumes             atomic.Int64
	Failed              atomic.Int64 // bots that ended with an error; a room the backend closed is no failure
	Failures            Failures     // why they did, by reason
}

// fail counts a bot that ended with err.
func (c *Counters) fail(err error) {
	c.Failed.Add(1)
	c.Failures.Add(err)
}

// Bot is one simulated player: it logs in, joins a room, says READY and
// sends one INPUT for every frame it receives, stamped with the time it was
// sent so the round trip to the frame that carries it can be measured.
type Bot struct {
	API      string          // API base URL
	Backend  *backend.Client // mints the bot's auth token and join ticket
	RoomID   string
	Username string
	Seat     int // -1: any seat
	Client   *rooms.Config
	Latency  *Histogram // input→frame latency; may be nil
	Counters *Counters  // may be nil
	// OnFrame, when set, is called with every frame the bot receives.
	OnFrame func(rooms.Frame)
	// OnEvent, when set, is called with every event.
	OnEvent func(rooms.Event)
	// Joined, when set, is called once the join ends, with its error.
	Joined func(error)
}

var epoch = time.Now()

// maxUnseenInputs bounds the inputs a bot remembers until a frame carries
// them (or a later one): seconds of input at any tick rate and round trip
// the bench runs.
const maxUnseenInputs = 256

// unseen is a bot's inputs sent and not yet seen in a frame, by stamp,
// oldest first.
type unseen []time.Duration

// add remembers the input stamped st, forgetting the oldest beyond
// maxUnseenInputs.
func (u *unseen) add(st time.Duration) {
	if len(*u) == maxUnseenInputs {
		*u = append((*u)[:0], (*u)[1:]...)
	}
	*u = append(*u, st)
}

// seen takes the input stamped st seen in a frame: every older one is
// superseded (frames come in order, so it never will be), and found says
// whether st itself was remembered.
func (u *unseen) seen(st time.Duration) (superseded int, found bool) {
	k := 0
	for k < len(*u) && (*u)[k] < st {
		k++
	}
	superseded = k
	if k < len(*u) && (*u)[k] == st {
		k++
		found = true
	}
	*u = append((*u)[:0], (*u)[k:]...)
	return superseded, found
}

// NewRunID returns 8 random hexadecimal digits that tell one run's rooms
// and bots from another's. Package bench is client code: it links no server
// package, so it does not use package tokens for this.
func NewRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// Run plays until ctx ends (then it closes the room and returns nil) or
// the room ends (then it returns the room's error: rooms.ErrRoomClosed
// when the game backend closed it, which is not counted as a failure). Its
// errors are [*StageError]s, but for rooms.ErrRoomClosed.
func (b *Bot) Run(ctx context.Context) error {
	cnt := b.Counters
	if cnt == nil {
		cnt = new(Counters)
	}
	room, err := b.Join(ctx)
	if b.Joined != nil {
		b.Joined(err)
	}
	if err != nil {
		cnt.fail(err)
		return err
	}
	defer room.Close()
	cnt.Joined.Add(1)
	if room.Transport() == rooms.TransportUDP {
		cnt.JoinedUDP.Add(1)
	}
	cnt.Connected.Add(1)
	connected := true
	defer func() {
		if connected {
			cnt.Connected.Add(-1)
		}
	}()
	if err := room.Ready(); err != nil {
		err = &StageError{Username: b.Username, Stage: StageReady, Err: err}
		cnt.fail(err)
		return err
	}
	seat := room.State().Seat
	var last uint32
	var stamp [8]byte
	var sent unseen
	for {
		select {
		case <-ctx.Done():
			return nil
		case f, ok := <-room.Frames():
			if !ok {
				continue // Events or Done say why
			}
			if b.OnFrame != nil {
				b.OnFrame(f)
			}
			if last != 0 && f.Number != last+1 && !f.Restore {
				cnt.OrderErrors.Add(1)
			}
			last = f.Number
			cnt.Frames.Add(1)
			now := time.Since(epoch)
			for _, in := range f.Inputs {
				if int(in.Seat) != int(seat) || len(in.Data) != 8 {
					continue
				}
				st := time.Duration(binary.BigEndian.Uint64(in.Data))
				if b.Latency != nil {
					b.Latency.Record(now - st)
				}
				superseded, found := sent.seen(st)
				cnt.Superseded.Add(int64(superseded))
				if found {
					cnt.InFrame.Add(1)
				}
			}
			binary.BigEndian.PutUint64(stamp[:], uint64(now))
			if err := room.SendInput(stamp[:]); err == nil {
				cnt.Inputs.Add(1)
				sent.add(now)
			}
		case ev, ok := <-room.Events():
			if !ok {
				continue // closed at the end: Done says why
			}
			if b.OnEvent != nil {
				b.OnEvent(ev)
			}
			switch ev.Kind {
			case rooms.EventDisconnected:
				cnt.Disconnects.Add(1)
				if connected {
					connected = false
					cnt.Connected.Add(-1)
				}
			case rooms.EventResumed:
				cnt.Resumes.Add(1)
				if !connected {
					connected = true
					cnt.Connected.Add(1)
				}
			}
		case <-room.Done():
			err := room.Err()
			switch {
			case err == nil, errors.Is(err, rooms.ErrClosed):
				return err
			case errors.Is(err, rooms.ErrRoomClosed):
				return err
			}
			err = &StageError{Username: b.Username, Stage: StagePlay, Err: err}
			cnt.fail(err)
			return err
		}
	}
}

// Join mints the bot's auth token and ticket, logs in and connects the room.
// Its errors are [*StageError]s.
func (b *Bot) Join(ctx context.Context) (*rooms.Room, error) {
	fail := func(stage string, err error) (*rooms.Room, error) {
		return nil, &StageError{Username: b.Username, Stage: stage, Err: err}
	}
	auth, err := b.Backend.CreateAuthToken(ctx, b.Username, 0)
	if err != nil {
		return fail(StageAuthToken, err)
	}
	req := backend.TicketRequest{Username: b.Username}
	if b.Seat >= 0 {
		seat := b.Seat
		req.Seat = &seat
	}
	ticket, _, err := b.Backend.CreateTicket(ctx, b.RoomID, req)
	if err != nil {
		return fail(StageTicket, err)
	}
	c, err := rooms.Login(ctx, b.API, b.Username, auth, b.Client)
	if err != nil {
		return fail(StageLogin, err)
	}
	room, err := c.Connect(ctx, b.RoomID, rooms.JoinOptions{Ticket: ticket})
	if err != nil {
		return fail(StageConnect, err)
	}
	return room, nil
}
