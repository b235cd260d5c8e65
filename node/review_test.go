package node_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/switchboardgg/switchboard/node"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
	"github.com/switchboardgg/switchboard/store"
)

// TestDrainDuringUpgrade: a connection upgraded while the node starts
// draining, before the node registered it, still gets ERROR 10 at once,
// and Shutdown does not wait for its handshake timeout.
func TestDrainDuringUpgrade(t *testing.T) {
	e := newEnv(t, false, func(c *node.Config) { c.HandshakeTimeout = 30 * time.Second })
	upgraded, proceed := make(chan struct{}), make(chan struct{})
	e.srv.SetUpgradeHook(func() {
		close(upgraded)
		<-proceed
	})
	c := e.dial() // upgraded, then silent
	<-upgraded
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- e.srv.Shutdown(ctx) }()
	waitFor(t, "draining", e.srv.Engine().Draining)
	close(proceed)
	c.expectError(roomwire.CodeNodeDraining)
	if err := <-errc; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// TestHandshakeDeadlineFromRequestStart: the handshake timeout counts from
// the start of the HTTP request, not from the upgrade: a client that
// spends most of it on the request headers has only the rest for HELLO.
func TestHandshakeDeadlineFromRequestStart(t *testing.T) {
	const timeout = 800 * time.Millisecond
	e := newEnv(t, false, func(c *node.Config) { c.HandshakeTimeout = timeout })
	rec := record("slowhs", nil)
	e.admit(rec, 0)
	nc, err := net.Dial("tcp", strings.TrimPrefix(strings.TrimSuffix(e.url, node.Path), "ws://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_, _ = io.WriteString(nc, "GET "+node.Path+" HTTP/1.1\r\nHost: node\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: "+node.Subprotocol+"\r\n")
	time.Sleep(timeout / 2) // half the handshake time on the headers
	_, _ = io.WriteString(nc, "\r\n")
	br := bufio.NewReader(nc)
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v, %v", resp, err)
	}
	c := &client{t: t, nc: nc}
	c.rw = struct {
		io.Reader
		io.Writer
	}{br, lockedWriter{c}}
	time.Sleep(timeout * 9 / 10) // past the deadline counted from the request's start, not from the upgrade
	hello, err := roomwire.AppendHandshake(nil, roomwire.KindHello, []byte(e.ticket("slowhs", 0, nil)), &roomwire.Hello{ClientNonce: 1})
	if err != nil {
		t.Fatal(err)
	}
	_ = c.sendRaw(hello) // the node may have closed already
	for {
		m, err := c.read()
		if err != nil {
			break
		}
		if _, ok := m.(*roomwire.Welcome); ok {
			t.Fatal("WELCOME after the handshake timeout")
		}
	}
	waitFor(t, "handshake_timeout counted", func() bool {
		return e.counter("switchboard_node_disconnects_total", "reason", "handshake_timeout") == 1
	})
}

// TestIdleNotNetwork: a client that sends no im.game.v1 message for the
// idle timeout is dropped as idle (MEMBER offline "timeout"), whatever
// else it sends and wherever the read stands when the timeout fires.
func TestIdleNotNetwork(t *testing.T) {
	tests := []struct {
		name string
		send func(c *client, stop <-chan struct{})
	}{
		{"websocket pings", func(c *client, stop <-chan struct{}) {
			every(stop, 20*time.Millisecond, func() {
				c.mu.Lock()
				_ = ws.WriteFrame(c.nc, ws.MaskFrame(ws.NewPingFrame([]byte("hi"))))
				c.mu.Unlock()
			})
		}},
		{"text frames", func(c *client, stop <-chan struct{}) {
			every(stop, 20*time.Millisecond, func() {
				c.mu.Lock()
				_ = wsutil.WriteClientText(c.nc, []byte("hello"))
				c.mu.Unlock()
			})
		}},
		{"a frame begun", func(c *client, _ <-chan struct{}) {
			c.mu.Lock()
			_, _ = c.nc.Write([]byte{0x89, 0x85}) // a masked ping of 5 bytes: no mask, no payload
			c.mu.Unlock()
		}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, false, func(c *node.Config) {
				c.IdleTimeout = 300 * time.Millisecond
				c.CloseWait = 50 * time.Millisecond
			})
			rec := record(fmt.Sprintf("idle%d", i), func(r *store.Room) { r.StartMode = store.StartManual })
			quiet, _ := e.join(rec, 0)
			watcher, _ := e.join(rec, 1)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() { tc.send(quiet, stop) })
			wg.Go(func() {
				every(stop, 50*time.Millisecond, func() { // the watcher stays active
					b, _ := roomwire.Append(nil, &roomwire.Ping{})
					_ = watcher.sendRaw(b)
				})
			})
			for {
				m := expect[*roomwire.Member](watcher)
				if m.Seat == 0 && m.Kind == roomwire.MemberOffline {
					if m.Reason != "timeout" {
						t.Errorf("MEMBER offline reason %q, want timeout", m.Reason)
					}
					break
				}
			}
			close(stop)
			wg.Wait()
			waitFor(t, "idle_timeout counted", func() bool {
				return e.counter("switchboard_node_disconnects_total", "reason", "idle_timeout") == 1
			})
			if got := e.counter("switchboard_node_disconnects_total", "reason", "network"); got != 0 {
				t.Errorf("disconnects_total{network} = %v", got)
			}
		})
	}
}

// every runs f every d until stop is closed.
func every(stop <-chan struct{}, d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			f()
		}
	}
}

// TestControlFrames: WebSocket control frames are read within the
// connection's read budget, and a ping flood gets a bounded number of
// pongs.
func TestControlFrames(t *testing.T) {
	ping := ws.MaskFrame(ws.NewPingFrame(bytes.Repeat([]byte{'p'}, ws.MaxControlFramePayloadSize)))
	pingBytes, err := ws.CompileFrame(ping)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("read budget", func(t *testing.T) {
		e := newEnv(t, false, func(c *node.Config) { c.ReadRate, c.ReadBurst = 1, 1 }) // the burst becomes the read limit
		c, _ := e.join(record("budget", nil), 0)
		before := e.srv.ReadBudgets()
		const n = 200
		c.mu.Lock()
		_, _ = c.nc.Write(bytes.Repeat(pingBytes, n))
		c.mu.Unlock()
		c.send(&roomwire.Ping{ClientMS: 1}) // answered once the pings are read
		for expect[*roomwire.Pong](c).ClientMS != 1 {
		}
		after := e.srv.ReadBudgets()
		if len(before) != 1 || len(after) != 1 {
			t.Fatalf("budgets %v, %v", before, after)
		}
		if used := before[0] - after[0]; used < n*float64(len(pingBytes)) {
			t.Errorf("%d pings of %d bytes used %.0f bytes of the read budget", n, len(pingBytes), used)
		}
	})

	t.Run("pongs", func(t *testing.T) {
		e := newEnv(t, false, nil)
		c, _ := e.join(record("pongs", nil), 0)
		pongs := 0
		// readPong reads until the PONG of a PING with ms, counting the
		// WebSocket pongs on the way.
		readPong := func(ms uint64) {
			_ = c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			for {
				h, err := ws.ReadHeader(c.rw)
				if err != nil {
					t.Fatal(err)
				}
				p := make([]byte, h.Length)
				if _, err := io.ReadFull(c.rw, p); err != nil {
					t.Fatal(err)
				}
				switch h.OpCode {
				case ws.OpPong:
					pongs++
				case ws.OpBinary:
					if m, err := roomwire.Decode(p); err == nil {
						if pm, ok := m.(*roomwire.Pong); ok && pm.ClientMS == ms {
							return
						}
					}
				}
			}
		}
		const rounds = 60
		start := time.Now()
		for i := range uint64(rounds) {
			c.mu.Lock()
			_, _ = c.nc.Write(pingBytes)
			c.mu.Unlock()
			c.send(&roomwire.Ping{ClientMS: i})
			readPong(i)
		}
		elapsed := time.Since(start)
		c.send(&roomwire.Ping{ClientMS: rounds}) // a pong written after the last PONG
		readPong(rounds)
		limit := node.PongBurst + int(elapsed.Seconds()*node.PongsPerSecond) + 1
		if pongs == 0 || pongs > limit {
			t.Errorf("%d pings answered with %d pongs in %v, want 1 to %d", rounds, pongs, elapsed, limit)
		}
	})
}

// TestCloseThrottledReader: Close does not wait for a reader the read
// budget holds back.
func TestCloseThrottledReader(t *testing.T) {
	e := newEnv(t, false, func(c *node.Config) { c.ReadRate, c.ReadBurst = 1, 1 })
	c, _ := e.join(record("throttled", func(r *store.Room) { r.StartMode = store.StartManual }), 0) // no frames to wake the writer
	big := make([]byte, node.DefaultReadLimit-100)
	_ = c.sendRaw(big)
	_ = c.sendRaw(big) // over the budget: the reader waits for hours
	waitFor(t, "the reader throttled", func() bool {
		b := e.srv.ReadBudgets()
		return len(b) == 1 && b[0] < 0
	})
	closed := make(chan error, 1)
	go func() { closed <- e.srv.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close waits for the throttled reader")
	}
}

// TestQueueBytes: a connection whose queue holds more than MaxQueueBytes
// is dropped as a slow consumer, long before its message bound.
func TestQueueBytes(t *testing.T) {
	const maxBytes = 1 << 20
	e, sender, watcher := slowConsumerRoom(t, "bytes", func(c *node.Config) {
		c.SendQueueDepth = 1 << 16 // 64 MiB of CUSTOM: never reached
		c.MaxQueueBytes = maxBytes
	})

	payload := make([]byte, roomwire.MaxCustomLen)
	const budget = 24 << 20 // socket buffers (a few MiB) and the queue, with room to spare
	for sent := 0; ; {
		for range 256 {
			sender.send(&roomwire.Custom{To: 1 << 0, Data: payload})
		}
		sent += 256 * len(payload)
		sender.send(&roomwire.Custom{To: 1 << 2, Data: []byte{1}})
		for {
			m, err := watcher.read()
			if err != nil {
				t.Fatalf("watcher: %v", err)
			}
			if mm, ok := m.(*roomwire.Member); ok && mm.Seat == 0 && mm.Kind == roomwire.MemberOffline {
				waitFor(t, "slow_consumer counted", func() bool {
					return e.counter("switchboard_node_disconnects_total", "reason", "slow_consumer") == 1
				})
				return
			}
			if c, ok := m.(*roomwire.Custom); ok && c.From == 1 && len(c.Data) == 1 {
				break
			}
		}
		if sent > budget {
			t.Fatalf("slow client not dropped after %d MiB", sent>>20)
		}
	}
}

// TestCatchUpBeyondQueueBounds: the catch-up of a resume (WELCOME and the
// retained frames) is queued whole even when it is longer than the
// connection's queue bounds; what the room sends afterwards counts.
func TestCatchUpBeyondQueueBounds(t *testing.T) {
	const depth = 32 // the smallest queue
	e := newEnv(t, false, func(c *node.Config) {
		c.SendQueueDepth = depth
		c.Rooms.Retention = 5 * time.Minute
	})
	rec := record("catchup", func(r *store.Room) { r.TickRate = 60 })
	a, w := e.join(rec, 0)
	a.nc.Close()
	r := e.srv.Engine().Room("catchup")
	waitFor(t, "frame 1", func() bool { return r.Frame() > 0 })
	waitFor(t, "seat offline", func() bool {
		return e.counter("switchboard_node_disconnects_total", "reason", "network")+
			e.counter("switchboard_node_disconnects_total", "reason", "client_closed") == 1
	})
	for r.Frame() < (depth+2)*roomwire.MaxFramesPerBatch { // frames for more batches than the queue holds
		r.Tick(time.Now())
	}
	c := e.dial()
	c.resume(w.ResumeToken, 0)
	w2 := expect[*roomwire.Welcome](c)
	next := uint32(1)
	for next <= w2.Frame {
		fb := expect[*roomwire.FrameBatch](c)
		for _, f := range fb.Frames {
			if f.Number != next {
				t.Fatalf("frame %d, want %d", f.Number, next)
			}
			next++
		}
	}
	if got := e.counter("switchboard_node_disconnects_total", "reason", "slow_consumer"); got != 0 {
		t.Errorf("disconnects_total{slow_consumer} = %v", got)
	}
}

// TestRecordsSurviveOutage: the seat and room changes made while the node
// cannot reach NATS reach the records once it can again, however many
// there were.
func TestRecordsSurviveOutage(t *testing.T) {
	e := newEnvProxied(t, true, true, func(c *node.Config) {
		c.UpdateTimeout = 200 * time.Millisecond
		c.Rooms.CloseLinger = 50 * time.Millisecond
	})
	ctx := context.Background()
	getRoom := func() *store.Room {
		r, err := e.db.GetRoom(ctx, "outage")
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	rec := record("outage", func(r *store.Room) { r.StartMode = store.StartManual })
	var cs []*client
	for seat := range 4 {
		c, _ := e.join(rec, seat)
		cs = append(cs, c)
	}
	waitFor(t, "seats online in the record", func() bool {
		r := getRoom()
		for seat := range 4 {
			if st := r.Seat(seat); st == nil || st.Status != store.SeatOnline {
				return false
			}
		}
		return true
	})

	e.proxy.setCut(true)
	for seat := range 3 {
		cs[seat].send(&roomwire.Leave{})
		cs[seat].expectClosed()
	}
	cs[3].nc.Close()
	waitFor(t, "seat 3 offline", func() bool {
		return e.counter("switchboard_node_disconnects_total", "reason", "client_closed")+
			e.counter("switchboard_node_disconnects_total", "reason", "network") >= 1
	})
	time.Sleep(500 * time.Millisecond) // updates fail meanwhile
	if _, err := e.srv.Commands().Close(ctx, &store.CloseRequest{RoomID: "outage", Reason: "game_over"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "room gone from the engine", func() bool { return e.srv.Engine().Room("outage") == nil })
	time.Sleep(500 * time.Millisecond)
	if r := getRoom(); r.Status == store.StatusClosed || len(r.Seats) != 4 {
		t.Fatalf("record changed during the outage: %+v", r)
	}

	e.proxy.setCut(false)
	waitFor(t, "the record to catch up", func() bool {
		r := getRoom()
		return r.Status == store.StatusClosed && len(r.Seats) == 1 && r.Seat(3) != nil && r.Seat(3).Status == store.SeatOffline
	})
	if r := getRoom(); r.CloseReason != "game_over" || r.ClosedAt == nil {
		t.Errorf("record %+v", r)
	}
}

// TestReadmitAfterRelease: a login session whose seat the node released
// and then admitted again (C1 again before, or after, the release reached
// the record) ends up holding the seat in the record, as in the engine.
func TestReadmitAfterRelease(t *testing.T) {
	for _, pending := range []bool{true, false} {
		name := "release written"
		if pending {
			name = "release pending"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnvProxied(t, true, true, func(c *node.Config) { c.UpdateTimeout = 200 * time.Millisecond })
			ctx := context.Background()
			getRoom := func() *store.Room {
				r, err := e.db.GetRoom(ctx, "readmit")
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			rec := record("readmit", func(r *store.Room) { r.StartMode = store.StartManual })
			a, _ := e.join(rec, 0)
			b, _ := e.join(rec, 1)
			waitFor(t, "seats online in the record", func() bool {
				r := getRoom()
				return r.Seat(0) != nil && r.Seat(0).Status == store.SeatOnline && r.Seat(1) != nil && r.Seat(1).Status == store.SeatOnline
			})
			if pending {
				e.proxy.setCut(true)
			}
			a.send(&roomwire.Leave{}) // released by the node
			a.expectClosed()
			if !pending {
				waitFor(t, "seat 0 released in the record", func() bool { return getRoom().Seat(0) == nil })
			}
			// Control admits the session again (C1 again).
			if _, err := e.srv.Commands().Admit(ctx, &store.AdmitRequest{Settings: getRoom().Settings(), Seat: 0, Username: "user0", SessionID: session(0)}); err != nil {
				t.Fatal(err)
			}
			b.nc.Close() // a later change, to know when the record caught up
			e.proxy.setCut(false)
			waitFor(t, "seat 1 offline in the record", func() bool {
				st := getRoom().Seat(1)
				return st != nil && st.Status == store.SeatOffline
			})
			waitFor(t, "seat 0 held again in the record", func() bool {
				st := getRoom().Seat(0)
				return st != nil && st.SessionID == session(0) && st.Status == store.SeatJoined
			})
			// The player connects to the seat it holds.
			c := e.dial()
			c.hello(e.ticket("readmit", 0, nil))
			expect[*roomwire.Welcome](c)
			waitFor(t, "seat 0 online in the record", func() bool {
				st := getRoom().Seat(0)
				return st != nil && st.Status == store.SeatOnline
			})
		})
	}
}
