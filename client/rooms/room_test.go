package rooms

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

func TestConnectHandshake(t *testing.T) {
	c, fc, node, _ := setup(t, func(cfg *Config) { cfg.SDKVersion = "go/test" })
	r, nc := connect(t, c, node, welcome(0, "rt-1"))

	if got, want := string(nc.hs.Token), "ticket-1"; got != want {
		t.Errorf("HELLO token %q, want %q", got, want)
	}
	if got := nc.hs.Hello.SDKVersion; got != "go/test" {
		t.Errorf("sdk_version %q, want go/test", got)
	}
	bodies := fc.joinBodies()
	if len(bodies) != 1 || bodies[0]["client_session_id"] != "join-6f2a01b7-468e" || bodies[0]["ticket"] != "gtk_1" || bodies[0]["transport"] != "udp" {
		t.Errorf("C1 bodies %v", bodies)
	}
	s := r.State()
	if s.Seat != 0 || s.RoomState != roomwire.StatePlaying || len(s.Members) != 2 || s.Members[1].Username != "bob" || s.RoomID != "rank-8812" {
		t.Errorf("state %+v", s)
	}
	if got := r.Stats().Connects; got != 1 {
		t.Errorf("Connects %d, want 1", got)
	}
}

func TestFramesInOrderWithFrameReq(t *testing.T) {
	c, _, node, _ := setup(t, nil)
	r, nc := connect(t, c, node, welcome(0, "rt-1"))

	in := func(seat uint8, s string) roomwire.SeatInput { return roomwire.SeatInput{Seat: seat, Data: []byte(s)} }
	nc.send(t, &roomwire.Frame{Frames: []roomwire.TickFrame{tick(1, in(0, "a"), in(1, "b"))}})
	nc.send(t, &roomwire.Frame{Frames: []roomwire.TickFrame{tick(1), tick(2, in(1, "c")), tick(3)}})
	// 4 and 5 lost; 6..8 arrive: newest 8 ≥ next 4 + 3, so FRAME_REQ(4, 7).
	nc.send(t, &roomwire.Frame{Frames: []roomwire.TickFrame{tick(6), tick(7), tick(8)}})

	if got, want := frameNumbers(t, r, 3), []uint32{1, 2, 3}; !slices.Equal(got, want) {
		t.Fatalf("frames %v, want %v", got, want)
	}
	req := nc.recvType(t, roomwire.TypeFrameReq).(*roomwire.FrameReq)
	if req.From != 4 || req.To != 7 {
		t.Fatalf("FRAME_REQ(%d, %d), want (4, 7)", req.From, req.To)
	}
	nc.send(t, &roomwire.FrameBatch{Frames: []roomwire.TickFrame{tick(4, in(0, "d")), tick(5), tick(6), tick(7)}})
	var got []uint32
	var four Frame
	for range 5 {
		f := recv(t, r.Frames(), "frame")
		if f.Number == 4 {
			four = f
		}
		got = append(got, f.Number)
	}
	if want := []uint32{4, 5, 6, 7, 8}; !slices.Equal(got, want) {
		t.Fatalf("frames %v, want %v", got, want)
	}
	if len(four.Inputs) != 1 || four.Inputs[0].Seat != 0 || string(four.Inputs[0].Data) != "d" {
		t.Errorf("frame 4 inputs %+v", four.Inputs)
	}
	if st := r.Stats(); st.FrameRequests != 1 || st.FramesDelivered != 8 {
		t.Errorf("stats %+v, want 1 request and 8 frames", st)
	}

	// INPUT acknowledges the last frame handed over.
	if err := r.SendInput([]byte{7}); err != nil {
		t.Fatal(err)
	}
	inp := nc.recvType(t, roomwire.TypeInput).(*roomwire.Input)
	if inp.AckFrame != 8 || !bytes.Equal(inp.Data, []byte{7}) {
		t.Errorf("INPUT ack %d data %v, want ack 8 data [7]", inp.AckFrame, inp.Data)
	}
}

func TestConnectFromStart(t *testing.T) {
	c, _, node, _ := setup(t, nil)
	done := make(chan *Room, 1)
	go func() {
		r, err := c.Connect(t.Context(), "r1", JoinOptions{FromStart: true})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	nc := node.next()
	nc.send(t, welcome(500, "rt-1"))
	r := recv(t, done, "Connect")
	if r == nil {
		return
	}
	defer r.Close()
	req := nc.recvType(t, roomwire.TypeFrameReq).(*roomwire.FrameReq)
	if req.From != 1 || req.To != 500 {
		t.Fatalf("FRAME_REQ(%d, %d), want (1, 500)", req.From, req.To)
	}
	nc.send(t, &roomwire.Snapshot{Frame: 400, Data: []byte("s")})
	var batch []roomwire.TickFrame
	for n := uint32(401); n <= 500; n++ {
		batch = append(batch, tick(n))
	}
	nc.send(t, &roomwire.FrameBatch{Frames: batch})
	if f := recv(t, r.Frames(), "restore"); !f.Restore || f.Number != 400 {
		t.Fatalf("first frame %+v, want a restore at 400", f)
	}
	got := frameNumbers(t, r, 100)
	if got[0] != 401 || got[99] != 500 {
		t.Errorf("frames %d..%d, want 401..500", got[0], got[99])
	}
}

func TestFrameInputsAreOwned(t *testing.T) {
	c, _, node, _ := setup(t, nil)
	r, nc := connect(t, c, node, welcome(0, "rt-1"))
	nc.send(t, &roomwire.Frame{Frames: []roomwire.TickFrame{tick(1, roomwire.SeatInput{Seat: 1, Data: []byte("first")})}})
	f1 := recv(t, r.Frames(), "frame 1")
	nc.send(t, &roomwire.Frame{Frames: []roomwire.TickFrame{tick(2, roomwire.SeatInput{Seat: 1, Data: []byte("XXXXX")})}})
	recv(t, r.Frames(), "frame 2")
	if got := string(f1.Inputs[0].Data); got != "first" {
		t.Errorf("frame 1 input changed to %q after frame 2", got)
	}
}

func TestSendMessages(t *testing.T) {
	c, _, node, _ := setup(t, nil)
	r, nc := connect(t, c, node, welcome(0, "rt-1"))

	if err := r.SendCustom(0b10, true, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	cm := nc.recvType(t, roomwire.TypeCustom).(*roomwire.Custom)
	if cm.To != 0b10 || !cm.Reliable || string(cm.Data) != "hi" || cm.From != 0 {
		t.Errorf("CUSTOM %+v", cm)
	}
	if err := r.Ready(); err != nil {
		t.Fatal(err)
	}
	nc.recvType(t, roomwire.TypeReady)
	if err := r.PutSnapshot(9, []byte("state")); err != nil {
		t.Fatal(err)
	}
	sp := nc.recvType(t, roomwire.TypeSnapshotPut).(*roomwire.SnapshotPut)
	if sp.Frame != 9 || string(sp.Data) != "state" {
		t.Errorf("SNAPSHOT_PUT %+v", sp)
	}

	tests := []struct {
		name string
		send func() error
	}{
		{"input over cap", func() error { return r.SendInput(make([]byte, roomwire.MaxInputLen+1)) }},
		{"custom over cap", func() error { return r.SendCustom(0, true, make([]byte, roomwire.MaxCustomLen+1)) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.send(); !errors.Is(err, roomwire.ErrInvalid) {
				t.Errorf("got %v, want roomwire.ErrInvalid", err)
			}
		})
	}
}

func TestEvents(t *testing.T) {
	c, _, node, _ := setup(t, nil)
	r, nc := connect(t, c, node, welcome(0, "rt-1"))

	nc.send(t, &roomwire.Member{Seat: 1, Username: "bob", Kind: roomwire.MemberOffline, Reason: "network"})
	ev := nextEvent(t, r, EventMember)
	if ev.Seat != 1 || ev.MemberKind != roomwire.MemberOffline || ev.Reason != "network" || ev.Username != "bob" {
		t.Errorf("member event %+v", ev)
	}
	if m := r.State().Members; len(m) != 2 || m[1].Online {
		t.Errorf("members %+v, want bob offline", m)
	}
	nc.send(t, &roomwire.Member{Seat: 1, Username: "bob", Kind: roomwire.MemberLeft, Reason: "left"})
	nextEvent(t, r, EventMember)
	if m := r.State().Members; len(m) != 1 {
		t.Errorf("members %+v, want only alice", m)
	}

	nc.send(t, &roomwire.Custom{To: 1, From: 1, Reliable: false, Data: []byte("yo")})
	ev = nextEvent(t, r, EventCustom)
	if ev.Seat != 1 || ev.To != 1 || ev.Reliable || string(ev.Data) != "yo" {
		t.Errorf("custom event %+v", ev)
	}

	nc.send(t, &roomwire.RoomState{State: roomwire.StateEnding, Reason: "closed_by_server", Result: []byte(`{"winner":0}`)})
	ev = nextEvent(t, r, EventRoomState)
	if ev.State != roomwire.StateEnding || ev.Reason != "closed_by_server" || string(ev.Result) != `{"winner":0}` {
		t.Errorf("room state event %+v", ev)
	}
	if got := r.State().RoomState; got != roomwire.StateEnding {
		t.Errorf("RoomState %d, want %d", got, roomwire.StateEnding)
	}

	// Unknown and invalid messages are skipped; the connection goes on.
	nc.sendRaw([]byte{0x7E, 1, 2})
	nc.sendRaw([]byte{byte(roomwire.TypePong), 1})
	nc.send(t, &roomwire.Custom{Data: []byte("after")})
	if ev := nextEvent(t, r, EventCustom); string(ev.Data) != "after" {
		t.Errorf("custom after junk %q", ev.Data)
	}
	if got := r.Stats().InvalidMessages; got != 1 {
		t.Errorf("InvalidMessages %d, want 1 (unknown types do not count)", got)
	}
}

func TestRTTAndServerTime(t *testing.T) {
	c, _, node, clk := setup(t, nil)
	r, nc := connect(t, c, node, welcome(0, "rt-1"))

	rtts := []time.Duration{40, 10, 30, 20} // ms; median of all four is 25
	for i, d := range rtts {
		p := recv(t, nc.pings, "PING")
		for p.ClientMS != uint64(clk.Now().UnixMilli()) { // a PING from before the last Advance
			p = recv(t, nc.pings, "PING")
		}
		clk.Advance(d * time.Millisecond)
		serverMS := uint64(clk.Now().UnixMilli()) + 5000 // the node's clock runs 5 s ahead
		nc.send(t, &roomwire.Pong{ClientMS: p.ClientMS, ServerMS: serverMS - uint64(d/2)})
		// Wait until the client took this sample: the next PING reports it.
		want := median(scaleMS(rtts[:i+1]))
		for {
			q := recv(t, nc.pings, "PING")
			if time.Duration(q.RTTMS)*time.Millisecond == want.Truncate(time.Millisecond) && q.ClientMS == uint64(clk.Now().UnixMilli()) {
				break
			}
		}
	}
	if got, want := r.RTT(), 25*time.Millisecond; got != want {
		t.Errorf("RTT %v, want %v", got, want)
	}
	if got, want := r.ServerTime().Sub(clk.Now()), 5*time.Second; got != want {
		t.Errorf("server time offset %v, want %v", got, want)
	}
}

func scaleMS(ms []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ms))
	for i, d := range ms {
		out[i] = d * time.Millisecond
	}
	return out
}

func TestResume(t *testing.T) {
	c, _, node, _ := setup(t, nil)
	r, nc := connect(t, c, node, welcome(0, "rt-1"))
	nc.send(t, &roomwire.Frame{Frames: []roomwire.TickFrame{tick(1), tick(2)}})
	frameNumbers(t, r, 2)

	nc.kill()
	ev := nextEvent(t, r, EventDisconnected)
	if ev.Err == nil {
		t.Error("disconnected event without a cause")
	}
	nc2 := node.next()
	if nc2.hs.Kind != roomwire.KindResume || string(nc2.hs.Token) != "rt-1" || nc2.hs.Resume.LastFrame != 2 {
		t.Fatalf("handshake kind %d token %q last_frame %v, want RESUME rt-1 2", nc2.hs.Kind, nc2.hs.Token, nc2.hs.Resume)
	}
	w := welcome(5, "rt-2")
	nc2.send(t, w)
	nc2.send(t, &roomwire.FrameBatch{Frames: []roomwire.TickFrame{tick(3), tick(4), tick(5)}})
	if ev := nextEvent(t, r, EventResumed); ev.Rejoined {
		t.Error("resumed event says rejoined")
	}
	if got, want := frameNumbers(t, r, 3), []uint32{3, 4, 5}; !slices.Equal(got, want) {
		t.Fatalf("frames after resume %v, want %v", got, want)
	}

	// The next resume uses the newest token.
	nc2.kill()
	nc3 := node.next()
	if string(nc3.hs.Token) != "rt-2" || nc3.hs.Resume.LastFrame != 5 {
		t.Fatalf("second resume token %q last_frame %d, want rt-2 5", nc3.hs.Token, nc3.hs.Resume.LastFrame)
	}
	nc3.send(t, welcome(5, "rt-3"))
	nextEvent(t, r, EventResumed)
	if st := r.Stats(); st.Resumes != 2 || st.Disconnects != 2 || st.Connects != 3 {
		t.Errorf("stats %+v, want 2 resumes, 2 disconnects, 3 connects", st)
	}
}

func TestResumeRejectedRejoins(t *testing.T) {
	c, fc, node, _ := setup(t, nil)
	r, nc := connect(t, c, node, welcome(0, "rt-1"))
	nc.send(t, &roomwire.Frame{Frames: []roomwire.TickFrame{tick(1), tick(2), tick(3)}})
	frameNumbers(t, r, 3)

	nc.kill()
	nc2 := node.next()
	nc2.send(t, &roomwire.Error{Code: roomwire.CodeResumeRejected, Message: "no such seat"})
	nc3 := node.next()
	if nc3.hs.Kind != roomwire.KindHello || string(nc3.hs.Token) != "ticket-2" {
		t.Fatalf("after resume_rejected: kind %d token %q, want HELLO ticket-2", nc3.hs.Kind, nc3.hs.Token)
	}
	bodies := fc.joinBodies()
	if len(bodies) != 2 || bodies[1]["client_session_id"] != bodies[0]["client_session_id"] {
		t.Fatalf("C1 calls %v, want a second one with the same client_session_id", bodies)
	}
	nc3.send(t, welcome(10, "rt-9"))
	req := nc3.recvType(t, roomwire.TypeFrameReq).(*roomwire.FrameReq)
	if req.From != 4 || req.To != 10 {
		t.Fatalf("FRAME_REQ(%d, %d), want (4, 10)", req.From, req.To)
	}
	if ev := nextEvent(t, r, EventResumed); !ev.Rejoined {
		t.Error("resumed event does not say rejoined")
	}
	var batch []roomwire.TickFrame
	for n := uint32(4); n <= 10; n++ {
		batch = append(batch, tick(n))
	}
	nc3.send(t, &roomwire.FrameBatch{Frames: batch})
	if got := frameNumbers(t, r, 7); got[0] != 4 || got[6] != 10 {
		t.Fatalf("frames after rejoin %v, want 4..10", got)
	}
	if st := r.Stats(); st.Rejoins != 1 || st.Resumes != 0 {
		t.Errorf("stats %+v, want 1 rejoin and no resume", st)
	}
}

func TestSnapshotRestoreOnResume(t *testing.T) {
	c, _, node, _ := setup(t, nil)
	r, nc := connect(t, c, node, welcome(0, "rt-1"))
	nc.send(t, &roomwire.Frame{Frames: []roomwire.TickFrame{tick(1)}})
	frameNumbers(t, r, 1)
	nc.kill()
	nc2 := node.next()
	nc2.send(t, welcome(2000, "rt-2"))
	nc2.send(t, &roomwire.Snapshot{Frame: 1990, Data: []byte("state@1990")})
	nc2.send(t, &roomwire.FrameBatch{Frames: []roomwire.TickFrame{tick(1991), tick(1992)}})

	f := recv(t, r.Frames(), "restore")
	if !f.Restore || f.Number != 1990 || string(f.Snapshot) != "state@1990" {
		t.Fatalf("got frame %+v, want a restore at 1990", f)
	}
	if got := frameNumbers(t, r, 2); !slices.Equal(got, []uint32{1991, 1992}) {
		t.Fatalf("frames after restore %v", got)
	}
	if ev := nextEvent(t, r, EventSnapshot); ev.Frame != 1990 {
		t.Errorf("snapshot event frame %d", ev.Frame)
	}
	if st := r.Stats(); st.SnapshotRestores != 1 || st.Resumes != 1 {
		t.Errorf("stats %+v, want 1 snapshot restore and 1 resume", st)
	}
	if got := r.LastFrame(); got != 1992 {
		t.Errorf("LastFrame %d, want 1992", got)
	}
}

func TestSnapshotProvider(t *testing.T) {
	asked := make(chan uint32, 8)
	c, _, node, _ := setup(t, func(cfg *Config) {
		cfg.SnapshotInterval = 2
		cfg.SnapshotFunc = func(frame uint32) []byte {
			asked <- frame
			return []byte{byte(frame)}
		}
	})
	w := welcome(0, "rt-1")
	w.SnapshotSeat = 0
	r, nc := connect(t, c, node, w)
	nc.send(t, &roomwire.Frame{Frames: []roomwire.TickFrame{tick(1), tick(2), tick(3)}})
	nc.send(t, &roomwire.Frame{Frames: []roomwire.TickFrame{tick(2), tick(3), tick(4)}})
	var due []uint32
	for range 4 {
		if f := recv(t, r.Frames(), "frame"); f.SnapshotDue {
			due = append(due, f.Number)
		}
	}
	if !slices.Equal(due, []uint32{2, 4}) {
		t.Errorf("SnapshotDue on %v, want [2 4]", due)
	}
	for _, want := range []uint32{2, 4} {
		if got := recv(t, asked, "SnapshotFunc"); got != want {
			t.Errorf("SnapshotFunc(%d), want %d", got, want)
		}
		sp := nc.recvType(t, roomwire.TypeSnapshotPut).(*roomwire.SnapshotPut)
		if sp.Frame != want || !bytes.Equal(sp.Data, []byte{byte(want)}) {
			t.Errorf("SNAPSHOT_PUT %+v, want frame %d", sp, want)
		}
	}

}

func TestSnapshotSeatFollowsMembers(t *testing.T) {
	c, _, node, _ := setup(t, func(cfg *Config) { cfg.SnapshotInterval = 1 })
	w := welcome(0, "rt-1")
	w.Seat = 2
	w.SnapshotSeat = 1
	w.Members = []roomwire.MemberInfo{{Seat: 1, Username: "bob", Online: true}, {Seat: 2, Username: "alice", Online: true}}
	r, nc := connect(t, c, node, w)
	nc.send(t, &roomwire.Frame{Frames: []roomwire.TickFrame{tick(1)}})
	if f := recv(t, r.Frames(), "frame 1"); f.SnapshotDue {
		t.Error("frame 1 due while seat 1 provides snapshots")
	}
	nc.send(t, &roomwire.Member{Seat: 1, Username: "bob", Kind: roomwire.MemberOffline, Reason: "timeout"})
	nextEvent(t, r, EventMember)
	if got := r.State().SnapshotSeat; got != 2 {
		t.Fatalf("SnapshotSeat %d after seat 1 went offline, want 2", got)
	}
	nc.send(t, &roomwire.Frame{Frames: []roomwire.TickFrame{tick(2)}})
	if f := recv(t, r.Frames(), "frame 2"); !f.SnapshotDue {
		t.Error("frame 2 not due after this seat became the provider")
	}
}

func TestTerminalErrorsDoNotReconnect(t *testing.T) {
	tests := []struct {
		code   uint8
		target error
	}{
		{roomwire.CodeKicked, ErrKicked},
		{roomwire.CodeRoomClosed, ErrRoomClosed},
		{roomwire.CodeNodeDraining, ErrNodeDraining},
		{roomwire.CodeSeatTaken, ErrSeatTaken},
	}
	for _, tc := range tests {
		t.Run(roomwire.CodeName(tc.code), func(t *testing.T) {
			c, _, node, _ := setup(t, nil)
			r, nc := connect(t, c, node, welcome(0, "rt-1"))
			nc.send(t, &roomwire.Error{Code: tc.code, Reason: "because", Result: []byte(`{"r":1}`)})
			ev := nextEvent(t, r, EventClosed)
			if !errors.Is(ev.Err, tc.target) {
				t.Fatalf("closed with %v, want %v", ev.Err, tc.target)
			}
			var we *roomwire.Error
			if !errors.As(ev.Err, &we) || we.Code != tc.code {
				t.Errorf("errors.As *roomwire.Error: %v", ev.Err)
			}
			if ev.Reason != "because" || string(ev.Result) != `{"r":1}` {
				t.Errorf("closed event reason %q result %q", ev.Reason, ev.Result)
			}
			if _, ok := <-r.Events(); ok {
				t.Error("Events not closed after EventClosed")
			}
			if _, ok := <-r.Frames(); ok {
				t.Error("Frames not closed")
			}
			<-r.Done()
			if !errors.Is(r.Err(), tc.target) {
				t.Errorf("Err %v, want %v", r.Err(), tc.target)
			}
			if st := r.Stats(); st.ReconnectAttempts != 0 || st.Disconnects != 0 {
				t.Errorf("stats %+v, want no reconnection", st)
			}
			node.expectNoConn()
			if err := r.SendInput(nil); !errors.Is(err, ErrClosed) {
				t.Errorf("SendInput after the end: %v, want ErrClosed", err)
			}
		})
	}
}

func TestRateLimitedResumesThenEnds(t *testing.T) {
	c, fc, node, _ := setup(t, nil)
	r, nc := connect(t, c, node, welcome(0, "rt-1"))
	fc.mu.Lock()
	fc.joinErrors = []apiErrorJSON{{Status: 409, Code: "conflict", Reason: "room_not_open"}}
	fc.mu.Unlock()
	nc.send(t, &roomwire.Error{Code: roomwire.CodeRateLimited})
	nextEvent(t, r, EventDisconnected)
	nc2 := node.next()
	if nc2.hs.Kind != roomwire.KindResume {
		t.Fatalf("kind %d, want RESUME after rate_limited", nc2.hs.Kind)
	}
	nc2.send(t, &roomwire.Error{Code: roomwire.CodeResumeRejected})
	ev := nextEvent(t, r, EventClosed)
	if !errors.Is(ev.Err, ErrRoomNotOpen) {
		t.Fatalf("closed with %v, want ErrRoomNotOpen from the re-join", ev.Err)
	}
}

func TestSilenceDisconnects(t *testing.T) {
	c, _, node, clk := setup(t, nil)
	r, _ := connect(t, c, node, welcome(0, "rt-1"))
	clk.Advance(DefaultSilenceTimeout)
	ev := nextEvent(t, r, EventDisconnected)
	if !errors.Is(ev.Err, ErrSilence) {
		t.Fatalf("disconnected with %v, want ErrSilence", ev.Err)
	}
	nc2 := node.next()
	if nc2.hs.Kind != roomwire.KindResume {
		t.Fatalf("kind %d, want RESUME", nc2.hs.Kind)
	}
	nc2.send(t, welcome(0, "rt-2"))
	nextEvent(t, r, EventResumed)
}

func TestReconnectWindowExpires(t *testing.T) {
	var clk *testClock
	var attempts []int
	c, _, node, clk0 := setup(t, func(cfg *Config) {
		cfg.Backoff = func(n int) time.Duration {
			attempts = append(attempts, n)
			clk.Advance(DefaultBackoff(n)) // the waits pass on the test clock
			return 0
		}
	})
	clk = clk0
	r, nc := connect(t, c, node, welcome(0, "rt-1"))
	node.ln.Close() // nothing to reconnect to
	nc.kill()
	ev := nextEvent(t, r, EventClosed)
	if !errors.Is(ev.Err, ErrReconnectWindowExpired) {
		t.Fatalf("closed with %v, want ErrReconnectWindowExpired", ev.Err)
	}
	// Waits 0, 1, 2, 4, 4, … s: attempts start at 0, 1, 3, 7, 11, …, 59 s
	// into the 60 s window, so 17 attempts; the 18th would start at 63 s.
	if st := r.Stats(); st.ReconnectAttempts != 17 {
		t.Errorf("ReconnectAttempts %d, want 17", st.ReconnectAttempts)
	}
	if len(attempts) != 18 {
		t.Errorf("Backoff called %d times, want 18", len(attempts))
	}
}

func TestLeave(t *testing.T) {
	c, fc, node, _ := setup(t, nil)
	r, nc := connect(t, c, node, welcome(0, "rt-1"))
	if err := r.Leave(t.Context()); err != nil {
		t.Fatal(err)
	}
	nc.recvType(t, roomwire.TypeLeave)
	<-nc.closed
	fc.mu.Lock()
	leaves := fc.leaves
	fc.mu.Unlock()
	if leaves != 1 {
		t.Errorf("C2 calls %d, want 1", leaves)
	}
	if !errors.Is(r.Err(), ErrClosed) {
		t.Errorf("Err %v, want ErrClosed", r.Err())
	}
	if err := r.SendInput(nil); !errors.Is(err, ErrClosed) {
		t.Errorf("SendInput after Leave: %v", err)
	}
	node.expectNoConn()
}

func TestCloseWhileReconnecting(t *testing.T) {
	c, _, node, _ := setup(t, func(cfg *Config) {
		cfg.Backoff = func(int) time.Duration { return 30 * time.Second }
	})
	r, nc := connect(t, c, node, welcome(0, "rt-1"))
	nc.kill()
	nextEvent(t, r, EventDisconnected)
	// The first wait is 30 s; Close must not wait for it.
	if err := r.SendInput(nil); !errors.Is(err, ErrNotConnected) {
		t.Errorf("SendInput while reconnecting: %v, want ErrNotConnected", err)
	}
	r.Close()
	if !errors.Is(r.Err(), ErrClosed) {
		t.Errorf("Err %v, want ErrClosed", r.Err())
	}
}

func TestCloseWithFullChannels(t *testing.T) {
	c, _, node, _ := setup(t, func(cfg *Config) { cfg.FrameBuffer = 1; cfg.EventBuffer = 1 })
	r, nc := connect(t, c, node, welcome(0, "rt-1"))
	for n := uint32(1); n <= 5; n++ {
		nc.send(t, &roomwire.Frame{Frames: []roomwire.TickFrame{tick(n)}})
		nc.send(t, &roomwire.Custom{Data: []byte{byte(n)}})
	}
	// Nobody reads: the reader is stuck on a full channel. Close still ends
	// everything (goleak checks the goroutines).
	r.Close()
}

func TestConnectHandshakeErrors(t *testing.T) {
	tests := []struct {
		name   string
		code   uint8
		target error
	}{
		{"seat taken", roomwire.CodeSeatTaken, ErrSeatTaken},
		{"room full", roomwire.CodeRoomFull, ErrRoomFull},
		{"room not found", roomwire.CodeRoomNotFound, ErrRoomNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, fc, node, _ := setup(t, nil)
			errc := make(chan error, 1)
			go func() {
				_, err := c.Connect(t.Context(), "r1", JoinOptions{})
				errc <- err
			}()
			node.next().send(t, &roomwire.Error{Code: tc.code})
			if err := recv(t, errc, "Connect"); !errors.Is(err, tc.target) {
				t.Fatalf("Connect: %v, want %v", err, tc.target)
			}
			if n := len(fc.joinBodies()); n != 1 {
				t.Errorf("C1 calls %d, want 1", n)
			}
		})
	}
}

func TestConnectRenewsExpiredTicketOnce(t *testing.T) {
	c, fc, node, _ := setup(t, nil)
	type result struct {
		r   *Room
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := c.Connect(t.Context(), "r1", JoinOptions{})
		done <- result{r, err}
	}()
	node.next().send(t, &roomwire.Error{Code: roomwire.CodeTicketExpired})
	nc := node.next()
	if string(nc.hs.Token) != "ticket-2" {
		t.Fatalf("second HELLO token %q, want ticket-2", nc.hs.Token)
	}
	nc.send(t, welcome(0, "rt"))
	res := recv(t, done, "Connect")
	if res.err != nil {
		t.Fatal(res.err)
	}
	defer res.r.Close()
	b := fc.joinBodies()
	if len(b) != 2 || b[0]["client_session_id"] != b[1]["client_session_id"] || len(b[0]["client_session_id"]) < 8 {
		t.Errorf("C1 bodies %v, want two with the same generated client_session_id", b)
	}
}

func TestSendInputAllocatesNothing(t *testing.T) {
	// A Room and connection without sockets or goroutines: the measurement
	// must not see the allocations of a fake node in the same process.
	c := &wsConn{maxQueue: 1 << 20, wake: make(chan struct{}, 1), doneCh: make(chan struct{})}
	r := &Room{ctx: t.Context(), conn: c}
	r.lastFrame.Store(41)
	data := []byte("move")
	allocs := testing.AllocsPerRun(100, func() {
		c.mu.Lock()
		c.pending = c.pending[:0]
		c.mu.Unlock()
		if err := r.SendInput(data); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("SendInput allocates %v times, want 0", allocs)
	}
	m, err := roomwire.Decode(unmaskFrame(t, c.pending))
	if err != nil {
		t.Fatal(err)
	}
	if in := m.(*roomwire.Input); in.AckFrame != 41 || string(in.Data) != "move" {
		t.Errorf("queued %+v, want INPUT ack 41 \"move\"", in)
	}
}
