package rooms

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/internal/impair"
	"github.com/switchboardgg/switchboard/internal/sealed"
	"github.com/switchboardgg/switchboard/protocol/roomudp"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// setupUDP is setup with a fake UDP node that C1 points at.
func setupUDP(t *testing.T, mutate func(*Config)) (*Client, *fakeControl, *fakeNode, *fakeUDPNode, *testClock) {
	t.Helper()
	c, fc, node, clk := setup(t, mutate)
	un := newFakeUDPNode(t)
	fc.mu.Lock()
	fc.udp = un.connectFields()
	fc.mu.Unlock()
	return c, fc, node, un, clk
}

func connectUDP(t *testing.T, c *Client) *Room {
	t.Helper()
	r, err := c.Connect(t.Context(), "rank-8812", JoinOptions{Ticket: "gtk_1", ClientSessionID: "join-6f2a01b7-468e"})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestUDPConnectFramesAndSends(t *testing.T) {
	c, fc, node, un, _ := setupUDP(t, nil)
	r := connectUDP(t, c)
	s := un.next()
	node.expectNoConn()

	if s.hs.Kind != roomwire.KindHello || string(s.hs.Token) != "ticket-1" {
		t.Errorf("handshake kind %d token %q, want HELLO with ticket-1", s.hs.Kind, s.hs.Token)
	}
	if got := fc.joinBodies()[0]["transport"]; got != "udp" {
		t.Errorf("C1 transport %q, want udp", got)
	}
	if got := r.Transport(); got != TransportUDP {
		t.Errorf("Transport %q, want udp", got)
	}
	// The first PING goes on KCP: the node waits for a session datagram.
	if m := s.recvType(t, roomwire.TypePing); m.unreliable {
		t.Error("first PING unreliable, want it on KCP")
	}

	// FRAMEs unreliable (2 lost), the gap filled by FRAME_BATCH on KCP.
	in := func(seat uint8, s string) roomwire.SeatInput { return roomwire.SeatInput{Seat: seat, Data: []byte(s)} }
	s.sendUnreliable(t, &roomwire.Frame{Frames: []roomwire.TickFrame{tick(1, in(1, "x"))}})
	s.sendUnreliable(t, &roomwire.Frame{Frames: []roomwire.TickFrame{tick(3), tick(4), tick(5)}})
	if got := frameNumbers(t, r, 1); !slices.Equal(got, []uint32{1}) {
		t.Fatalf("frames %v, want [1]", got)
	}
	req := s.recvType(t, roomwire.TypeFrameReq)
	if fr := req.m.(*roomwire.FrameReq); req.unreliable || fr.From != 2 {
		t.Fatalf("FRAME_REQ %+v unreliable=%v, want from 2 on KCP", fr, req.unreliable)
	}
	s.sendReliable(t, &roomwire.FrameBatch{Frames: []roomwire.TickFrame{tick(2), tick(3), tick(4)}})
	if got, want := frameNumbers(t, r, 4), []uint32{2, 3, 4, 5}; !slices.Equal(got, want) {
		t.Fatalf("frames %v, want %v", got, want)
	}

	// INPUT on the INPUTS channel, CUSTOM unreliable as a single
	// datagram, reliable on KCP.
	if err := r.SendInput([]byte("go")); err != nil {
		t.Fatal(err)
	}
	m := s.recvType(t, roomwire.TypeInput)
	if inp := m.m.(*roomwire.Input); !m.unreliable || inp.AckFrame != 5 || string(inp.Data) != "go" {
		t.Errorf("INPUT %+v unreliable=%v, want ack 5 \"go\" on the INPUTS channel", inp, m.unreliable)
	}
	if err := r.SendCustom(2, false, []byte("u")); err != nil {
		t.Fatal(err)
	}
	if m := s.recvType(t, roomwire.TypeCustom); !m.unreliable {
		t.Error("CUSTOM reliable=false went on KCP")
	}
	if err := r.SendCustom(2, true, []byte("r")); err != nil {
		t.Fatal(err)
	}
	if m := s.recvType(t, roomwire.TypeCustom); m.unreliable {
		t.Error("CUSTOM reliable=true went unreliable")
	}

	// Events over either channel.
	s.sendReliable(t, &roomwire.Member{Seat: 1, Username: "bob", Kind: roomwire.MemberOffline})
	if ev := nextEvent(t, r, EventMember); ev.Seat != 1 || ev.MemberKind != roomwire.MemberOffline {
		t.Errorf("member event %+v", ev)
	}
	s.sendUnreliable(t, &roomwire.Custom{From: 1, To: 1, Data: []byte("hi")})
	if ev := nextEvent(t, r, EventCustom); string(ev.Data) != "hi" {
		t.Errorf("custom event %+v", ev)
	}
}

func TestUDPLeave(t *testing.T) {
	c, fc, _, un, _ := setupUDP(t, nil)
	r := connectUDP(t, c)
	s := un.next()
	if err := r.Leave(t.Context()); err != nil {
		t.Fatal(err)
	}
	if m := s.recvType(t, roomwire.TypeLeave); m.unreliable {
		t.Error("LEAVE unreliable, want KCP")
	}
	<-r.Done()
	if !errors.Is(r.Err(), ErrClosed) {
		t.Errorf("Err %v, want ErrClosed", r.Err())
	}
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if fc.leaves != 1 {
		t.Errorf("C2 calls %d, want 1", fc.leaves)
	}
}

func TestUDPHandshakeError(t *testing.T) {
	c, _, _, un, _ := setupUDP(t, nil)
	un.setAnswer(func(roomwire.Handshake) roomwire.Message {
		return &roomwire.Error{Code: roomwire.CodeRoomFull, Message: "full"}
	})
	_, err := c.Connect(t.Context(), "rank-8812", JoinOptions{})
	if !errors.Is(err, ErrRoomFull) {
		t.Fatalf("Connect: %v, want ErrRoomFull", err)
	}
}

// blackHole is a UDP socket that reads and never answers: a path that
// blocks UDP.
func blackHole(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	return pc.LocalAddr().String()
}

func TestUDPNoAnswerFallsBackToWebSocket(t *testing.T) {
	c, fc, node, un, _ := setupUDP(t, func(cfg *Config) { cfg.UDPFallback = 300 * time.Millisecond })
	fc.mu.Lock()
	fc.udp["udp"] = blackHole(t)
	fc.mu.Unlock()
	r, nc := connect(t, c, node, welcome(0, "rt-1"))
	if string(nc.hs.Token) != "ticket-1" {
		t.Errorf("WebSocket HELLO token %q, want the same ticket-1", nc.hs.Token)
	}
	if r.Transport() != TransportWS || r.Stats().UDPFallbacks != 1 {
		t.Errorf("transport %q fallbacks %d, want ws after 1", r.Transport(), r.Stats().UDPFallbacks)
	}
	_ = un
}

func TestUDPOnly(t *testing.T) {
	t.Run("not offered", func(t *testing.T) {
		c, _, _, _ := setup(t, func(cfg *Config) { cfg.Transport = TransportUDP })
		_, err := c.Connect(t.Context(), "rank-8812", JoinOptions{})
		if !errors.Is(err, ErrUDPUnavailable) {
			t.Fatalf("Connect: %v, want ErrUDPUnavailable", err)
		}
	})
	t.Run("no answer", func(t *testing.T) {
		c, fc, node, _, _ := setupUDP(t, func(cfg *Config) {
			cfg.Transport = TransportUDP
			cfg.HandshakeTimeout = 300 * time.Millisecond
		})
		fc.mu.Lock()
		fc.udp["udp"] = blackHole(t)
		fc.mu.Unlock()
		_, err := c.Connect(t.Context(), "rank-8812", JoinOptions{})
		if !errors.Is(err, ErrUDPUnavailable) {
			t.Fatalf("Connect: %v, want ErrUDPUnavailable", err)
		}
		node.expectNoConn()
	})
	t.Run("context ends first", func(t *testing.T) {
		// The caller's deadline comes before HandshakeTimeout: the error
		// still says that UDP got no answer, and from where.
		c, fc, node, _, _ := setupUDP(t, func(cfg *Config) { cfg.Transport = TransportUDP })
		hole := blackHole(t)
		fc.mu.Lock()
		fc.udp["udp"] = hole
		fc.mu.Unlock()
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		_, err := c.Connect(ctx, "rank-8812", JoinOptions{})
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "udp handshake with "+hole+": no answer") {
			t.Fatalf("Connect: %v, want a deadline naming the UDP address %s that gave no answer", err, hole)
		}
		node.expectNoConn()
	})
	t.Run("ws only", func(t *testing.T) {
		c, fc, node, un, _ := setupUDP(t, func(cfg *Config) { cfg.Transport = TransportWS })
		r, _ := connect(t, c, node, welcome(0, "rt-1"))
		if r.Transport() != TransportWS || fc.joinBodies()[0]["transport"] != "ws" {
			t.Errorf("transport %q, C1 asked %q; want ws both", r.Transport(), fc.joinBodies()[0]["transport"])
		}
		select {
		case <-un.sessions:
			t.Error("a UDP session with Transport ws")
		default:
		}
	})
}

func TestUDPResumeAfterSilence(t *testing.T) {
	c, _, _, un, clk := setupUDP(t, nil)
	r := connectUDP(t, c)
	s := un.next()
	s.recvType(t, roomwire.TypePing)
	s.sendUnreliable(t, &roomwire.Frame{Frames: []roomwire.TickFrame{tick(1)}})
	frameNumbers(t, r, 1)

	s.stop() // the node goes silent on this session
	clk.Advance(DefaultSilenceTimeout + time.Second)
	nextEvent(t, r, EventDisconnected)
	s2 := un.next()
	if s2.hs.Kind != roomwire.KindResume || string(s2.hs.Token) != "rt-udp" || s2.hs.Resume.LastFrame != 1 {
		t.Fatalf("handshake kind %d token %q last %d, want RESUME rt-udp from 1", s2.hs.Kind, s2.hs.Token, s2.hs.Resume.LastFrame)
	}
	nextEvent(t, r, EventResumed)
	if s2.conv == s.conv || r.Transport() != TransportUDP {
		t.Errorf("conv %d after %d, transport %q", s2.conv, s.conv, r.Transport())
	}
	s2.sendReliable(t, &roomwire.FrameBatch{Frames: []roomwire.TickFrame{tick(2), tick(3)}})
	if got := frameNumbers(t, r, 2); !slices.Equal(got, []uint32{2, 3}) {
		t.Fatalf("frames %v, want [2 3]", got)
	}
}

// impairFront serves an impair proxy in front of the fake UDP node.
func impairFront(t *testing.T, un *fakeUDPNode, cfg impair.Config) (*impair.Proxy, netip.AddrPort) {
	t.Helper()
	cfg.Target = un.pc.LocalAddr().String()
	cfg.Logger = slog.New(slog.DiscardHandler)
	px, err := impair.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { defer close(served); _ = px.Serve(uc) }()
	t.Cleanup(func() { px.Close(); <-served })
	return px, uc.LocalAddr().(*net.UDPAddr).AddrPort()
}

func TestUDPSharedSocket(t *testing.T) {
	sock, err := NewUDPSocket(UDPSocketConfig{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	un := newFakeUDPNode(t)
	var rs []*Room
	var ss []*udpSession
	for range 3 {
		node := newFakeNode(t)
		fc := newFakeControl(t, node.url)
		fc.udp = un.connectFields()
		cfg := testConfig(t, newTestClock())
		cfg.UDPSocket = sock
		c, err := Login(t.Context(), fc.srv.URL, "alice", "auth", cfg)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, connectUDP(t, c))
		ss = append(ss, un.next())
	}
	for i, s := range ss {
		s.sendUnreliable(t, &roomwire.Frame{Frames: []roomwire.TickFrame{tick(uint32(10 * (i + 1)))}})
	}
	for i, r := range rs {
		// The WELCOME said frame 0: frames from 1 are requested on KCP.
		req := ss[i].recvType(t, roomwire.TypeFrameReq).m.(*roomwire.FrameReq)
		if want := uint32(10*(i+1)) - 1; req.From != 1 || req.To != want {
			t.Errorf("room %d: FRAME_REQ(%d, %d), want (1, %d): datagrams reached the wrong session", i, req.From, req.To, want)
		}
		if r.Transport() != TransportUDP {
			t.Errorf("room %d on %s", i, r.Transport())
		}
	}
	for _, r := range rs {
		r.Close()
	}
}

func TestUDPForgedAndReplayedDatagramsDropped(t *testing.T) {
	c, _, _, un, _ := setupUDP(t, nil)
	r := connectUDP(t, c)
	s := un.next()
	uc := r.conn.(*udpConn) // the room is connected: no reconnection runs
	before := uc.sock.Dropped()

	// A replay of a real datagram, a forgery under the session's conv, and
	// garbage: each dropped, none delivered.
	b, _ := roomwire.Append(nil, &roomwire.Frame{Frames: []roomwire.TickFrame{tick(1)}})
	s.mu.Lock()
	real, _ := s.sealer.Seal(nil, append([]byte{roomudp.ChannelMessage}, b...))
	s.mu.Unlock()
	to := uc.sock.LocalAddr().(*net.UDPAddr).AddrPort()
	to = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), to.Port())
	forged := append([]byte(nil), real...)
	forged[len(forged)-1] ^= 1
	forged[5+7]++ // a fresh sequence number, so the window does not catch it first
	for _, d := range [][]byte{real, real, forged, []byte("junk")} {
		if _, err := un.pc.WriteToUDPAddrPort(d, to); err != nil {
			t.Fatal(err)
		}
	}
	if got := frameNumbers(t, r, 1); got[0] != 1 {
		t.Fatalf("frames %v", got)
	}
	s.sendUnreliable(t, &roomwire.Frame{Frames: []roomwire.TickFrame{tick(1), tick(2)}})
	if got := frameNumbers(t, r, 1); got[0] != 2 {
		t.Fatalf("frame %v after the forgeries, want 2", got)
	}
	if got := uc.sock.Dropped() - before; got != 3 {
		t.Errorf("dropped %d datagrams, want 3 (replay, forgery, junk)", got)
	}
}

func TestUDPRebindAndLoss(t *testing.T) {
	c, _, _, un, clk := setupUDP(t, func(cfg *Config) { cfg.FrameBuffer = 512 })
	loss := impair.Faults{Loss: 0.1, Reorder: 0.1, ReorderDelay: 5 * time.Millisecond}
	px, front := impairFront(t, un, impair.Config{Seed: 1, Up: loss, Down: loss})
	sock, err := NewUDPSocket(UDPSocketConfig{
		Logger:   slog.New(slog.DiscardHandler),
		Redirect: func(netip.AddrPort) netip.AddrPort { return front },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	c.cfg.UDPSocket = sock
	r := connectUDP(t, c)
	s := un.next()
	// 10 % loss each way: frames sent unreliable three at a time, as the
	// node does; the gaps that remain are filled on KCP, as the node does.
	in := func(k uint32) roomwire.SeatInput { return roomwire.SeatInput{Seat: 1, Data: []byte{byte(k)}} }
	var sent atomic.Uint32
	inputs := make(chan struct{}, 1)
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		for {
			var m udpMsg
			select {
			case m = <-s.in:
			case <-r.Done():
				return
			}
			switch m := m.m.(type) {
			case *roomwire.FrameReq:
				var batch []roomwire.TickFrame
				for k := m.From; k <= min(m.To, sent.Load()); k++ {
					batch = append(batch, tick(k, in(k)))
				}
				if len(batch) > 0 {
					s.sendReliable(t, &roomwire.FrameBatch{Frames: batch})
				}
			case *roomwire.Input:
				select {
				case inputs <- struct{}{}:
				default:
				}
			}
		}
	}()
	serve := func(from, to uint32) {
		for n := from; n <= to; n++ {
			var fs []roomwire.TickFrame
			for k := max(from, n-2); k <= n; k++ {
				fs = append(fs, tick(k, in(k)))
			}
			sent.Store(n)
			s.sendUnreliable(t, &roomwire.Frame{Frames: fs})
			time.Sleep(time.Millisecond)
		}
	}
	serve(1, 100)
	if err := px.Rebind(); err != nil {
		t.Fatal(err)
	}
	serve(101, 200)
	// The last frames may all be lost: a FRAME of the next three ends it,
	// sent until the client has them (as the node's ticks would).
	for i := 0; ; i++ {
		sent.Store(203)
		s.sendUnreliable(t, &roomwire.Frame{Frames: []roomwire.TickFrame{tick(201, in(201)), tick(202, in(202)), tick(203, in(203))}})
		if r.LastFrame() >= 201 || i > 1000 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	got := frameNumbers(t, r, 201)
	for i, n := range got {
		if n != uint32(i+1) {
			t.Fatalf("frame %d is %d: frames not gapless and in order", i+1, n)
		}
	}
	// The client's next datagrams come from the new address, and the node
	// answers there: INPUT still arrives.
	// INPUT goes unreliable, repeated on the node's datagrams until a FRAME
	// acknowledges it; the proxy loses some, so keep ticking as the node
	// would until one arrives.
	if err := r.SendInput([]byte("after")); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for got := false; !got; {
		// The client repeats unacknowledged inputs on the node's datagrams
		// once udpInputResend has passed on its clock (the test clock here).
		clk.Advance(udpInputResend)
		s.sendUnreliable(t, &roomwire.Frame{Frames: []roomwire.TickFrame{tick(201, in(201)), tick(202, in(202)), tick(203, in(203))}})
		select {
		case <-inputs:
			got = true
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatal("INPUT after the rebind: nothing after 10s")
		}
	}

	if st := px.Stats(); st.Rebinds != 1 || st.Up.Lost == 0 || st.Down.Lost == 0 {
		t.Errorf("proxy stats %+v: want a rebind and losses both ways", st)
	}
	if r.Stats().Disconnects != 0 {
		t.Errorf("%d disconnects across the rebind", r.Stats().Disconnects)
	}
	r.Close()
	<-answered
}

// TestUDPHotPathsAllocateNothing: receiving a FRAME datagram (open in
// place, read the acknowledgement, queue for the reader) and sealing one
// (PING unreliable; INPUT with the 7 before it) allocate nothing in
// steady state. A connection without goroutines: the
// measurement must not see a fake node's allocations.
func TestUDPHotPathsAllocateNothing(t *testing.T) {
	var key [32]byte
	s := &UDPSocket{maxQ: 1 << 20, wake: make(chan struct{}, 1)}
	seal, _ := sealed.NewSealer(key[:], 7)
	open, _ := sealed.NewOpener(key[:], 7)
	c := &udpConn{sock: s, conv: 7, sealer: seal, opener: open, mtu: roomudp.DefaultMTU, now: time.Now,
		wake: make(chan struct{}, 1), doneCh: make(chan struct{})}
	c.confirm.Store(true)
	node, _ := sealed.NewSealer(key[:], 7)
	frame, _ := roomwire.Append(nil, &roomwire.Frame{Frames: []roomwire.TickFrame{tick(1), tick(2), tick(3, roomwire.SeatInput{Seat: 1, Data: []byte("move")})}})
	var dgs [][]byte
	for range 102 {
		d, _ := node.Seal(nil, roomudp.AppendFrame([]byte{roomudp.ChannelFrame}, 1, frame))
		dgs = append(dgs, d)
	}
	buf := make([]byte, 0, 2048)
	i := 0
	allocs := testing.AllocsPerRun(100, func() {
		d := append(buf[:0], dgs[i]...) // input opens in place, as in the read buffer
		i++
		if !c.input(d) {
			t.Fatal("datagram refused")
		}
		c.inMu.Lock() // what the reader does
		c.free = append(c.free, c.in...)
		c.in = c.in[:0]
		c.inMu.Unlock()
	})
	if allocs != 0 {
		t.Errorf("receiving an unreliable datagram allocates %v times, want 0", allocs)
	}
	// sending checks that send allocates nothing, emptying the socket's
	// record of what went after each call.
	sending := func(what string, send func() error) {
		t.Helper()
		allocs := testing.AllocsPerRun(100, func() {
			if err := send(); err != nil {
				t.Fatal(err)
			}
			s.mu.Lock()
			s.out, s.outMsgs = s.out[:0], s.outMsgs[:0]
			s.mu.Unlock()
		})
		if allocs != 0 {
			t.Errorf("sending %s allocates %v times, want 0", what, allocs)
		}
	}
	sending("PING unreliable", func() error { return c.sendPing(1, 2) })
	data := []byte("move")
	for range 3 { // grow the INPUTS buffer
		_ = c.sendInput(1, data)
	}
	sending("INPUT with its repeats", func() error { return c.sendInput(1, data) })
	// Under loss each INPUT also (re)arms the repeat timer.
	c.lossAt.Store(time.Now().UnixNano())
	_ = c.sendInput(1, data) // creates the timer
	sending("INPUT under loss", func() error { return c.sendInput(1, data) })
	c.closing.Store(true) // the timer's last run sends nothing
}

// TestUDPInputsRepeatedUntilAcknowledged: each INPUTS datagram repeats
// the inputs no FRAME has acknowledged (at most 8, the newest); a FRAME's
// acknowledgement trims them; unacknowledged inputs go again when a
// datagram arrives and none went for 20 ms, and not once acknowledged.
func TestUDPInputsRepeatedUntilAcknowledged(t *testing.T) {
	c, _, _, un, clk := setupUDP(t, nil)
	r := connectUDP(t, c)
	s := un.next()
	s.recvType(t, roomwire.TypePing)
	n := uint32(0)
	frame := func(ack uint32) { // the next frame, acknowledging ack
		n++
		s.sendFrame(t, ack, &roomwire.Frame{Frames: []roomwire.TickFrame{tick(n)}})
		if got := frameNumbers(t, r, 1); !slices.Equal(got, []uint32{n}) {
			t.Fatalf("frames %v, want [%d]", got, n)
		}
	}
	frame(0) // the client has now heard the node: INPUTs go unreliable
	send := func(d string) {
		t.Helper()
		if err := r.SendInput([]byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	// The clock moves only when told: nothing is resent unless it does.
	expect := func(first, count uint32) {
		t.Helper()
		if got := recv(t, s.inputs, "INPUTS datagram"); got != [2]uint32{first, count} {
			t.Fatalf("INPUTS (first, count) %v, want (%d, %d)", got, first, count)
		}
	}
	send("a")
	expect(1, 1)
	send("b")
	expect(1, 2)
	send("c")
	expect(1, 3)
	frame(2)
	send("d")
	expect(3, 2)
	for _, d := range []string{"a", "b", "c", "d"} {
		m := s.recvType(t, roomwire.TypeInput)
		if got := string(m.m.(*roomwire.Input).Data); got != d {
			t.Fatalf("input %q, want %q", got, d)
		}
	}

	// The game stops sending: the next datagram from the node, 20 ms
	// after the last INPUTS, brings 3 and 4 again; once acknowledged,
	// nothing.
	frame(3)
	clk.Advance(udpInputResend)
	frame(3)
	expect(4, 1)
	frame(3) // just resent: not again
	frame(4)
	clk.Advance(udpInputResend)
	frame(4)
	select {
	case got := <-s.inputs:
		t.Fatalf("INPUTS %v sent with every input acknowledged", got)
	case <-time.After(100 * time.Millisecond):
	}

	// Ten inputs without an acknowledgement: the newest 8 at most.
	for i := range uint32(10) {
		send(string(rune('e' + i)))
		expect(5+max(i, 7)-7, min(i+1, 8))
	}
}

// TestUDPInputsRepeatedUnderLoss: once the client has seen a gap in the
// node's datagram sequence numbers, each INPUTS datagram goes a second
// time udpInputRepeat later; the node takes each input once; after
// udpLossMemory without a gap, once again.
func TestUDPInputsRepeatedUnderLoss(t *testing.T) {
	// The test clock jumps udpLossMemory below; that must not read as the
	// node's silence (5 s too by default), or the watchdog reconnects.
	c, _, _, un, clk := setupUDP(t, func(cfg *Config) { cfg.SilenceTimeout = 10 * udpLossMemory })
	r := connectUDP(t, c)
	s := un.next()
	s.recvType(t, roomwire.TypePing)
	n := uint32(0)
	frame := func(ack uint32) {
		t.Helper()
		n++
		s.sendFrame(t, ack, &roomwire.Frame{Frames: []roomwire.TickFrame{tick(n)}})
		if got := frameNumbers(t, r, 1); !slices.Equal(got, []uint32{n}) {
			t.Fatalf("frames %v, want [%d]", got, n)
		}
	}
	send := func(d string) {
		t.Helper()
		if err := r.SendInput([]byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(first, count uint32) {
		t.Helper()
		if got := recv(t, s.inputs, "INPUTS datagram"); got != [2]uint32{first, count} {
			t.Fatalf("INPUTS (first, count) %v, want (%d, %d)", got, first, count)
		}
	}
	none := func(why string) {
		t.Helper()
		select {
		case got := <-s.inputs:
			t.Fatalf("INPUTS %v sent again %s", got, why)
		case <-time.After(50 * time.Millisecond): // over 10 × udpInputRepeat
		}
	}
	frame(0) // the client has heard the node: INPUTs go unreliable
	send("a")
	expect(1, 1)
	none("without loss")

	s.lose() // the node's next datagram is lost on the way
	frame(0)
	send("b")
	expect(1, 2)
	expect(1, 2) // the repeat, udpInputRepeat later
	frame(2)
	send("c")
	expect(3, 1)
	expect(3, 1)
	for _, d := range []string{"a", "b", "c"} {
		if got := string(s.recvType(t, roomwire.TypeInput).m.(*roomwire.Input).Data); got != d {
			t.Fatalf("the node took input %q, want %q: each once, in order", got, d)
		}
	}

	clk.Advance(udpLossMemory) // no gap for as long: no repeats
	frame(3)
	send("d")
	expect(4, 1)
	none("udpLossMemory after the last gap")
}

// TestUDPRepeatBeatsLoss: through 30 % loss each way (internal/impair),
// an input reaches the node in a datagram sent for it — its own or the
// repeat, not the next input's, a tick later in a game — about
// 1 − 0.3² = 91 % of the time, where one datagram per input would make
// it 70 %. (Inputs go 25 ms apart, so the 4 ms repeat comes first.)
func TestUDPRepeatBeatsLoss(t *testing.T) {
	c, _, _, un, clk := setupUDP(t, nil)
	px, front := impairFront(t, un, impair.Config{Seed: 5})
	sock, err := NewUDPSocket(UDPSocketConfig{
		Logger:   slog.New(slog.DiscardHandler),
		Redirect: func(netip.AddrPort) netip.AddrPort { return front },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	c.cfg.UDPSocket = sock
	r := connectUDP(t, c) // without loss: the fake node answers a handshake once
	s := un.next()
	loss := impair.Faults{Loss: 0.3}
	for _, d := range []impair.Direction{impair.Up, impair.Down} {
		if err := px.SetFaults(d, loss); err != nil {
			t.Fatal(err)
		}
	}
	// The node's datagrams (PONGs here) come through with gaps, and
	// confirm the session: INPUTs go unreliable.
	for range 30 {
		s.sendUnreliable(t, &roomwire.Pong{ClientMS: uint64(clk.Now().UnixMilli())})
		time.Sleep(time.Millisecond)
	}
	const inputs = 200
	for k := range inputs {
		if err := r.SendInput([]byte{byte(k)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(25 * time.Millisecond) // the next tick
	}
	onTime := s.newest()
	t.Logf("%d of %d inputs on time", onTime, inputs)
	// Binomial(200, 0.91): 182 ± 4; with one datagram per input,
	// Binomial(200, 0.7): 140 ± 6.5.
	if onTime < 160 {
		t.Errorf("%d of %d inputs reached the node in a datagram sent for them, want about 182 (at least 160; 140 without the repeat)", onTime, inputs)
	}
	if st := px.Stats(); st.Up.Lost == 0 || st.Down.Lost == 0 {
		t.Errorf("proxy stats %+v: want losses both ways", st)
	}
	r.Close()
}

// TestUDPInputsRepeatedWhenTheNodeRepeats: a copy of a datagram the client
// already has (the node sends FRAMEs twice while it sees this client's
// datagrams lost) puts the client's INPUTS on the same footing: twice,
// although it saw no gap of its own.
func TestUDPInputsRepeatedWhenTheNodeRepeats(t *testing.T) {
	c, _, _, un, _ := setupUDP(t, nil)
	r := connectUDP(t, c)
	s := un.next()
	s.recvType(t, roomwire.TypePing)
	s.sendFrame(t, 0, &roomwire.Frame{Frames: []roomwire.TickFrame{tick(1)}})
	frameNumbers(t, r, 1)
	if err := r.SendInput([]byte("a")); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, s.inputs, "INPUTS datagram"); got != [2]uint32{1, 1} {
		t.Fatalf("INPUTS %v", got)
	}
	select {
	case got := <-s.inputs:
		t.Fatalf("INPUTS %v sent twice on a clean path", got)
	case <-time.After(50 * time.Millisecond):
	}

	s.mu.Lock()
	s.twice = true
	s.mu.Unlock()
	s.sendFrame(t, 0, &roomwire.Frame{Frames: []roomwire.TickFrame{tick(2)}})
	s.mu.Lock()
	s.twice = false
	s.mu.Unlock()
	// Frame 3 comes after frame 2's copy: once it is delivered, the client
	// has seen the copy.
	s.sendFrame(t, 0, &roomwire.Frame{Frames: []roomwire.TickFrame{tick(3)}})
	if got := frameNumbers(t, r, 2); !slices.Equal(got, []uint32{2, 3}) {
		t.Fatalf("frames %v, want [2 3]", got)
	}
	if err := r.SendInput([]byte("b")); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the datagram and its repeat
		if got := recv(t, s.inputs, "INPUTS datagram"); got != [2]uint32{1, 2} {
			t.Fatalf("INPUTS %v, want (1, 2)", got)
		}
	}
}

// TestUDPAnswersPathChallenge: the client answers each PATH_CHALLENGE
// at once with its bytes, from its own socket (rooms-udp.md §8), once per
// challenge: a replayed copy gets nothing, nor does a challenge of the
// wrong length, which the socket drops.
func TestUDPAnswersPathChallenge(t *testing.T) {
	c, _, _, un, _ := setupUDP(t, nil)
	r := connectUDP(t, c)
	s := un.next()
	uc := r.conn.(*udpConn)
	local := uc.sock.LocalAddr().(*net.UDPAddr).AddrPort()

	data := roomudp.PathData{1, 2, 3, 4, 5, 6, 7, 8}
	s.mu.Lock()
	d, err := s.sealer.Seal(nil, roomudp.AppendPath([]byte{roomudp.ChannelPathChallenge}, &data))
	to := s.addr
	s.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	before := uc.sock.Dropped()
	if _, err := un.pc.WriteToUDPAddrPort(d, to); err != nil {
		t.Fatal(err)
	}
	got := recv(t, s.paths, "PATH_RESPONSE")
	if got.data != data || got.from.Port() != local.Port() {
		t.Fatalf("PATH_RESPONSE %x from %v, want %x from port %d", got.data, got.from, data, local.Port())
	}
	if n := r.Stats().PathChallenges; n != 1 {
		t.Errorf("Stats().PathChallenges %d, want 1", n)
	}
	// A replayed challenge and a short one: dropped, never answered.
	if _, err := un.pc.WriteToUDPAddrPort(d, to); err != nil {
		t.Fatal(err)
	}
	s.write(roomudp.ChannelPathChallenge, data[:7])
	s.write(roomudp.ChannelPathResponse, data[:]) // node to client: the wrong direction
	// The session still works (the FRAME is read after the three), and
	// nothing more was answered.
	s.sendUnreliable(t, &roomwire.Frame{Frames: []roomwire.TickFrame{tick(1)}})
	if got := frameNumbers(t, r, 1); got[0] != 1 {
		t.Fatalf("frame %v", got)
	}
	if got := uc.sock.Dropped() - before; got != 3 {
		t.Errorf("dropped %d datagrams, want 3 (replay, short, wrong direction)", got)
	}
	select {
	case p := <-s.paths:
		t.Fatalf("a second PATH_RESPONSE %x", p.data)
	default:
	}
	if n := r.Stats().PathChallenges; n != 1 {
		t.Errorf("Stats().PathChallenges %d, want 1", n)
	}
}
