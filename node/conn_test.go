package node_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/switchboardgg/switchboard/node"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
	"github.com/switchboardgg/switchboard/rooms"
	"github.com/switchboardgg/switchboard/store"
)

func TestInvalidMessages(t *testing.T) {
	e := newEnv(t, false, nil)
	rec := record("inv", func(r *store.Room) { r.StartMode = store.StartManual })
	c, _ := e.join(rec, 0)
	bad := []byte{byte(roomwire.TypeInput), 0, 0} // truncated
	overCap := append([]byte{byte(roomwire.TypeInput), 0, 0, 0, 1, 0xC8, 1}, make([]byte, 200)...)
	ping := func(ms uint64) {
		c.send(&roomwire.Ping{ClientMS: ms})
		if p := expect[*roomwire.Pong](c); p.ClientMS != ms {
			t.Fatalf("PONG %d, want %d", p.ClientMS, ms)
		}
	}
	// Two invalid, a valid one, two invalid, an unknown type, text: still open.
	_ = c.sendRaw(bad)
	_ = c.sendRaw(overCap)
	ping(1)
	_ = c.sendRaw(bad)
	_ = c.sendRaw([]byte{byte(roomwire.TypeWelcome)}) // node-to-client type
	_ = c.sendRaw([]byte{0x70, 1, 2, 3})              // unknown type: ignored
	_ = wsutil.WriteClientText(c.nc, []byte("hello"))
	ping(2)
	// Three in a row: ERROR 6.
	for range 3 {
		_ = c.sendRaw(bad)
	}
	c.expectError(roomwire.CodeProtocolUnsupported)
	waitFor(t, "disconnect counted", func() bool {
		return e.counter("switchboard_node_disconnects_total", "reason", "invalid_messages") == 1
	})
	if got := e.counter("switchboard_node_messages_in_total", "type", "unknown"); got != 1 {
		t.Errorf("messages_in_total{unknown} = %v, want 1", got)
	}
}

func TestReadLimit(t *testing.T) {
	e := newEnv(t, false, nil)
	rec := record("big", nil)
	c, _ := e.join(rec, 0)
	// A SNAPSHOT_PUT over the protocol cap but under the read limit is an
	// invalid message, not a close.
	big := append([]byte{byte(roomwire.TypeSnapshotPut), 0, 0, 0, 1, 0x81, 0x80, 0x04}, make([]byte, 65537)...)
	_ = c.sendRaw(big)
	c.send(&roomwire.Ping{ClientMS: 7})
	expect[*roomwire.Pong](c)
	// Over the read limit: closed with 1009.
	_ = c.sendRaw(make([]byte, node.DefaultReadLimit+1))
	for {
		_, err := c.read()
		if err == nil {
			continue
		}
		var ce wsutil.ClosedError
		if !errors.As(err, &ce) || ce.Code != ws.StatusMessageTooBig {
			t.Errorf("over the read limit: %v, want close 1009", err)
		}
		break
	}
}

func TestIdleTimeout(t *testing.T) {
	e := newEnv(t, false, func(c *node.Config) { c.IdleTimeout = 300 * time.Millisecond })
	rec := record("idle", func(r *store.Room) { r.StartMode = store.StartManual })
	quiet, _ := e.join(rec, 0)
	talker, _ := e.join(rec, 1)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // the talker pings faster than the idle timeout
		defer close(done)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				b, _ := roomwire.Append(nil, &roomwire.Ping{})
				_ = talker.sendRaw(b)
			}
		}
	}()
	quiet.expectClosed()
	for {
		m := expect[*roomwire.Member](talker)
		if m.Seat == 0 && m.Kind == roomwire.MemberOffline {
			if m.Reason != "timeout" {
				t.Errorf("MEMBER offline reason %q, want timeout", m.Reason)
			}
			break
		}
	}
	close(stop)
	<-done
	if r := e.srv.Engine().Room("idle"); r.State() != rooms.StateWaiting {
		t.Errorf("room state %v", r.State())
	}
	waitFor(t, "idle_timeout counted", func() bool {
		return e.counter("switchboard_node_disconnects_total", "reason", "idle_timeout") == 1
	})
	talker.send(&roomwire.Ping{ClientMS: 9})
	for expect[*roomwire.Pong](talker).ClientMS != 9 { // the talker is still served
	}
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

func TestSlowClientDropped(t *testing.T) {
	e, sender, watcher := slowConsumerRoom(t, "slow", func(c *node.Config) { c.SendQueueDepth = 32 })

	// The sender floods the slow seat with CUSTOM; between bursts it
	// checks that the watcher still gets its messages.
	payload := make([]byte, roomwire.MaxCustomLen)
	for round := 0; ; round++ {
		for range 200 {
			sender.send(&roomwire.Custom{To: 1 << 0, Data: payload})
		}
		sender.send(&roomwire.Custom{To: 1 << 2, Data: []byte{byte(round)}})
		for {
			m, err := watcher.read()
			if err != nil {
				t.Fatalf("watcher: %v", err)
			}
			if mm, ok := m.(*roomwire.Member); ok && mm.Seat == 0 && mm.Kind == roomwire.MemberOffline {
				if mm.Reason != "network" {
					t.Errorf("slow seat offline with reason %q", mm.Reason)
				}
				if got := e.counter("switchboard_node_disconnects_total", "reason", "slow_consumer"); got != 1 {
					waitFor(t, "slow_consumer counted", func() bool {
						return e.counter("switchboard_node_disconnects_total", "reason", "slow_consumer") == 1
					})
				}
				return
			}
			if c, ok := m.(*roomwire.Custom); ok && c.From == 1 && len(c.Data) == 1 && c.Data[0] == byte(round) {
				break
			}
		}
		if round > 2000 {
			t.Fatal("slow client never dropped")
		}
	}
}

// slowConsumerRoom starts a node (tweaked by tweak) with a relay room in
// which seat 0 stops reading after its WELCOME, over a small socket buffer,
// and seats 1 (a sender) and 2 (a watcher) are connected. CUSTOM and read
// limits are lifted so a flood reaches the slow seat; writes have a long
// deadline so that only the send queue can catch the slow consumer.
func slowConsumerRoom(t *testing.T, roomID string, tweak func(*node.Config)) (e *env, sender, watcher *client) {
	t.Helper()
	e = newEnv(t, false, func(c *node.Config) {
		c.ReadRate, c.ReadBurst = 1<<30, 1<<30
		c.WriteTimeout = time.Minute
		c.Rooms.CustomRate, c.Rooms.CustomBurst = rooms.MaxCustomLimit, rooms.MaxCustomLimit
		c.Rooms.CustomByteRate, c.Rooms.CustomByteBurst = rooms.MaxCustomLimit, rooms.MaxCustomLimit
		tweak(c)
	})
	rec := record(roomID, func(r *store.Room) { r.SyncMode = store.SyncRelay; r.TickRate = 0; r.StartMode = store.StartManual })
	e.admit(rec, 0)
	slow := e.dialWith(func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		nc, err := d.DialContext(ctx, network, addr)
		if err == nil {
			_ = nc.(*net.TCPConn).SetReadBuffer(4096)
		}
		return nc, err
	})
	slow.hello(e.ticket(roomID, 0, nil))
	expect[*roomwire.Welcome](slow) // and then it stops reading
	sender, _ = e.join(rec, 1)
	watcher, _ = e.join(rec, 2)
	return e, sender, watcher
}

// TestUpgradeHeaderLimit: an upgrade request whose header is over
// Config.MaxHeaderBytes is answered 431, not read on up to net/http's
// default of 1 MiB per connection.
func TestUpgradeHeaderLimit(t *testing.T) {
	e := newEnv(t, false, func(c *node.Config) { c.MaxHeaderBytes = 1 << 10 })
	host := strings.TrimPrefix(strings.TrimSuffix(e.url, node.Path), "ws://")
	nc, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	// 32 KiB, above the limit and net/http's 4 KiB of slack; written in
	// the background, as the server may answer and close before reading
	// all of it.
	req := "GET " + node.Path + " HTTP/1.1\r\nHost: " + host + "\r\nX-Pad: " + strings.Repeat("a", 32<<10) + "\r\n\r\n"
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		_, _ = io.WriteString(nc, req)
	}()
	line, err := bufio.NewReader(nc).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	if !strings.HasPrefix(line, "HTTP/1.1 431") {
		t.Errorf("got %q, want HTTP/1.1 431", strings.TrimSpace(line))
	}
	// net/http closes the connection 500 ms after its answer (its RST
	// avoidance); wait for that, so that goleak sees no server goroutine.
	waitFor(t, "the server to close the connection", func() bool {
		_, err := nc.Write([]byte("x"))
		return err != nil
	})
	<-wrote
}
