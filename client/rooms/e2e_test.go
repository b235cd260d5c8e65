package rooms_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/switchboardgg/switchboard/client/backend"
	"github.com/switchboardgg/switchboard/client/rooms"
	"github.com/switchboardgg/switchboard/internal/teststack"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

const e2eServerKey = "client-rooms-e2e-server-key-0123456789"

var discard = slog.New(slog.DiscardHandler)

// deployment is control and one game node in this process, on a real
// embedded NATS, each on 127.0.0.1:0.
type deployment struct {
	api     string
	be      *backend.Client
	hc      *http.Client
	stack   *teststack.Stack
	closers []func()
}

// launch starts a deployment whose node serves WebSocket only; close
// stops it.
func launch() (d *deployment, err error) { return launchWith("") }

// launchWith starts a deployment whose node also serves UDP on nodeUDP
// (e.g. "127.0.0.1:0") when it is not empty.
func launchWith(nodeUDP string) (d *deployment, err error) {
	d = new(deployment)
	defer func() {
		if err != nil {
			d.close()
		}
	}()
	dir, err := os.MkdirTemp("", "client-rooms-e2e-")
	if err != nil {
		return nil, err
	}
	d.closers = append(d.closers, func() { os.RemoveAll(dir) })
	s, err := teststack.Start(context.Background(), dir, teststack.Config{
		ServerKey: e2eServerKey, NodeID: "e2e-n1", Logger: discard, NodeUDP: nodeUDP,
	})
	if err != nil {
		return nil, err
	}
	d.closers = append(d.closers, s.Close)
	// Clients built with a nil Config use the default transport.
	d.closers = append(d.closers, http.DefaultTransport.(*http.Transport).CloseIdleConnections)
	d.stack, d.api, d.be, d.hc = s, s.API, s.Backend, s.HTTP
	return d, nil
}

// close stops everything launch started, last first.
func (d *deployment) close() {
	for i := len(d.closers) - 1; i >= 0; i-- {
		d.closers[i]()
	}
}

func startDeployment(t *testing.T) *deployment {
	t.Helper()
	d, err := launch()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.close)
	return d
}

// createRoom waits for the node's first registry heartbeat, then creates
// the room.
func (d *deployment) createRoom(ctx context.Context, req backend.CreateRoomRequest) (*backend.Room, error) {
	return d.stack.CreateRoom(ctx, req)
}

// conns records the sockets a player dials, so the test can cut them.
type conns struct {
	mu sync.Mutex
	cs []net.Conn
}

func (c *conns) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err == nil {
		c.mu.Lock()
		c.cs = append(c.cs, nc)
		c.mu.Unlock()
	}
	return nc, err
}

func (c *conns) cutLast() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cs[len(c.cs)-1].Close()
}

// player logs a user in and connects the room with a fresh ticket.
func (d *deployment) player(t *testing.T, roomID, username string, cs *conns) *rooms.Room {
	return d.playerOpts(t, roomID, username, cs, false)
}

func (d *deployment) playerOpts(t *testing.T, roomID, username string, cs *conns, fromStart bool) *rooms.Room {
	t.Helper()
	ctx := t.Context()
	auth, err := d.be.CreateAuthToken(ctx, username, 0)
	if err != nil {
		t.Fatal(err)
	}
	ticket, _, err := d.be.CreateTicket(ctx, roomID, backend.TicketRequest{Username: username})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &rooms.Config{HTTPClient: d.hc, Logger: discard, Backoff: func(int) time.Duration { return 0 }}
	if cs != nil {
		cfg.Dialer = &ws.Dialer{NetDial: cs.dial}
	}
	c, err := rooms.Login(ctx, d.api, username, auth, cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Connect(ctx, roomID, rooms.JoinOptions{Ticket: ticket, FromStart: fromStart})
	if err != nil {
		t.Fatalf("%s: connect: %v", username, err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// pump reads a room's frames and events until stop, checking that the
// frames are gapless, and sends an input with every frame.
type pump struct {
	r     *rooms.Room
	mu    sync.Mutex
	last  uint32
	gaps  int
	first uint32
	seen  map[uint8]int // inputs seen per seat
	evc   chan rooms.Event
	done  chan struct{}
}

func startPump(t *testing.T, r *rooms.Room) *pump {
	p := &pump{r: r, seen: map[uint8]int{}, evc: make(chan rooms.Event, 256), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		frames, events := r.Frames(), r.Events()
		for frames != nil || events != nil {
			select {
			case f, ok := <-frames:
				if !ok {
					frames = nil
					continue
				}
				p.mu.Lock()
				if p.last != 0 && f.Number != p.last+1 && !f.Restore {
					p.gaps++
				}
				if p.first == 0 {
					p.first = f.Number
				}
				p.last = f.Number
				for _, in := range f.Inputs {
					p.seen[in.Seat]++
				}
				p.mu.Unlock()
				_ = r.SendInput([]byte{byte(f.Number)})
			case ev, ok := <-events:
				if !ok {
					events = nil
					continue
				}
				select {
				case p.evc <- ev:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		r.Close()
		<-p.done
	})
	return p
}

func (p *pump) lastFrame() uint32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

// waitFrames waits until frame n was delivered.
func (p *pump) waitFrames(t *testing.T, n uint32) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); p.lastFrame() < n; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("frame %d not reached; at %d", n, p.lastFrame())
		}
	}
}

func (p *pump) event(t *testing.T, k rooms.EventKind) rooms.Event {
	t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case ev := <-p.evc:
			if ev.Kind == k {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %s event", k)
		}
	}
}

// TestEndToEnd plays a room on a real control plane and game node: two
// players get the same gapless frames with each other's inputs, one loses
// its socket and resumes, one leaves, and the backend closes the room with
// a result.
func TestEndToEnd(t *testing.T) {
	d := startDeployment(t)
	room, err := d.createRoom(t.Context(), backend.CreateRoomRequest{SyncMode: "frame", TickRate: new(30), MaxPlayers: new(3), StartMode: "all_ready"})
	if err != nil {
		t.Fatal(err)
	}

	var aliceConns conns
	alice := d.player(t, room.RoomID, "alice", &aliceConns)
	bob := d.player(t, room.RoomID, "bob", nil)
	if a, b := alice.State().Seat, bob.State().Seat; a == b {
		t.Fatalf("both players on seat %d", a)
	}
	pa, pb := startPump(t, alice), startPump(t, bob)
	if err := alice.Ready(); err != nil {
		t.Fatal(err)
	}
	if err := bob.Ready(); err != nil {
		t.Fatal(err)
	}
	if ev := pa.event(t, rooms.EventRoomState); ev.State != roomwire.StatePlaying {
		t.Fatalf("room state %d, want playing", ev.State)
	}
	pa.waitFrames(t, 20)
	pb.waitFrames(t, 20)

	// Alice's socket dies; she resumes and catches up without a gap.
	aliceConns.cutLast()
	pa.event(t, rooms.EventDisconnected)
	if ev := pa.event(t, rooms.EventResumed); ev.Rejoined {
		t.Error("resume needed a re-join")
	}
	target := pb.lastFrame() + 20
	pa.waitFrames(t, target)
	pb.waitFrames(t, target)
	if st := alice.Stats(); st.Resumes != 1 || st.Disconnects != 1 {
		t.Errorf("alice stats %+v, want 1 resume", st)
	}
	if alice.RTT() <= 0 {
		t.Error("no RTT sample after seconds of PINGs")
	}

	// Each saw the other's inputs.
	pa.mu.Lock()
	pb.mu.Lock()
	aSeat, bSeat := alice.State().Seat, bob.State().Seat
	if pa.seen[bSeat] == 0 || pb.seen[aSeat] == 0 || pa.gaps != 0 || pb.gaps != 0 {
		t.Errorf("alice saw %d of bob's inputs, bob %d of alice's; gaps %d, %d", pa.seen[bSeat], pb.seen[aSeat], pa.gaps, pb.gaps)
	}
	pb.mu.Unlock()
	pa.mu.Unlock()

	// Carol joins late and asks for every frame from the first.
	carol := d.playerOpts(t, room.RoomID, "carol", nil, true)
	pc := startPump(t, carol)
	pc.waitFrames(t, pa.lastFrame())
	pc.mu.Lock()
	if pc.first != 1 || pc.gaps != 0 {
		t.Errorf("late joiner: first frame %d, %d gaps; want 1 and none", pc.first, pc.gaps)
	}
	pc.mu.Unlock()

	// Bob leaves: alice sees him go.
	if err := bob.Leave(t.Context()); err != nil {
		t.Fatal(err)
	}
	for {
		ev := pa.event(t, rooms.EventMember)
		if ev.Seat == bSeat && ev.MemberKind == roomwire.MemberLeft {
			break
		}
	}

	// The backend ends the match with a result.
	if err := d.be.CloseRoom(t.Context(), room.RoomID, "match_over", json.RawMessage(`{"winner":"alice"}`)); err != nil {
		t.Fatal(err)
	}
	ev := pa.event(t, rooms.EventClosed)
	if !errors.Is(ev.Err, rooms.ErrRoomClosed) || ev.Reason != "match_over" || string(ev.Result) != `{"winner":"alice"}` {
		t.Fatalf("closed: %v reason %q result %s", ev.Err, ev.Reason, ev.Result)
	}
	<-alice.Done()
	if !errors.Is(alice.Err(), rooms.ErrRoomClosed) {
		t.Errorf("Err %v", alice.Err())
	}
}
