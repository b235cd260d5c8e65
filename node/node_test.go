package node_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/switchboardgg/switchboard/node"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
	"github.com/switchboardgg/switchboard/rooms"
	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/tokens"
)

func TestHandshakeErrors(t *testing.T) {
	e := newEnv(t, false, nil)
	rec := record("hs", nil)
	e.admit(rec, 0)
	e.admit(rec, 1)
	otherKey := make([]byte, 32)
	_, _ = rand.Read(otherKey)
	other, _ := tokens.NewSigner(otherKey)
	forged, _ := other.SignConnectTicket(tokens.ConnectTicket{RoomID: "hs", Seat: 0, SessionID: session(0), ExpiresMS: time.Now().Add(time.Minute).UnixMilli(), ID: "x"})
	used := e.ticket("hs", 0, nil)
	c := e.dial()
	c.hello(used)
	expect[*roomwire.Welcome](c)

	tests := []struct {
		name string
		send func(c *client)
		code uint8
	}{
		{"bad signature", func(c *client) { c.hello(forged) }, roomwire.CodeTicketInvalid},
		{"not a ticket", func(c *client) { c.hello("AQ3k") }, roomwire.CodeTicketInvalid},
		{"expired", func(c *client) {
			c.hello(e.ticket("hs", 1, func(t *tokens.ConnectTicket) { t.ExpiresMS = time.Now().Add(-time.Second).UnixMilli() }))
		}, roomwire.CodeTicketExpired},
		{"already used", func(c *client) { c.hello(used) }, roomwire.CodeTicketExpired},
		{"room not on node", func(c *client) { c.hello(e.ticket("elsewhere", 0, nil)) }, roomwire.CodeRoomNotFound},
		{"seat not held", func(c *client) { c.hello(e.ticket("hs", 2, nil)) }, roomwire.CodeRoomFull},
		{"seat of another session", func(c *client) {
			c.hello(e.ticket("hs", 1, func(t *tokens.ConnectTicket) { t.SessionID = "intruder" }))
		}, roomwire.CodeSeatTaken},
		{"malformed", func(c *client) { _ = c.sendRaw([]byte{1, 0, 9, 'x'}) }, roomwire.CodeProtocolUnsupported},
		{"handshake kind 3", func(c *client) { _ = c.sendRaw([]byte{3, 0, 0, 1}) }, roomwire.CodeProtocolUnsupported},
		{"bad resume token", func(c *client) { c.resume([]byte("rt1.nope.nope"), 0) }, roomwire.CodeResumeRejected},
		{"resume token of another key", func(c *client) {
			tok, _ := other.SignResumeToken(tokens.ResumeToken{RoomID: "hs", Seat: 0, SessionID: session(0), Gen: 1})
			c.resume([]byte(tok), 0)
		}, roomwire.CodeResumeRejected},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := e.dial()
			tc.send(c)
			c.expectError(tc.code)
		})
	}
	if got := e.counter("switchboard_node_errors_total", "code", "ticket_expired"); got != 2 {
		t.Errorf("errors_total{ticket_expired} = %v, want 2", got)
	}
	waitFor(t, "handshake_failed disconnects counted", func() bool {
		return e.counter("switchboard_node_disconnects_total", "reason", "handshake_failed") == float64(len(tests))
	})
}

func TestUpgradeRequirements(t *testing.T) {
	e := newEnv(t, false, func(c *node.Config) { c.MaxConnections = 1 })
	base := strings.Replace(e.url, "ws://", "http://", 1)
	req, _ := http.NewRequest(http.MethodGet, base, nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("upgrade without the subprotocol: %d, want 400", resp.StatusCode)
	}

	c := e.dial() // the one connection allowed
	d := ws.Dialer{Protocols: []string{node.Subprotocol}, Timeout: 5 * time.Second}
	if _, _, _, err := d.Dial(context.Background(), e.url); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("connection over MaxConnections: %v, want HTTP 503", err)
	}
	c.nc.Close()
	http.DefaultClient.CloseIdleConnections()
}

func TestLockstep(t *testing.T) {
	e := newEnv(t, false, nil)
	rec := record("ls", func(r *store.Room) {
		r.MaxPlayers = 2
		r.StartMode = store.StartAllReady
		r.SnapshotIntervalFrames = 60
	})
	a, wa := e.join(rec, 0)
	b, wb := e.join(rec, 1)
	if wa.Seat != 0 || wb.Seat != 1 || wb.SyncMode != roomwire.SyncFrame || wb.TickRate != 30 || wb.MaxPlayers != 2 ||
		wb.RoomState != roomwire.StateWaiting || wb.StartFrame != 0 || wb.Frame != 0 || wb.SnapshotSeat != 0 || len(wb.ResumeToken) == 0 {
		t.Errorf("WELCOME %+v", wb)
	}
	if want := []roomwire.MemberInfo{{Seat: 0, Username: "user0", Online: true}, {Seat: 1, Username: "user1", Online: true}}; !slices.Equal(wb.Members, want) {
		t.Errorf("members %+v, want %+v", wb.Members, want)
	}
	if d := time.Since(time.UnixMilli(int64(wb.ServerTimeMS))); d < 0 || d > time.Minute {
		t.Errorf("server_time_ms off by %v", d)
	}
	if m := expect[*roomwire.Member](a); m.Seat != 1 || m.Kind != roomwire.MemberOnline || m.Username != "user1" {
		t.Errorf("MEMBER %+v, want seat 1 online", m)
	}

	a.send(&roomwire.Ready{})
	b.send(&roomwire.Ready{})
	for _, c := range []*client{a, b} {
		if rs := expect[*roomwire.RoomState](c); rs.State != roomwire.StatePlaying || rs.StartFrame != 1 {
			t.Errorf("ROOM_STATE %+v, want playing from frame 1", rs)
		}
	}

	// Each side sends its input once a frame until frame 20, and both see
	// the same frames, in order, with both inputs once both have sent.
	const last = 20
	got := [2]map[uint32]string{{}, {}}
	done := make(chan struct{})
	for i, c := range []*client{a, b} {
		go func() {
			defer func() { done <- struct{}{} }()
			seen := uint32(0)
			c.send(&roomwire.Input{Data: []byte{byte(i)}})
			for seen < last {
				m, err := c.read()
				if err != nil {
					t.Errorf("seat %d: %v", i, err)
					return
				}
				f, ok := m.(*roomwire.Frame)
				if !ok {
					continue
				}
				for _, tf := range f.Frames {
					if tf.Number <= seen {
						continue
					}
					if tf.Number != seen+1 {
						t.Errorf("seat %d: frame %d after %d", i, tf.Number, seen)
					}
					seen = tf.Number
					var sb strings.Builder
					for _, in := range tf.Inputs {
						sb.WriteByte('0' + in.Seat)
						sb.Write(in.Data)
					}
					got[i][tf.Number] = sb.String()
					c.send(&roomwire.Input{AckFrame: seen, Data: []byte{byte(i)}})
				}
			}
		}()
	}
	<-done
	<-done
	for n := uint32(1); n <= last; n++ {
		if got[0][n] != got[1][n] {
			t.Fatalf("frame %d differs: %q vs %q", n, got[0][n], got[1][n])
		}
	}
	if got[0][last] != "0\x001\x01" {
		t.Errorf("frame %d inputs %q, want both seats", last, got[0][last])
	}

	// FRAME_REQ is answered with a FRAME_BATCH of the same frames.
	a.send(&roomwire.FrameReq{From: 1, To: last})
	fb := expect[*roomwire.FrameBatch](a)
	if len(fb.Frames) != last || fb.Frames[0].Number != 1 || fb.Frames[last-1].Number != last {
		t.Fatalf("FRAME_BATCH of %d frames", len(fb.Frames))
	}

	// PING is answered with PONG.
	a.send(&roomwire.Ping{ClientMS: 12345, RTTMS: 3})
	if p := expect[*roomwire.Pong](a); p.ClientMS != 12345 || p.ServerMS == 0 {
		t.Errorf("PONG %+v", p)
	}
	if e.counter("switchboard_node_messages_in_total", "type", "INPUT") < 2*last {
		t.Error("messages_in_total{INPUT} not counted")
	}
	if e.counter("switchboard_node_messages_out_total", "type", "FRAME") < 2*last {
		t.Error("messages_out_total{FRAME} not counted")
	}
}

func TestResume(t *testing.T) {
	e := newEnv(t, false, nil)
	rec := record("res", func(r *store.Room) { r.MaxPlayers = 2 })
	a, wa := e.join(rec, 0)
	b, _ := e.join(rec, 1)
	waitFor(t, "frame 5", func() bool { return e.srv.Engine().Room("res").Frame() >= 5 })
	a.nc.Close()
	if m := expect[*roomwire.Member](b); m.Seat != 0 || m.Kind != roomwire.MemberOffline || m.Reason != "network" {
		t.Errorf("MEMBER %+v, want seat 0 offline network", m)
	}
	waitFor(t, "frame 20", func() bool { return e.srv.Engine().Room("res").Frame() >= 20 })

	c := e.dial()
	c.resume(wa.ResumeToken, 3)
	w := expect[*roomwire.Welcome](c)
	if w.Seat != 0 || w.Frame < 20 || bytes.Equal(w.ResumeToken, wa.ResumeToken) {
		t.Errorf("resume WELCOME seat %d frame %d", w.Seat, w.Frame)
	}
	fb := expect[*roomwire.FrameBatch](c)
	if fb.Frames[0].Number != 4 || fb.Frames[len(fb.Frames)-1].Number != w.Frame {
		t.Errorf("catch-up %d..%d, want 4..%d", fb.Frames[0].Number, fb.Frames[len(fb.Frames)-1].Number, w.Frame)
	}
	if m := expect[*roomwire.Member](b); m.Seat != 0 || m.Kind != roomwire.MemberOnline {
		t.Errorf("MEMBER %+v, want seat 0 online", m)
	}

	// The token of the first WELCOME is used up.
	d := e.dial()
	d.resume(wa.ResumeToken, 0)
	d.expectError(roomwire.CodeResumeRejected)

	// A RESUME for the seat while it is connected replaces the connection.
	n := e.dial()
	n.resume(w.ResumeToken, w.Frame)
	expect[*roomwire.Welcome](n)
	if er := c.expectError(roomwire.CodeSeatTaken); er.Reason != "replaced" {
		t.Errorf("replaced connection got reason %q", er.Reason)
	}
}

func TestReplacementByHello(t *testing.T) {
	e := newEnv(t, false, nil)
	rec := record("rep", nil)
	a, _ := e.join(rec, 0)
	a2 := e.dial()
	a2.hello(e.ticket("rep", 0, nil))
	if w := expect[*roomwire.Welcome](a2); w.Seat != 0 {
		t.Errorf("seat %d", w.Seat)
	}
	if er := a.expectError(roomwire.CodeSeatTaken); er.Reason != "replaced" {
		t.Errorf("reason %q, want replaced", er.Reason)
	}
}

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

func TestHandshakeTimeout(t *testing.T) {
	e := newEnv(t, false, func(c *node.Config) { c.HandshakeTimeout = 200 * time.Millisecond })
	c := e.dial()
	c.expectClosed()
	waitFor(t, "disconnect counted", func() bool {
		return e.counter("switchboard_node_disconnects_total", "reason", "handshake_timeout") == 1
	})
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

func TestShutdownDrains(t *testing.T) {
	e := newEnv(t, false, nil)
	rec := record("dr", nil)
	a, _ := e.join(rec, 0)
	pending := e.dial() // connected, no handshake yet
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- e.srv.Shutdown(ctx) }()
	a.expectError(roomwire.CodeNodeDraining)
	pending.expectError(roomwire.CodeNodeDraining)
	if err := <-errc; err != nil {
		t.Errorf("Shutdown: %v", err)
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
