package e2e_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/bench"
	"github.com/switchboardgg/switchboard/client/backend"
	"github.com/switchboardgg/switchboard/client/rooms"
)

// frameLog records the frames one player saw.
type frameLog struct {
	mu     sync.Mutex
	frames []string // "number:seat=data,..." per frame
}

func (l *frameLog) add(f rooms.Frame) {
	var b strings.Builder
	fmt.Fprintf(&b, "%d:", f.Number)
	for _, in := range f.Inputs {
		fmt.Fprintf(&b, "%d=%x,", in.Seat, in.Data)
	}
	l.mu.Lock()
	l.frames = append(l.frames, b.String())
	l.mu.Unlock()
}

func (l *frameLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.frames)
}

// prefixHash hashes the first n frames.
func (l *frameLog) prefixHash(n int) [32]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return sha256.Sum256([]byte(strings.Join(l.frames[:n], "\n")))
}

// firstDifference describes the first of the first n frames in which a
// and b differ.
func firstDifference(a, b *frameLog, n int) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range n {
		if a.frames[i] != b.frames[i] {
			return fmt.Sprintf("frame %d: %q, player 0 saw %q", i, b.frames[i], a.frames[i])
		}
	}
	return "no difference"
}

// playLockstep joins n bots to roomID (an all_ready room) and waits until
// each saw at least frames frames; it checks that all saw the same gapless
// sequence.
//
// An all_ready room starts once every connected seat is ready: a seat
// that is not connected yet is not waited for (docs/protocol/rooms.md §6).
// So no bot says READY before all n are connected, or a bot that connects
// late (a loaded machine delays it by more than a tick) joins a game in
// progress and sees frames from its WELCOME's frame on, not from frame 1.
// To make that order the rule rather than luck, bot i+1 starts only once
// bot i has connected.
func playLockstep(t *testing.T, ctx context.Context, api string, be *backend.Client, roomID string, n, frames int) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	logs := make([]*frameLog, n)
	var cnt bench.Counters
	var wg sync.WaitGroup
	errs := make(chan error, n)
	allJoined := make(chan struct{}) // closed when every bot has joined, or one failed to
	var joinedOnce sync.Once
	var joinedMu sync.Mutex
	joined := 0
	joinedOne := func(err error) {
		joinedMu.Lock()
		joined++
		if joined == n || err != nil {
			joinedOnce.Do(func() { close(allJoined) })
		}
		joinedMu.Unlock()
	}
	defer func() { cancel(); wg.Wait() }()
	for i := range n {
		logs[i] = new(frameLog)
		connected := make(chan struct{})
		b := &bench.Bot{API: api, Backend: be, RoomID: roomID, Username: fmt.Sprintf("p%d-%s", i, roomID),
			Seat: -1, Counters: &cnt, OnFrame: logs[i].add,
			// Joined runs before the bot's READY: hold it until all joined.
			Joined: func(err error) {
				close(connected)
				joinedOne(err)
				select {
				case <-allJoined:
				case <-ctx.Done():
				}
			}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.Run(ctx); err != nil {
				errs <- fmt.Errorf("bot %d: %w", i, err)
			}
		}()
		select {
		case <-connected:
		case <-ctx.Done():
			t.Fatalf("bot %d did not join before the deadline", i)
		}
	}
	for {
		enough := true
		for _, l := range logs {
			if l.len() < frames {
				enough = false
			}
		}
		if enough {
			break
		}
		select {
		case err := <-errs:
			t.Fatal(err)
		case <-ctx.Done():
			t.Fatalf("only %d frames after the deadline", logs[0].len())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if e := cnt.OrderErrors.Load(); e != 0 {
		t.Errorf("%d frames out of order", e)
	}
	want := logs[0].prefixHash(frames)
	for i, l := range logs[1:] {
		if got := l.prefixHash(frames); got != want {
			t.Errorf("player %d saw other frames than player 0: %s", i+1, firstDifference(logs[0], l, frames))
		}
	}
	// Every player's inputs made it into frames.
	l := logs[0]
	l.mu.Lock()
	seen := map[string]bool{}
	for _, f := range l.frames[:frames] {
		for _, part := range strings.Split(strings.SplitN(f, ":", 2)[1], ",") {
			if seat, _, ok := strings.Cut(part, "="); ok {
				seen[seat] = true
			}
		}
	}
	l.mu.Unlock()
	if len(seen) != n {
		t.Errorf("inputs of %d seats in frames, want %d", len(seen), n)
	}
}

func TestDevBinaryPlaysAndDrains(t *testing.T) {
	dir := t.TempDir()
	p := start(t, "dev", "--api", "127.0.0.1:0", "--node", "127.0.0.1:0", "--admin", "127.0.0.1:0",
		"--nats", "127.0.0.1:0", "--data-dir", dir)
	r := p.ready
	for name, v := range map[string]string{"api": r.API, "node_ws": r.NodeWS, "admin": r.Admin, "nats": r.NATS, "server_key": r.ServerKey} {
		if v == "" {
			t.Fatalf("ready file lacks %s: %+v", name, r)
		}
	}
	ctx := testContext(t, 60*time.Second)
	be, err := backend.New(r.API, r.ServerKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	room, err := be.CreateRoom(ctx, backend.CreateRoomRequest{RoomID: "e2e-dev", SyncMode: "frame", TickRate: new(30), MaxPlayers: new(2), StartMode: "all_ready"})
	if err != nil {
		t.Fatal(err)
	}
	playLockstep(t, ctx, r.API, be, room.RoomID, 2, 60)

	// The node's metrics are on the admin listener.
	resp, err := http.Get(r.Admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{"switchboard_node_connections", "switchboard_node_messages_out_total", "switchboard_node_tick_duration_seconds", "switchboard_control_requests_total"} {
		if !strings.Contains(string(body), m) {
			t.Errorf("/metrics lacks %s", m)
		}
	}

	// A player connected at SIGTERM is told node_draining, and the process
	// exits 0.
	room2, err := be.CreateRoom(ctx, backend.CreateRoomRequest{SyncMode: "relay", MaxPlayers: new(1), StartMode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	bot := &bench.Bot{API: r.API, Backend: be, RoomID: room2.RoomID, Username: "drained", Seat: -1}
	rm, err := bot.Join(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rm.Close()
	p.stop(10 * time.Second)
	select {
	case <-rm.Done():
		if err := rm.Err(); !errors.Is(err, rooms.ErrNodeDraining) {
			t.Errorf("player's room ended with %v, want node_draining", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("player not told of the drain")
	}
	if strings.Contains(p.out.String(), r.ServerKey) && !strings.Contains(p.out.String(), "server key (dev only") {
		t.Error("the server key appears in logs")
	}
}
