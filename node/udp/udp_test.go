package udp_test

import (
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/internal/sealed"
	"github.com/switchboardgg/switchboard/protocol/roomudp"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// TestPlay: HELLO → WELCOME over sealed datagrams, PING answered on the
// unreliable channel, READY on KCP starts the room, FRAMEs arrive as
// unreliable datagrams.
func TestPlay(t *testing.T) {
	e := newEnv(t)
	e.admit("r-play", 1)
	tk, kid, sk := e.ticket("r-play", 0)
	c := e.newClient(kid, sk)
	msg := c.handshake(helloBytes(t, tk))
	if roomwire.Type(msg[0]) != roomwire.TypeWelcome || c.conv == 0 {
		t.Fatalf("reply %x", msg)
	}
	c.unreliable(&roomwire.Ping{ClientMS: 5})
	if p := c.await(roomwire.TypePong); !p.unreliable {
		t.Error("PONG to an unreliable PING came on KCP")
	}
	c.reliable(&roomwire.Ping{ClientMS: 6})
	if p := c.await(roomwire.TypePong); p.unreliable {
		t.Error("PONG to a PING on KCP came unreliable")
	}
	c.reliable(&roomwire.Ready{})
	c.await(roomwire.TypeRoomState)
	if f := c.await(roomwire.TypeFrame); !f.unreliable {
		t.Error("FRAME came on KCP")
	}
	c.reliable(&roomwire.Input{AckFrame: 0, Data: []byte{7}})
	waitFor(t, "a frame with the input", func() bool {
		f := c.await(roomwire.TypeFrame)
		var m roomwire.Frame
		if err := m.Unmarshal(f.msg); err != nil {
			t.Fatal(err)
		}
		for _, tf := range m.Frames {
			for _, in := range tf.Inputs {
				if bytes.Equal(in.Data, []byte{7}) {
					return true
				}
			}
		}
		return false
	})
	if got := e.counter("switchboard_node_udp_handshakes_total", "result", "welcome"); got != 1 {
		t.Errorf("handshakes welcome: %v", got)
	}
	if got := e.counter("switchboard_node_udp_sessions"); got != 1 {
		t.Errorf("sessions: %v", got)
	}
}

// TestHandshakeRetransmitReplayForgery: a retransmitted HANDSHAKE gets the
// same reply; a replayed, forged, short or unknown-key datagram gets
// nothing and is counted.
func TestHandshakeRetransmitReplayForgery(t *testing.T) {
	e := newEnv(t)
	e.admit("r-hs", 1)
	tk, kid, sk := e.ticket("r-hs", 0)
	c := e.newClient(kid, sk)
	hs := helloBytes(t, tk)
	d1 := c.handshakeDatagram(hs)
	c.write(d1)
	r1 := c.readReply(5 * time.Second)
	if r1 == nil {
		t.Fatal("no reply")
	}
	d2 := c.handshakeDatagram(hs)
	c.write(d2)
	if r2 := c.readReply(5 * time.Second); !bytes.Equal(r1, r2) {
		t.Fatalf("retransmission answered %x, first reply %x", r2, r1)
	}
	drops := func(reason string) float64 {
		return e.counter("switchboard_node_udp_dropped_total", "reason", reason)
	}
	c.write(d1) // replayed: the same sequence number
	waitFor(t, "replay counted", func() bool { return drops("replay") == 1 })
	forged := c.handshakeDatagram(hs) // a sequence number not seen yet
	forged[len(forged)-1] ^= 1
	c.write(forged)
	waitFor(t, "forgery counted", func() bool { return drops("auth") == 1 })
	c.write(d2[:roomudp.HandshakeSize-1])
	waitFor(t, "short handshake counted", func() bool { return drops("size") == 1 })
	stranger, _ := sealed.NewSealer(bytes.Repeat([]byte{9}, 32), 0xdead)
	sd, _ := stranger.Seal(nil, []byte{roomudp.ChannelMessage, byte(roomwire.TypePing)})
	c.write(sd)
	waitFor(t, "unknown key counted", func() bool { return drops("unknown_key") == 1 })
	c.write([]byte{7, 7, 7})
	waitFor(t, "unknown kind counted", func() bool { return drops("kind") == 1 })
	for d := c.read(50 * time.Millisecond); d != nil; d = c.read(50 * time.Millisecond) {
		// KCP of the new session may speak (MEMBER, ROOM_STATE); a
		// handshake reply (key id 0) would answer a bad datagram.
		if h, err := sealed.ParseHeader(d); err != nil || h.KeyID == roomudp.HandshakeKeyID {
			t.Fatalf("answered a bad datagram with %x", d)
		}
	}
	if got := e.counter("switchboard_node_udp_handshakes_total", "result", "resent"); got != 1 {
		t.Errorf("resent: %v", got)
	}

	// The session works, and a replayed session datagram is dropped.
	p, _, err := c.hsOpen.Open(nil, r1)
	if err != nil {
		t.Fatal(err)
	}
	sn, w, err := roomudp.ParseReply(p)
	if err != nil {
		t.Fatal(err)
	}
	c.start(sn, w)
	ping := c.unreliable(&roomwire.Ping{ClientMS: 1})
	for _, r := range []string{"short", "kind", "size", "unknown_key", "auth", "replay", "invalid", "busy", "queue_full"} {
		t.Logf("%s %v", r, drops(r))
	}
	t.Logf("in %v out %v sessions %v", e.counter("switchboard_node_udp_datagrams_in_total"), e.counter("switchboard_node_udp_datagrams_out_total"), e.counter("switchboard_node_udp_sessions"))
	c.await(roomwire.TypePong)
	c.write(ping)
	waitFor(t, "session replay counted", func() bool { return drops("replay") == 2 })
	c.unreliable(&roomwire.Ping{ClientMS: 2})
	c.await(roomwire.TypePong)
	if n := c.count(roomwire.TypePong); n != 0 {
		t.Errorf("%d extra PONGs: the replay was answered", n)
	}
}

// TestTicketMustMatchKey: a HELLO whose ticket is not the key id's gets
// ERROR 1, sealed; the ticket stays unused.
func TestTicketMustMatchKey(t *testing.T) {
	e := newEnv(t)
	e.admit("r-key", 1)
	tk, _, _ := e.ticket("r-key", 0)
	_, kid2, sk2 := e.ticket("r-key", 0)
	c := e.newClient(kid2, sk2)
	msg := c.handshake(helloBytes(t, tk))
	var em roomwire.Error
	if err := em.Unmarshal(msg); err != nil || em.Code != roomwire.CodeTicketInvalid {
		t.Fatalf("reply %x (%v), want ERROR 1", msg, err)
	}
}

// TestRebinding: the client's address changes mid-game; its next
// authenticated datagram moves the session, and the node answers there.
func TestRebinding(t *testing.T) {
	e := newEnv(t)
	e.admit("r-nat", 1)
	tk, kid, sk := e.ticket("r-nat", 0)
	c := e.newClient(kid, sk)
	c.handshake(helloBytes(t, tk))
	c.unreliable(&roomwire.Ping{ClientMS: 1})
	c.await(roomwire.TypePong)

	pc2, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer pc2.Close()
	b, _ := (&roomwire.Ping{ClientMS: 2}).AppendTo(nil)
	if _, err := pc2.WriteToUDP(c.seal(roomudp.ChannelMessage, b), e.addr); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2048)
	_ = pc2.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, _, err := pc2.ReadFromUDP(buf)
	if err != nil {
		t.Fatalf("nothing at the new address: %v", err)
	}
	p, _, err := c.open.Open(nil, buf[:n])
	if err != nil {
		t.Fatal(err)
	}
	if _, body, err := roomudp.ParseSession(p); err != nil || roomwire.Type(body[0]) != roomwire.TypePong {
		t.Fatalf("got %x, %v", p, err)
	}
}
