package rooms

import (
	"errors"
	"net"
	"slices"
	"testing"
	"time"

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

	// INPUT on KCP, CUSTOM unreliable as a single datagram, reliable on KCP.
	if err := r.SendInput([]byte("go")); err != nil {
		t.Fatal(err)
	}
	m := s.recvType(t, roomwire.TypeInput)
	if inp := m.m.(*roomwire.Input); m.unreliable || inp.AckFrame != 5 || string(inp.Data) != "go" {
		t.Errorf("INPUT %+v unreliable=%v, want ack 5 \"go\" on KCP", inp, m.unreliable)
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
