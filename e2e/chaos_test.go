package e2e_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	binenc "encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"go.uber.org/goleak"

	"github.com/switchboardgg/switchboard/client/backend"
	"github.com/switchboardgg/switchboard/client/rooms"
	"github.com/switchboardgg/switchboard/internal/faultproxy"
	"github.com/switchboardgg/switchboard/internal/impair"
	"github.com/switchboardgg/switchboard/internal/teststack"
	"github.com/switchboardgg/switchboard/node"
)

// The chaos test's parameters. CI runs the full chaosDuration; -short
// shortens only the duration of the faults.
const (
	chaosDuration      = 30 * time.Second
	chaosShortDuration = 8 * time.Second
	chaosRooms         = 2
	chaosPlayers       = 4  // per room
	chaosTickRate      = 20 // frames per second
	chaosSnapshotEvery = 10 // snapshot_interval_frames
	// chaosRetention is the node's frame retention, shortened from 60 s so
	// that the absence of phase 2 outlasts it in seconds. It stays above the
	// longest time a snapshot provider can be silent while the node still
	// counts it online (a 7 s stall plus a snapshot interval): a snapshot
	// older than the retained frames cannot be continued (see
	// docs/sdk/go.md, "The lockstep guarantee").
	chaosRetention = 10 * time.Second
	chaosServerKey = "e2e-chaos-server-key-0123456789"
)

// chaosFaults are the faults of phase 1, per proxied connection: a sever
// every 12 s on average, a stall of one or both directions every 12 s
// lasting 1–7 s (beyond the SDK's 5 s silence detection a third of the
// time), and up to 30 ms of latency on every chunk.
var chaosFaults = faultproxy.Faults{
	SeverRate: 0.08,
	StallRate: 0.08, StallMin: time.Second, StallMax: 7 * time.Second,
	DelayMax: 30 * time.Millisecond,
}

// TestChaosLockstep is the lockstep guarantee under network faults:
//
//  1. Eight players in two frame rooms play through a faultproxy that
//     severs, stalls and delays their connections. Once the faults stop and
//     everyone has caught up, each player's frames are gapless and in order
//     and every player of a room holds the same game state (a SHA-256 fold
//     of frame numbers and inputs) after every frame they share.
//  2. Two players stay away for longer than the node's frame retention: one
//     loses its network (the SDK resumes when it is back), one closes its
//     room and comes back with the same login session through C3. Both
//     recover through a snapshot and go on in lockstep with the others.
//  3. An app restart, run while the two are away: examples/lockstep joins a
//     room with a saved login session and is killed; a new process with
//     that session finds the room with C3, rejoins without a ticket and
//     computes the same states as a player that stayed.
func TestChaosLockstep(t *testing.T) { runChaos(t, false) }

// chaosUDPFaults are the UDP channel's faults of phase 1, each way, per
// player: 10 % loss and 10 % of the datagrams reordered, on top of jitter.
var chaosUDPFaults = impair.Faults{Loss: 0.1, Reorder: 0.1, ReorderDelay: 20 * time.Millisecond, Jitter: 10 * time.Millisecond}

// chaosUDPBlackout is how long every player's network (UDP and TCP) goes
// dark halfway through phase 1 over UDP: beyond the 5 s silence detection,
// so that every client disconnects and resumes.
const chaosUDPBlackout = 7 * time.Second

// TestChaosLockstepUDP is TestChaosLockstep with the node serving UDP and
// the players on it (the SDK's default): each player's datagrams go
// through its own impair proxy that loses and reorders 10 % of them each
// way during phase 1 (chaosUDPFaults); halfway every network goes dark
// for chaosUDPBlackout instead of a sever; in phase 2 the absent player's
// UDP is black-holed as well as its TCP. A resume may come back over
// either channel (UDP is tried first, WebSocket after 2 s without an
// answer).
func TestChaosLockstepUDP(t *testing.T) { runChaos(t, true) }

func runChaos(t *testing.T, udp bool) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) }) // runs last
	duration := chaosDuration
	if testing.Short() {
		duration = chaosShortDuration
	}
	seed := time.Now().UnixNano()
	if s := os.Getenv("CHAOS_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseInt(s, 10, 64); err != nil {
			t.Fatalf("CHAOS_SEED: %v", err)
		}
	}
	t.Logf("chaos seed %d (CHAOS_SEED=%d replays the proxy's random draws)", seed, seed)
	example := buildExample(t)
	ctx := testContext(t, 3*time.Minute)
	d := startChaos(t, seed, udp)

	// Phase 1: chaos.
	var roomIDs []string
	var byRoom [][]*player
	for i := range chaosRooms {
		id := d.createRoom(t, ctx, chaosPlayers)
		roomIDs = append(roomIDs, id)
		var ps []*player
		for j := range chaosPlayers {
			ps = append(ps, d.join(t, ctx, id, fmt.Sprintf("r%d-p%d", i, j)))
		}
		byRoom = append(byRoom, ps)
	}
	all := flatten(byRoom)
	waitFrames(t, all, 2*chaosTickRate, 20*time.Second)

	if err := d.proxy.SetFaults(chaosFaults); err != nil {
		t.Fatal(err)
	}
	d.udpFaults(t, chaosUDPFaults)
	// Halfway, every connection is cut at once as well: all the clients
	// resume together, and no run goes without a sever. Over UDP, where
	// nothing can be cut, every network goes dark for chaosUDPBlackout.
	start := time.Now()
	var darkUntil time.Time
	for severAll := true; time.Since(start) < duration || time.Now().Before(darkUntil); time.Sleep(200 * time.Millisecond) {
		if severAll && time.Since(start) >= duration/2 {
			if udp {
				d.blackout(true)
				darkUntil = time.Now().Add(chaosUDPBlackout)
			} else {
				d.proxy.SeverAll()
			}
			severAll = false
		}
		if !darkUntil.IsZero() && !time.Now().Before(darkUntil) {
			d.blackout(false)
			darkUntil = time.Time{}
		}
		checkAlive(t, all)
	}
	if !darkUntil.IsZero() { // the loop ended as the blackout did
		d.blackout(false)
	}
	d.proxy.SetFaultsEnabled(false)
	d.udpFaults(t, impair.Faults{})
	injected := d.proxy.Stats()
	waitFrames(t, all, maxFrame(all)+2*chaosTickRate, 45*time.Second)
	checkAlive(t, all)
	compared := 0
	for i, ps := range byRoom {
		compared += checkLockstep(t, roomIDs[i], ps)
	}
	st := sumStats(all)
	t.Logf("phase 1: %d clients in %d rooms at %d Hz for %v through the faultproxy (seed %d): "+
		"disconnects injected %d, stalls %d, delayed chunks %d; client disconnects %d (silence %d), "+
		"resumes %d, rejoins %d, snapshot recoveries %d; frames compared %d",
		len(all), len(byRoom), chaosTickRate, duration, seed, injected.Severed, injected.Stalled,
		injected.Delayed, st.Disconnects, silences(all), st.Resumes, st.Rejoins, st.SnapshotRestores, compared)
	if udp {
		us := d.udpStats()
		onUDP := 0
		for _, p := range all {
			if p.transport() == rooms.TransportUDP {
				onUDP++
			}
		}
		t.Logf("phase 1 over UDP: datagrams lost %d, reordered %d, black-holed %d; %d of %d clients on UDP at the end, %d fallbacks to WebSocket",
			us.Up.Lost+us.Down.Lost, us.Up.Reordered+us.Down.Reordered, us.Up.Blackholed+us.Down.Blackholed, onUDP, len(all), st.UDPFallbacks)
		if us.Up.Lost == 0 || us.Down.Lost == 0 || st.Resumes == 0 || compared == 0 {
			t.Fatalf("the chaos proved nothing: lost %d up %d down, %d resumes, %d frames compared", us.Up.Lost, us.Down.Lost, st.Resumes, compared)
		}
	} else if injected.Severed == 0 || st.Resumes == 0 || compared == 0 {
		t.Fatalf("the chaos proved nothing: %d severs, %d resumes, %d frames compared", injected.Severed, st.Resumes, compared)
	}
	if t.Failed() {
		return
	}

	// Phase 2: away beyond the retention. Seat 0 is the snapshot provider
	// while it is online, so the absentees are players on other seats.
	netAway, closer := absentee(t, byRoom[0]), absentee(t, byRoom[1])
	restoresBefore := netAway.stats().SnapshotRestores
	netAway.gate.leave() // cuts its socket; dials fail until back
	closer.closeRoom()   // Room.Close: the seat stays held
	stay := byRoom[0][0]
	if stay == netAway {
		stay = byRoom[0][1]
	}
	// Frames, not seconds: once this many frames were made after the
	// absentees left, the ones they miss are out of retention.
	back := stay.rec.last() + uint32(chaosRetention.Seconds()*chaosTickRate) + 2*chaosTickRate

	// Phase 3, while they are away: an app restart.
	restart := d.appRestart(t, ctx, example)

	waitFrames(t, []*player{stay}, back, 30*time.Second)
	netAway.gate.back()
	cur, err := closer.client.Current(ctx) // C3
	if err != nil {
		t.Fatalf("C3 after closing the room: %v", err)
	}
	if cur.Room == nil || cur.Room.RoomID != closer.roomID {
		t.Fatalf("C3 found %+v, want room %s", cur.Room, closer.roomID)
	}
	rm, err := closer.client.Connect(ctx, closer.roomID, rooms.JoinOptions{FromStart: true})
	if err != nil {
		t.Fatalf("rejoin after C3: %v", err)
	}
	closer.attach(rm)
	waitFrames(t, all, maxFrame(all)+chaosTickRate, 30*time.Second)
	checkAlive(t, all)
	if got := netAway.stats().SnapshotRestores; got <= restoresBefore {
		t.Errorf("%s came back after its frames were gone without a snapshot (restores %d → %d)", netAway.name, restoresBefore, got)
	}
	if got := rm.Stats().SnapshotRestores; got == 0 {
		t.Errorf("%s rejoined with C3 after its frames were gone without a snapshot", closer.name)
	}
	absentRestores := netAway.stats().SnapshotRestores - restoresBefore + rm.Stats().SnapshotRestores
	for _, p := range []*player{netAway, closer} {
		at, ok := p.rec.lastRestore()
		if !ok {
			continue
		}
		ref := byRoom[0]
		if p == closer {
			ref = byRoom[1]
		}
		if !sameStateAt(ref, p, at) {
			t.Errorf("%s restored a state at frame %d that the others of its room do not hold", p.name, at)
		}
	}
	compared = 0
	for i, ps := range byRoom {
		compared += checkLockstep(t, roomIDs[i], ps)
	}
	if t.Failed() {
		return
	}

	st = sumStats(all)
	final := d.proxy.Stats()
	t.Logf("chaos summary: %d clients in %d rooms, %v of faults at %d Hz (seed %d): disconnects injected %d, "+
		"stalls %d, delayed chunks %d; resumes %d, rejoins %d, snapshot recoveries %d "+
		"(%d after an absence beyond the %v retention); frames compared %d; app restart: %s",
		len(all), len(byRoom), duration, chaosTickRate, seed, final.Severed, final.Stalled, final.Delayed,
		st.Resumes, st.Rejoins, st.SnapshotRestores, absentRestores, chaosRetention, compared, restart)
}

// chaosDeployment is control and a game node in this process on a real
// embedded NATS, with the node's advertised ws_url pointing at a
// faultproxy in front of its listener.
type chaosDeployment struct {
	api   string
	be    *backend.Client
	hc    *http.Client
	stack *teststack.Stack
	proxy *faultproxy.Proxy
	udp   bool  // the node serves UDP; players use it through their own impair proxy
	seed  int64 // of the proxies

	mu      sync.Mutex
	impairs []*impair.Proxy // one per player over UDP
}

func startChaos(t *testing.T, seed int64, udp bool) *chaosDeployment {
	t.Helper()
	discard := slog.New(slog.DiscardHandler)
	nodeLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	proxyLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		nodeLn.Close()
		t.Fatal(err)
	}
	proxy, err := faultproxy.New(faultproxy.Config{Target: nodeLn.Addr().String(), Seed: seed, Logger: discard})
	if err != nil {
		nodeLn.Close()
		proxyLn.Close()
		t.Fatal(err)
	}
	proxied := make(chan struct{})
	go func() {
		defer close(proxied)
		_ = proxy.Serve(proxyLn)
	}()
	t.Cleanup(func() {
		proxy.Close()
		<-proxied
	})

	nodeUDP := ""
	if udp {
		nodeUDP = "127.0.0.1:0"
	}
	s, err := teststack.Start(t.Context(), t.TempDir(), teststack.Config{
		ServerKey: chaosServerKey, NodeID: "chaos-node", Retention: chaosRetention,
		NodeListener: nodeLn, WSURL: "ws://" + proxyLn.Addr().String() + node.Path,
		NodeWait: 15 * time.Second, Logger: discard, NodeUDP: nodeUDP,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return &chaosDeployment{api: s.API, be: s.Backend, hc: s.HTTP, stack: s, proxy: proxy, udp: udp, seed: seed}
}

// udpPath gives a player over UDP its own impair proxy in front of the
// node and a socket whose datagrams go through it.
func (d *chaosDeployment) udpPath(t *testing.T, cfg *rooms.Config, g *netGate) {
	t.Helper()
	discard := slog.New(slog.DiscardHandler)
	d.mu.Lock()
	seed := uint64(d.seed) + uint64(len(d.impairs))
	d.mu.Unlock()
	px, err := impair.New(impair.Config{Target: d.stack.NodeUDP, Seed: seed, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	via := uc.LocalAddr().(*net.UDPAddr).AddrPort()
	served := make(chan struct{})
	go func() { defer close(served); _ = px.Serve(uc) }()
	sock, err := rooms.NewUDPSocket(rooms.UDPSocketConfig{Logger: discard, Redirect: func(netip.AddrPort) netip.AddrPort { return via }})
	if err != nil {
		t.Fatal(err)
	}
	// Cleanups run last first: the room (registered after this) closes
	// before its socket and its proxy.
	t.Cleanup(func() {
		sock.Close()
		px.Close()
		<-served
	})
	cfg.UDPSocket = sock
	g.px = px
	d.mu.Lock()
	d.impairs = append(d.impairs, px)
	d.mu.Unlock()
}

// udpFaults sets every player's UDP faults, both ways.
func (d *chaosDeployment) udpFaults(t *testing.T, f impair.Faults) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, px := range d.impairs {
		for _, dir := range []impair.Direction{impair.Up, impair.Down} {
			if err := px.SetFaults(dir, f); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// blackout darkens every player's network, TCP and UDP, or lights it.
func (d *chaosDeployment) blackout(on bool) {
	d.proxy.SetBlackout(on)
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, px := range d.impairs {
		px.SetBlackout(impair.Up, on)
		px.SetBlackout(impair.Down, on)
	}
}

// udpStats sums the players' impair proxies' counters.
func (d *chaosDeployment) udpStats() impair.Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	var sum impair.Stats
	for _, px := range d.impairs {
		st := px.Stats()
		for _, p := range []struct{ sum, st *impair.DirStats }{{&sum.Up, &st.Up}, {&sum.Down, &st.Down}} {
			p.sum.Lost += p.st.Lost
			p.sum.Reordered += p.st.Reordered
			p.sum.Blackholed += p.st.Blackholed
		}
		sum.Rebinds += st.Rebinds
	}
	return sum
}

// createRoom creates a frame room once the node has registered.
func (d *chaosDeployment) createRoom(t *testing.T, ctx context.Context, players int) string {
	t.Helper()
	r, err := d.stack.CreateRoom(ctx, backend.CreateRoomRequest{
		SyncMode: "frame", TickRate: new(chaosTickRate), MaxPlayers: new(players), StartMode: "auto",
		ReconnectWindowSeconds: new(60), SnapshotIntervalFrames: new(chaosSnapshotEvery),
	})
	if err != nil {
		t.Fatalf("create room: %v", err)
	}
	return r.RoomID
}

// join logs a new player in, connects it to the room from frame 1 and
// starts its game loop.
func (d *chaosDeployment) join(t *testing.T, ctx context.Context, roomID, name string) *player {
	t.Helper()
	auth, err := d.be.CreateAuthToken(ctx, name, 0)
	if err != nil {
		t.Fatal(err)
	}
	ticket, _, err := d.be.CreateTicket(ctx, roomID, backend.TicketRequest{Username: name})
	if err != nil {
		t.Fatal(err)
	}
	p := &player{name: name, roomID: roomID, gate: new(netGate), rec: new(recorder)}
	cfg := &rooms.Config{
		HTTPClient: d.hc, Logger: slog.New(slog.DiscardHandler),
		Dialer:           &ws.Dialer{NetDial: p.gate.dial},
		SnapshotInterval: chaosSnapshotEvery,
		// Backoff, SilenceTimeout, Heartbeat: the SDK's defaults.
	}
	if d.udp {
		d.udpPath(t, cfg, p.gate)
	}
	if p.client, err = rooms.Login(ctx, d.api, name, auth, cfg); err != nil {
		t.Fatal(err)
	}
	rm, err := p.client.Connect(ctx, roomID, rooms.JoinOptions{Ticket: ticket, FromStart: true})
	if err != nil {
		t.Fatalf("%s: connect: %v", name, err)
	}
	p.attach(rm)
	t.Cleanup(p.closeRoom)
	return p
}

// player is one SDK client with its game loop.
type player struct {
	name   string
	roomID string
	client *rooms.Client
	gate   *netGate
	rec    *recorder

	silence atomic.Int64 // disconnects for ErrSilence

	mu     sync.Mutex
	rm     *rooms.Room   // the current room; nil after closeRoom
	done   chan struct{} // closed when the game loop of rm returns
	closed rooms.Stats   // of the rooms closed before rm
	err    error         // why a room ended other than by Close
}

// transport returns the current room's transport, "" after closeRoom.
func (p *player) transport() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rm == nil {
		return ""
	}
	return p.rm.Transport()
}

// attach starts the game loop on rm.
func (p *player) attach(rm *rooms.Room) {
	done := make(chan struct{})
	p.mu.Lock()
	p.rm, p.done = rm, done
	p.mu.Unlock()
	go func() {
		defer close(done)
		p.loop(rm)
	}()
}

// loop applies rm's frames to the recorder, sends the snapshot when due and
// one input for every frame, and watches the events, until rm ends.
func (p *player) loop(rm *rooms.Room) {
	seat := rm.State().Seat
	frames, events := rm.Frames(), rm.Events()
	for frames != nil || events != nil {
		select {
		case f, ok := <-frames:
			if !ok {
				frames = nil
				continue
			}
			state := p.rec.apply(f)
			if f.Restore {
				continue
			}
			if f.SnapshotDue {
				_ = rm.PutSnapshot(f.Number, state[:])
			}
			_ = rm.SendInput([]byte{seat, byte(f.Number), byte(f.Number >> 8)}) // ErrNotConnected while away
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			switch ev.Kind {
			case rooms.EventDisconnected:
				if errors.Is(ev.Err, rooms.ErrSilence) {
					p.silence.Add(1)
				}
			case rooms.EventClosed:
				if !errors.Is(ev.Err, rooms.ErrClosed) {
					p.mu.Lock()
					p.err = ev.Err
					p.mu.Unlock()
				}
			}
		}
	}
}

// closeRoom closes the current room without leaving and waits for its game
// loop.
func (p *player) closeRoom() {
	p.mu.Lock()
	rm, done := p.rm, p.done
	p.rm = nil
	p.mu.Unlock()
	if rm == nil {
		return
	}
	rm.Close()
	<-done
	s := rm.Stats()
	p.mu.Lock()
	addStats(&p.closed, s)
	p.mu.Unlock()
}

// addStats adds the counters of s to sum.
func addStats(sum *rooms.Stats, s rooms.Stats) {
	sum.Connects += s.Connects
	sum.Disconnects += s.Disconnects
	sum.ReconnectAttempts += s.ReconnectAttempts
	sum.Resumes += s.Resumes
	sum.Rejoins += s.Rejoins
	sum.SnapshotRestores += s.SnapshotRestores
	sum.FrameRequests += s.FrameRequests
	sum.FramesDelivered += s.FramesDelivered
	sum.InvalidMessages += s.InvalidMessages
	sum.UDPFallbacks += s.UDPFallbacks
}

// stats are the counters of p's rooms, the closed ones included.
func (p *player) stats() rooms.Stats {
	p.mu.Lock()
	s, rm := p.closed, p.rm
	p.mu.Unlock()
	if rm != nil {
		addStats(&s, rm.Stats())
	}
	return s
}

// failure reports why p's room ended, if it ended by itself.
func (p *player) failure() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return p.err
	}
	if p.rm != nil {
		select {
		case <-p.rm.Done():
			return fmt.Errorf("room ended: %w", p.rm.Err())
		default:
		}
	}
	return nil
}

// netGate is a player's network: its dialer, which fails while the player
// is away.
type netGate struct {
	px *impair.Proxy // the player's UDP path, if any; immutable after join

	mu   sync.Mutex
	away bool
	conn net.Conn // the newest connection
}

var errAway = errors.New("e2e: the player is away")

func (g *netGate) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	g.mu.Lock()
	away := g.away
	g.mu.Unlock()
	if away {
		return nil, errAway
	}
	nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.away {
		nc.Close()
		return nil, errAway
	}
	g.conn = nc
	return nc, nil
}

// leave cuts the player's connection; dials fail until back.
func (g *netGate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.away = true
	if g.conn != nil {
		g.conn.Close()
	}
	if g.px != nil {
		g.px.SetBlackout(impair.Up, true)
		g.px.SetBlackout(impair.Down, true)
	}
}

func (g *netGate) back() {
	g.mu.Lock()
	g.away = false
	g.mu.Unlock()
	if g.px != nil {
		g.px.SetBlackout(impair.Up, false)
		g.px.SetBlackout(impair.Down, false)
	}
}

// recorder is a player's game state: a SHA-256 fold of every frame's number
// and inputs (the same rule as examples/lockstep), and the state after
// every frame the player applied, so players can be compared frame by frame.
type recorder struct {
	mu         sync.Mutex
	state      [32]byte
	at         uint32 // the frame state stands at
	started    bool
	states     [][32]byte // states[n]: the state after frame n, when have[n]
	have       []bool
	restoredAt uint32 // the frame of the newest restore; 0: none
	violations []string
}

// maxViolations bounds the violations a recorder keeps.
const maxViolations = 10

// apply applies f and returns the state after it.
func (r *recorder) apply(f rooms.Frame) [32]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case f.Restore:
		if len(f.Snapshot) != len(r.state) {
			r.violate("restore at frame %d: snapshot of %d bytes", f.Number, len(f.Snapshot))
			return r.state
		}
		copy(r.state[:], f.Snapshot)
		r.restoredAt = f.Number
	case !r.started && f.Number != 1:
		r.violate("first frame %d, want 1 or a restore", f.Number)
	case r.started && f.Number != r.at+1:
		r.violate("frame %d after frame %d", f.Number, r.at)
	default:
		r.state = fold(r.state, f)
	}
	r.started = true
	r.at = f.Number
	r.record(f.Number)
	return r.state
}

// fold is the game rule of examples/lockstep: SHA-256(state, frame, inputs
// as seat, length, data).
func fold(state [32]byte, f rooms.Frame) [32]byte {
	h := sha256.New()
	h.Write(state[:])
	h.Write(binenc.BigEndian.AppendUint32(nil, f.Number))
	for _, in := range f.Inputs {
		h.Write([]byte{in.Seat, byte(len(in.Data))})
		h.Write(in.Data)
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// record keeps the state after frame n. A frame applied twice (after a
// restore to an earlier snapshot) must give the same state.
func (r *recorder) record(n uint32) {
	for uint32(len(r.states)) <= n {
		r.states = append(r.states, [32]byte{})
		r.have = append(r.have, false)
	}
	if r.have[n] && r.states[n] != r.state {
		r.violate("frame %d applied again gave another state", n)
	}
	r.states[n], r.have[n] = r.state, true
}

func (r *recorder) violate(format string, args ...any) {
	if len(r.violations) < maxViolations {
		r.violations = append(r.violations, fmt.Sprintf(format, args...))
	}
}

func (r *recorder) last() uint32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.at
}

func (r *recorder) stateAt(n uint32) ([32]byte, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n >= uint32(len(r.have)) || !r.have[n] {
		return [32]byte{}, false
	}
	return r.states[n], true
}

func (r *recorder) lastRestore() (uint32, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.restoredAt, r.restoredAt != 0
}

func (r *recorder) problems() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.violations...)
}

// checkLockstep checks that every player of a room applied gapless, ordered
// frames and holds the same state as the others after every frame they
// share, up to the last frame all of them reached. It returns how many
// states it compared.
func checkLockstep(t *testing.T, roomID string, ps []*player) int {
	t.Helper()
	end := ps[0].rec.last()
	for _, p := range ps {
		for _, v := range p.rec.problems() {
			t.Errorf("%s: %s", p.name, v)
		}
		end = min(end, p.rec.last())
	}
	compared, mismatches := 0, 0
	for n := uint32(1); n <= end; n++ {
		var ref [32]byte
		var refName string
		for _, p := range ps {
			s, ok := p.rec.stateAt(n)
			if !ok {
				continue
			}
			if refName == "" {
				ref, refName = s, p.name
				continue
			}
			compared++
			if s != ref {
				if mismatches++; mismatches <= 5 {
					t.Errorf("room %s frame %d: %s holds state %x, %s %x", roomID, n, p.name, s[:6], refName, ref[:6])
				}
			}
		}
		if refName == "" {
			t.Errorf("room %s: no player holds the state after frame %d", roomID, n)
		}
	}
	if end < 2*chaosTickRate {
		t.Errorf("room %s: only %d frames common to all players", roomID, end)
	}
	return compared
}

// sameStateAt reports whether a player of ref other than p holds p's state
// after frame n.
func sameStateAt(ref []*player, p *player, n uint32) bool {
	want, ok := p.rec.stateAt(n)
	if !ok {
		return false
	}
	for _, o := range ref {
		if o == p {
			continue
		}
		if s, ok := o.rec.stateAt(n); ok {
			return s == want
		}
	}
	return false
}

// absentee picks a player of ps whose seat is not 0.
func absentee(t *testing.T, ps []*player) *player {
	t.Helper()
	for _, p := range ps {
		p.mu.Lock()
		seat := p.rm.State().Seat
		p.mu.Unlock()
		if seat != 0 {
			return p
		}
	}
	t.Fatal("every player on seat 0")
	return nil
}

// waitFrames waits until every player applied frame n.
func waitFrames(t *testing.T, ps []*player, n uint32, timeout time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(timeout); ; time.Sleep(20 * time.Millisecond) {
		checkAlive(t, ps)
		var behind []string
		for _, p := range ps {
			if at := p.rec.last(); at < n {
				behind = append(behind, fmt.Sprintf("%s at %d (%+v)", p.name, at, p.stats()))
			}
		}
		if len(behind) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("frame %d not reached after %v: %s", n, timeout, strings.Join(behind, "; "))
		}
	}
}

// checkAlive fails the test when a player's room ended by itself.
func checkAlive(t *testing.T, ps []*player) {
	t.Helper()
	for _, p := range ps {
		if err := p.failure(); err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
	}
}

func maxFrame(ps []*player) uint32 {
	var m uint32
	for _, p := range ps {
		m = max(m, p.rec.last())
	}
	return m
}

func sumStats(ps []*player) rooms.Stats {
	var s rooms.Stats
	for _, p := range ps {
		addStats(&s, p.stats())
	}
	return s
}

func silences(ps []*player) int64 {
	var n int64
	for _, p := range ps {
		n += p.silence.Load()
	}
	return n
}

func flatten(byRoom [][]*player) []*player {
	var all []*player
	for _, ps := range byRoom {
		all = append(all, ps...)
	}
	return all
}

// buildExample builds examples/lockstep in the background; the returned
// function waits for it and returns the binary.
func buildExample(t *testing.T) func() string {
	bin := filepath.Join(t.TempDir(), "lockstep")
	done := make(chan struct{})
	var out []byte
	var err error
	go func() {
		defer close(done)
		out, err = exec.Command("go", "build", "-o", bin, "../examples/lockstep").CombinedOutput()
	}()
	t.Cleanup(func() { <-done })
	return func() string {
		t.Helper()
		<-done
		if err != nil {
			t.Fatalf("build examples/lockstep: %v\n%s", err, out)
		}
		return bin
	}
}

// appRestart runs examples/lockstep in a room next to a player of the test
// (the witness): a first process joins with a saved login session and is
// killed; a second process with that session finds the room with C3 and
// rejoins without a ticket. Both must print the witness's states. It
// returns a description for the summary.
func (d *chaosDeployment) appRestart(t *testing.T, ctx context.Context, example func() string) string {
	t.Helper()
	bin := example()
	roomID := d.createRoom(t, ctx, 2)
	witness := d.join(t, ctx, roomID, "witness")
	session := filepath.Join(t.TempDir(), "session.json")
	common := []string{"--api", d.api, "--session", session, "--print-every", "10",
		"--snapshot-interval", strconv.Itoa(chaosSnapshotEvery)}

	first := startExample(t, bin, append(common, "--server-key", chaosServerKey, "--room", roomID, "--user", "phoenix")...)
	first.waitFor(t, "a first run's frames", func(r exampleOutput) bool { return r.last >= 3*chaosTickRate })
	if err := first.cmd.Process.Kill(); err != nil { // SIGKILL: no Close, no Leave
		t.Fatal(err)
	}
	<-first.done
	out1 := first.output()
	if _, err := os.Stat(session); err != nil {
		t.Fatalf("no saved session: %v", err)
	}

	until := witness.rec.last() + 2*chaosTickRate
	// The app prints every 10 frames and leaves at the first frame >=
	// until: stop it on a printed frame, whatever frame the witness was
	// at when the first app was killed.
	until += (10 - until%10) % 10
	second := startExample(t, bin, append(common, "--until-frame", strconv.Itoa(int(until)))...) // no key, no ticket
	select {
	case <-second.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the restarted app did not reach frame %d:\n%s", until, second.stderr.String())
	}
	if second.err != nil {
		t.Fatalf("the restarted app: %v\n%s", second.err, second.stderr.String())
	}
	out2 := second.output()
	switch {
	case out2.rejoinRoom != roomID:
		t.Fatalf("the restarted app did not find room %s with C3: %q", roomID, out2.lines)
	case out2.rejoinSeat != out1.joinSeat:
		t.Errorf("rejoined seat %d, had seat %d", out2.rejoinSeat, out1.joinSeat)
	case out2.last < until:
		t.Errorf("the restarted app stopped at frame %d, before %d", out2.last, until)
	}
	matched := 0
	for _, out := range []exampleOutput{out1, out2} {
		for n, s := range out.states {
			want, ok := witness.rec.stateAt(n)
			if !ok {
				continue
			}
			if s != want {
				t.Errorf("the app printed state %x after frame %d, the witness holds %x", s[:6], n, want[:6])
			}
			matched++
		}
	}
	after := 0
	for n := range out2.states {
		if n > out1.last {
			after++
		}
	}
	if after == 0 {
		t.Errorf("the restarted app printed no frame after the first run's last (%d)", out1.last)
	}
	how := "from frame 1"
	if out2.restoredAt != 0 {
		how = fmt.Sprintf("from a snapshot at frame %d", out2.restoredAt)
	}
	return fmt.Sprintf("killed at frame %d, the new process found room %s with C3 and rejoined seat %d without a ticket, "+
		"rebuilt its state %s and played to frame %d, %d printed states equal to the witness's",
		out1.last, roomID, out2.rejoinSeat, how, out2.last, matched)
}

// exampleRun is a running examples/lockstep process.
type exampleRun struct {
	cmd    *exec.Cmd
	stderr syncBuffer
	done   chan struct{} // closed when the process has exited
	err    error         // valid after done

	mu    sync.Mutex
	lines []string
}

func startExample(t *testing.T, bin string, args ...string) *exampleRun {
	t.Helper()
	r := &exampleRun{done: make(chan struct{})}
	r.cmd = exec.Command(bin, args...)
	r.cmd.Stderr = &r.stderr
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(r.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			r.mu.Lock()
			r.lines = append(r.lines, sc.Text())
			r.mu.Unlock()
		}
		r.err = r.cmd.Wait()
	}()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			_ = r.cmd.Process.Kill()
			<-r.done
		}
		if t.Failed() {
			t.Logf("examples/lockstep %v:\n%s\n%s", args, strings.Join(r.output().lines, "\n"), r.stderr.String())
		}
	})
	return r
}

// exampleOutput is what examples/lockstep printed.
type exampleOutput struct {
	lines      []string
	joinSeat   int                 // "joined room X, seat N"
	rejoinRoom string              // "restart: found room X with C3, rejoining seat N"
	rejoinSeat int                 //
	states     map[uint32][32]byte // "frame N state HEX"
	last       uint32              // the highest frame printed
	restoredAt uint32              // "restored from snapshot at frame N state HEX"
}

func (r *exampleRun) output() exampleOutput {
	r.mu.Lock()
	lines := append([]string(nil), r.lines...)
	r.mu.Unlock()
	out := exampleOutput{lines: lines, joinSeat: -1, rejoinSeat: -1, states: map[uint32][32]byte{}}
	for _, l := range lines {
		var room string
		var n uint32
		var hexState string
		switch {
		case strings.HasPrefix(l, "joined room "):
			_, _ = fmt.Sscanf(l, "joined room %s seat %d", &room, &out.joinSeat)
		case strings.HasPrefix(l, "restart: found room "):
			if _, err := fmt.Sscanf(l, "restart: found room %s with C3, rejoining seat %d", &room, &out.rejoinSeat); err == nil {
				out.rejoinRoom = room
			}
		case strings.HasPrefix(l, "restored from snapshot at frame "):
			_, _ = fmt.Sscanf(l, "restored from snapshot at frame %d", &out.restoredAt)
		case strings.HasPrefix(l, "frame "):
			if _, err := fmt.Sscanf(l, "frame %d state %s", &n, &hexState); err != nil {
				continue
			}
			b, err := hex.DecodeString(hexState)
			if err != nil || len(b) != 32 {
				continue
			}
			out.states[n] = [32]byte(b)
			out.last = max(out.last, n)
		}
	}
	return out
}

// waitFor waits until the output satisfies ok.
func (r *exampleRun) waitFor(t *testing.T, what string, ok func(exampleOutput) bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !ok(r.output()); time.Sleep(20 * time.Millisecond) {
		select {
		case <-r.done:
			t.Fatalf("examples/lockstep exited before %s: %v\n%s", what, r.err, r.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after 30 s", what)
		}
	}
}
