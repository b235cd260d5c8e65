package node_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/node"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
	"github.com/switchboardgg/switchboard/store"
)

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

	// c has not spoken yet: for all the node knows its WELCOME was lost,
	// and the first WELCOME's token resumes once more (resumeSuccessors),
	// replacing c.
	c2 := e.dial()
	c2.resume(wa.ResumeToken, w.Frame)
	w2 := expect[*roomwire.Welcome](c2)
	if w2.Seat != 0 || bytes.Equal(w2.ResumeToken, w.ResumeToken) {
		t.Errorf("second resume with the first token: seat %d, token reused %v", w2.Seat, bytes.Equal(w2.ResumeToken, w.ResumeToken))
	}
	if er := c.expectError(roomwire.CodeSeatTaken); er.Reason != "replaced" {
		t.Errorf("replaced connection got reason %q", er.Reason)
	}
	// Once c2 has spoken, the token of the first WELCOME is used up.
	c2.send(&roomwire.Ping{ClientMS: 1})
	expect[*roomwire.Pong](c2)
	d := e.dial()
	d.resume(wa.ResumeToken, 0)
	d.expectError(roomwire.CodeResumeRejected)

	// A RESUME for the seat while it is connected replaces the connection.
	n := e.dial()
	n.resume(w2.ResumeToken, w2.Frame)
	expect[*roomwire.Welcome](n)
	if er := c2.expectError(roomwire.CodeSeatTaken); er.Reason != "replaced" {
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

// TestFrameReqAnsweredAgain: the node answers a FRAME_REQ for frames it
// already sent on the connection (the client may have lost them), and a
// request over the seat's budget is ignored and counted.
func TestFrameReqAnsweredAgain(t *testing.T) {
	// 10 s of frames at 30 Hz kept: a budget of 300 frames per 5 s.
	e := newEnv(t, false, func(c *node.Config) { c.Rooms.Retention = 10 * time.Second })
	rec := record("again", func(r *store.Room) { r.MaxPlayers = 1 })
	a, _ := e.join(rec, 0)
	waitFor(t, "frame 12", func() bool { return e.srv.Engine().Room("again").Frame() >= 12 })
	for i := range 2 {
		a.send(&roomwire.FrameReq{From: 3, To: 12})
		if fb := expect[*roomwire.FrameBatch](a); fb.Frames[0].Number != 3 || len(fb.Frames) != 10 {
			t.Fatalf("answer %d: frames %d..%d, want 3..12", i+1, fb.Frames[0].Number, fb.Frames[len(fb.Frames)-1].Number)
		}
	}
	for range 100 { // far over the budget, whatever the refill meanwhile
		a.send(&roomwire.FrameReq{From: 3, To: 12})
	}
	waitFor(t, "a refused FRAME_REQ counted", func() bool {
		return e.counter("switchboard_node_frame_reqs_refused_total") > 0
	})
}
