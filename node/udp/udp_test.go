package udp_test

import (
	"bytes"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/internal/sealed"
	"github.com/switchboardgg/switchboard/node/udp"
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
	c.pingPong()
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
	// The node's message counters count what went over UDP too.
	for _, typ := range []string{"WELCOME", "PONG", "ROOM_STATE", "FRAME"} {
		if got := e.counter("switchboard_node_messages_out_total", "type", typ); got < 1 {
			t.Errorf("messages out %s: %v", typ, got)
		}
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
	ping := c.pingPong()
	c.write(ping)
	waitFor(t, "session replay counted", func() bool { return drops("replay") == 2 })
}

// TestQuietUntilEstablished: before the client's first SESSION datagram
// the node sends only KCP (which backs off), never the room's unreliable
// messages, however long the client stays silent; once it speaks, FRAMEs
// come unreliable.
func TestQuietUntilEstablished(t *testing.T) {
	e := newEnv(t)
	e.admit("r-quiet", 1)
	tk, kid, sk := e.ticket("r-quiet", 0)
	c := e.newClient(kid, sk)
	c.write(c.handshakeDatagram(helloBytes(t, tk)))
	r := c.readReply(5 * time.Second)
	if r == nil {
		t.Fatal("no reply")
	}
	p, _, err := c.hsOpen.Open(nil, r)
	if err != nil {
		t.Fatal(err)
	}
	sn, w, err := roomudp.ParseReply(p)
	if err != nil || roomwire.Type(w[0]) != roomwire.TypeWelcome {
		t.Fatalf("reply %x (%v)", w, err)
	}
	var wm roomwire.Welcome
	if err := wm.Unmarshal(w); err != nil {
		t.Fatal(err)
	}
	keys, err := roomudp.SessionKeys(&c.sk, &c.nonce, &sn)
	if err != nil {
		t.Fatal(err)
	}
	open, _ := sealed.NewOpener(keys.R2I[:], wm.Conv)
	// Three KCP datagrams: the first send and two retransmissions (RTO
	// 200 ms, then 300 ms), long enough for a 30 Hz room to tick a dozen
	// times.
	for kcp := 0; kcp < 3; {
		d := c.read(5 * time.Second)
		if d == nil {
			t.Fatalf("%d KCP datagrams, then silence", kcp)
		}
		b, _, err := open.Open(nil, d)
		if err != nil {
			continue // a resent reply
		}
		ch, body, err := roomudp.ParseSession(b)
		if err != nil {
			t.Fatal(err)
		}
		if ch != roomudp.ChannelKCP {
			t.Fatalf("unreliable %s before the client spoke", roomwire.Type(body[0]))
		}
		kcp++
	}
	c.start(sn, w)
	c.pingPong()
	if f := c.await(roomwire.TypeFrame); !f.unreliable {
		t.Error("FRAME came on KCP")
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
	if got := e.counter("switchboard_node_errors_total", "code", "ticket_invalid"); got != 1 {
		t.Errorf("errors ticket_invalid: %v, want 1", got)
	}
}

// TestRebinding: the client's address changes mid-game; its next
// authenticated datagram moves the session, the node challenges the new
// address (rooms-udp.md §8), the client's answer from there validates it,
// and the node answers there.
func TestRebinding(t *testing.T) {
	e := newEnv(t)
	c := e.playing(t, "r-nat")
	paths := func(result string) float64 {
		return e.counter("switchboard_node_udp_path_checks_total", "result", result)
	}
	if c.challenges.Load() != 0 || paths("validated") != 0 {
		t.Fatal("the handshake's address was challenged: it is proven")
	}

	pc2, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer pc2.Close()
	b, _ := (&roomwire.Ping{ClientMS: 2}).AppendTo(nil)
	buf := make([]byte, 2048)
	challenged, ponged := 0, false
	for range 50 { // resend every 200 ms until the PONG comes to the new address
		if _, err := pc2.WriteToUDP(c.seal(roomudp.ChannelMessage, b), e.addr); err != nil {
			t.Fatal(err)
		}
		_ = pc2.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		for {
			n, _, err := pc2.ReadFromUDP(buf)
			if err != nil {
				break
			}
			p, _, err := c.open.Open(nil, buf[:n])
			if err != nil {
				t.Fatalf("a datagram at the new address does not open: %v", err)
			}
			ch, body, err := roomudp.ParseSession(p)
			switch {
			case err != nil:
			case ch == roomudp.ChannelPathChallenge:
				challenged++
				if _, err := pc2.WriteToUDP(c.seal(roomudp.ChannelPathResponse, body), e.addr); err != nil {
					t.Fatal(err)
				}
			case ch == roomudp.ChannelMessage && roomwire.Type(body[0]) == roomwire.TypePong:
				ponged = true
			}
		}
		if ponged && paths("validated") == 1 {
			break
		}
	}
	if !ponged || challenged == 0 {
		t.Fatalf("at the new address: PONG %v, %d challenges", ponged, challenged)
	}
	waitFor(t, "the new address validated", func() bool { return paths("validated") == 1 })
	if got := paths("abandoned"); got != 0 {
		t.Errorf("%v checks abandoned", got)
	}
}

// TestResume: a new connection attempt (new nonce, the same key of the
// latest C1) resumes the seat with the resume token; the old conv is
// dead.
func TestResume(t *testing.T) {
	e := newEnv(t)
	e.admit("r-resume", 1)
	tk, kid, sk := e.ticket("r-resume", 0)
	c := e.newClient(kid, sk)
	var w roomwire.Welcome
	if err := w.Unmarshal(c.handshake(helloBytes(t, tk))); err != nil {
		t.Fatal(err)
	}
	c.pingPong()

	c2 := e.newClient(kid, sk)
	hs, err := roomwire.AppendHandshake(nil, roomwire.KindResume, w.ResumeToken, &roomwire.Resume{ClientNonce: 2, LastFrame: 0})
	if err != nil {
		t.Fatal(err)
	}
	var w2 roomwire.Welcome
	if err := w2.Unmarshal(c2.handshake(hs)); err != nil {
		t.Fatalf("resume answered %v", err)
	}
	if w2.Conv == w.Conv || w2.Seat != 0 {
		t.Fatalf("resumed conv %d seat %d (old conv %d)", w2.Conv, w2.Seat, w.Conv)
	}
	c2.pingPong()
	// The room replaced the old connection: it was closed (ERROR on KCP)
	// and its datagrams no longer reach the room.
	c.await(roomwire.TypeError)
}

// TestResumeReplyLost: a resume whose reply the client never got (it gave
// up on that attempt a moment before the reply came, and holds only the
// old token) does not burn the token: the next attempt with it resumes
// again, as long as the connection it made has not delivered a message.
// Once the client speaks on a resumed connection, the old token is
// refused (ERROR 11). The UDP chaos run's unexplained re-joins were this:
// a resume seated just as the client fell back to WebSocket.
func TestResumeReplyLost(t *testing.T) {
	e := newEnv(t)
	e.admit("r-lost", 1)
	tk, kid, sk := e.ticket("r-lost", 0)
	c := e.newClient(kid, sk)
	var w roomwire.Welcome
	if err := w.Unmarshal(c.handshake(helloBytes(t, tk))); err != nil {
		t.Fatal(err)
	}
	c.pingPong()
	resume := func(nonce uint64) []byte {
		hs, err := roomwire.AppendHandshake(nil, roomwire.KindResume, w.ResumeToken, &roomwire.Resume{ClientNonce: nonce})
		if err != nil {
			t.Fatal(err)
		}
		return hs
	}

	// The lost attempt: the node seats it and replies; the client never
	// opens the reply, so it sends nothing on that session.
	lost := e.newClient(kid, sk)
	lost.write(lost.handshakeDatagram(resume(2)))
	if lost.readReply(5*time.Second) == nil {
		t.Fatal("no reply to the first resume")
	}
	// The next attempt, with the same (old) token.
	c2 := e.newClient(kid, sk)
	var w2 roomwire.Welcome
	msg := c2.handshake(resume(3))
	if err := w2.Unmarshal(msg); err != nil {
		t.Fatalf("second resume with the token of a reply that was lost: %v (want WELCOME)", errorOf(msg, err))
	}
	c2.pingPong() // the client has spoken: it holds w2's token

	c3 := e.newClient(kid, sk)
	msg = c3.handshake(resume(4))
	var em roomwire.Error
	if err := em.Unmarshal(msg); err != nil || em.Code != roomwire.CodeResumeRejected {
		t.Fatalf("resume with a token whose successor was delivered: %v, want ERROR %d", errorOf(msg, err), roomwire.CodeResumeRejected)
	}
	// The successor's token works.
	c4 := e.newClient(kid, sk)
	hs, err := roomwire.AppendHandshake(nil, roomwire.KindResume, w2.ResumeToken, &roomwire.Resume{ClientNonce: 5})
	if err != nil {
		t.Fatal(err)
	}
	var w4 roomwire.Welcome
	if err := w4.Unmarshal(c4.handshake(hs)); err != nil {
		t.Fatalf("resume with the delivered token: %v", err)
	}
}

// errorOf describes a handshake reply that was not what a test wanted.
func errorOf(msg []byte, err error) string {
	var em roomwire.Error
	if em.Unmarshal(msg) == nil {
		return fmt.Sprintf("ERROR %d %s", em.Code, roomwire.CodeName(em.Code))
	}
	return err.Error()
}

// TestIdleSessionGoesOffline: a session that stops sending is ended after
// IdleTimeout and the room tells the others its seat went offline
// (timeout); the session that keeps pinging stays.
func TestIdleSessionGoesOffline(t *testing.T) {
	e := newEnvWith(t, func(c *udp.Config) { c.IdleTimeout = time.Second })
	e.admit("r-idle", 2)
	var cs [2]*client
	for seat := range 2 {
		tk, kid, sk := e.ticket("r-idle", seat)
		cs[seat] = e.newClient(kid, sk)
		cs[seat].handshake(helloBytes(t, tk))
		cs[seat].pingPong()
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // seat 0 keeps its heartbeat
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				b, _ := (&roomwire.Ping{ClientMS: 2}).AppendTo(nil)
				_, _ = cs[0].pc.WriteToUDP(cs[0].seal(roomudp.ChannelMessage, b), e.addr)
			}
		}
	}()
	defer func() { close(stop); <-done }()
	waitFor(t, "seat 1 offline (timeout)", func() bool {
		cs[0].mu.Lock()
		defer cs[0].mu.Unlock()
		for _, m := range cs[0].messages {
			var mm roomwire.Member
			if roomwire.Type(m.msg[0]) == roomwire.TypeMember && mm.Unmarshal(m.msg) == nil &&
				mm.Seat == 1 && mm.Kind == roomwire.MemberOffline && mm.Reason == "timeout" {
				return true
			}
		}
		return false
	})
	if got := e.counter("switchboard_node_udp_sessions"); got != 1 {
		t.Errorf("sessions: %v, want 1", got)
	}
}

// TestManyPlayersFrames: 4 rooms of 4 players over UDP play 30 frames; it
// logs how many datagrams each sendmmsg batch carried (no assertion on
// the figure: it depends on scheduling).
func TestManyPlayersFrames(t *testing.T) {
	e := newEnv(t)
	var cs []*client
	for r := range 4 {
		id := "r-many-" + string(rune('a'+r))
		e.admit(id, 4)
		for seat := range 4 {
			tk, kid, sk := e.ticket(id, seat)
			c := e.newClient(kid, sk)
			c.handshake(helloBytes(t, tk))
			cs = append(cs, c)
		}
	}
	for _, c := range cs {
		c.reliable(&roomwire.Ready{})
	}
	out0, w0 := e.counter("switchboard_node_udp_datagrams_out_total"), e.counter("switchboard_node_udp_write_batches_total")
	for _, c := range cs {
		waitFor(t, "30 frames", func() bool { return c.count(roomwire.TypeFrame) >= 30 })
	}
	out, w := e.counter("switchboard_node_udp_datagrams_out_total")-out0, e.counter("switchboard_node_udp_write_batches_total")-w0
	t.Logf("16 players, 4 rooms: %.0f datagrams in %.0f write batches (%.1f per batch)", out, w, out/w)
}

// TestHandshakeRate: beyond HandshakeRate new HANDSHAKEs are dropped
// (busy) before their keys are derived.
func TestHandshakeRate(t *testing.T) {
	e := newEnvWith(t, func(c *udp.Config) { c.HandshakeRate, c.HandshakeBurst = 1, 1 })
	c := e.newClient(roomudp.KeyID{1}, [32]byte{2}) // a key no C1 gave: every HANDSHAKE is bogus
	hs := helloBytes(t, "AQ3k")
	c.write(c.handshakeDatagram(hs))
	waitFor(t, "bogus handshake counted", func() bool {
		return e.counter("switchboard_node_udp_dropped_total", "reason", "auth") == 1
	})
	c.nonce[0]++ // another attempt
	c.write(c.handshakeDatagram(hs))
	waitFor(t, "busy counted", func() bool {
		return e.counter("switchboard_node_udp_dropped_total", "reason", "busy") == 1
	})
}

// TestInputsRepeatedUntilAcknowledged: INPUTs on channel 2 reach the room
// once each, oldest first; repeats and late datagrams are counted and
// dropped; a gap the client left is skipped; every FRAME on channel 3
// carries the highest input sequence number taken; a malformed INPUTS
// datagram and a FRAME from a client are invalid.
func TestInputsRepeatedUntilAcknowledged(t *testing.T) {
	e := newEnv(t)
	c := e.playing(t, "r-inputs")
	c.reliable(&roomwire.Ready{})
	c.await(roomwire.TypeRoomState)
	if f := c.await(roomwire.TypeFrame); !f.frameCh || f.inputSeq != 0 {
		t.Fatalf("first FRAME: channel 3 %v, input_seq %d", f.frameCh, f.inputSeq)
	}
	counter := func(result string) float64 {
		return e.counter("switchboard_node_udp_inputs_total", "result", result)
	}
	// ackedWith waits for a FRAME acknowledging seq whose frames hold data.
	ackedWith := func(seq uint32, data []byte) {
		t.Helper()
		waitFor(t, fmt.Sprintf("a FRAME acknowledging %d with input %x", seq, data), func() bool {
			f := c.await(roomwire.TypeFrame)
			if f.inputSeq > seq {
				t.Fatalf("FRAME acknowledges %d, only %d sent", f.inputSeq, seq)
			}
			if f.inputSeq < seq {
				return false
			}
			var m roomwire.Frame
			if err := m.Unmarshal(f.msg); err != nil {
				t.Fatal(err)
			}
			for _, tf := range m.Frames {
				for _, in := range tf.Inputs {
					if bytes.Equal(in.Data, data) {
						return true
					}
				}
			}
			return false
		})
	}
	c.inputs(1, []byte{0xa1})
	ackedWith(1, []byte{0xa1})
	c.inputs(1, []byte{0xa1}, []byte{0xb2}) // 1 repeated, 2 new
	ackedWith(2, []byte{0xb2})
	if taken, rep := counter("taken"), counter("repeat"); taken != 2 || rep != 1 {
		t.Fatalf("taken %v repeat %v, want 2 and 1", taken, rep)
	}
	c.inputs(1, []byte{0xa1}, []byte{0xb2}) // late: nothing new
	waitFor(t, "3 repeats", func() bool { return counter("repeat") == 3 })
	c.inputs(5, []byte{0xe5}) // 3 and 4 left out by the client
	ackedWith(5, []byte{0xe5})
	if taken := counter("taken"); taken != 3 {
		t.Fatalf("taken %v, want 3", taken)
	}

	invalid := e.counter("switchboard_node_udp_dropped_total", "reason", "invalid")
	c.write(c.seal(roomudp.ChannelInputs, roomudp.AppendInputsHeader(nil, 9, 0)))
	fr, _ := (&roomwire.Frame{}).AppendTo(nil)
	c.write(c.seal(roomudp.ChannelFrame, roomudp.AppendFrame(nil, 1, fr)))
	waitFor(t, "2 invalid datagrams", func() bool {
		return e.counter("switchboard_node_udp_dropped_total", "reason", "invalid") == invalid+2
	})
	if taken := counter("taken"); taken != 3 {
		t.Fatalf("taken %v after invalid datagrams, want 3", taken)
	}
	// Counted as invalid messages, and as nothing else.
	if got := e.counter("switchboard_node_messages_in_total", "type", "invalid"); got != 2 {
		t.Errorf("messages in invalid: %v, want 2", got)
	}
	if got := e.counter("switchboard_node_messages_in_total", "type", "WELCOME"); got != 0 {
		t.Errorf("messages in WELCOME: %v, want 0", got)
	}
}

// TestReplyBeforeKCP: the HANDSHAKE REPLY is the first datagram a
// handshake gets, ahead of what the room sends on KCP while it seats the
// session (ROOM_STATE; for a resume its FRAME_BATCH catch-up). A client
// cannot open a SESSION datagram before the reply, so one sent ahead of
// it would be lost, and what it carried would wait for KCP's first
// retransmission (200 ms or more): every join and resume would start late.
func TestReplyBeforeKCP(t *testing.T) {
	e := newEnv(t)
	e.admit("r-first", 1)
	tk, kid, sk := e.ticket("r-first", 0)
	first := func(c *client, hs []byte) {
		t.Helper()
		c.write(c.handshakeDatagram(hs))
		d := c.read(5 * time.Second)
		if d == nil {
			t.Fatal("no answer")
		}
		if h, err := sealed.ParseHeader(d); err != nil || h.KeyID != roomudp.HandshakeKeyID {
			t.Fatalf("first datagram has key id %d (%v), want the reply's (0)", h.KeyID, err)
		}
	}
	c := e.newClient(kid, sk)
	first(c, helloBytes(t, tk))

	// A resume after frames were played: its catch-up follows the reply.
	var w roomwire.Welcome // the retransmission gets the same reply
	if err := w.Unmarshal(c.handshake(helloBytes(t, tk))); err != nil {
		t.Fatal(err)
	}
	c.pingPong()
	c.reliable(&roomwire.Ready{})
	c.await(roomwire.TypeFrame)
	hs, err := roomwire.AppendHandshake(nil, roomwire.KindResume, w.ResumeToken, &roomwire.Resume{ClientNonce: 2})
	if err != nil {
		t.Fatal(err)
	}
	first(e.newClient(kid, sk), hs)
}

// TestRefusedHandshakesDoNotFillTheNode: refused attempts (here a ticket
// that is not the key's: ERROR 1) are remembered so that retransmissions
// get the same ERROR, but only up to MaxPending of them, beside the
// sessions: anyone holding one C1's session key can make them at will
// with fresh nonces, and they used to fill the node's whole budget of
// handshakes until every new HANDSHAKE was dropped as busy.
func TestRefusedHandshakesDoNotFillTheNode(t *testing.T) {
	e := newEnvWith(t, func(c *udp.Config) { c.MaxSessions, c.MaxPending = 1, 2 })
	e.admit("r-fill", 1)
	tk, _, _ := e.ticket("r-fill", 0)
	_, kid2, sk2 := e.ticket("r-fill", 0)
	for i := range 5 {
		c := e.newClient(kid2, sk2) // a fresh nonce: a new attempt
		var em roomwire.Error
		if msg := c.handshake(helloBytes(t, tk)); em.Unmarshal(msg) != nil || em.Code != roomwire.CodeTicketInvalid {
			t.Fatalf("attempt %d: reply %x, want ERROR 1", i, msg)
		}
	}
	tk3, kid3, sk3 := e.ticket("r-fill", 0)
	c := e.newClient(kid3, sk3)
	c.write(c.handshakeDatagram(helloBytes(t, tk3)))
	if c.readReply(2*time.Second) == nil {
		t.Fatalf("a good HELLO got no reply after refused attempts (busy %v)",
			e.counter("switchboard_node_udp_dropped_total", "reason", "busy"))
	}
}

// TestUnprovenAddressGetsLittle: a HANDSHAKE's source address is not
// proven until a SESSION datagram comes from the session: a HANDSHAKE
// (replayed, or sent with a forged source by the token's holder) would
// otherwise turn into a flood at that address. A RESUME's catch-up is the
// largest case: one 1,200-byte HANDSHAKE made the node send a whole KCP
// window (256 segments, about 300 KB) at once, and retransmit it for 10 s.
// Until the session is established the node sends at most three times
// what the address sent it (RFC 9000 §8); once it is, the rest follows.
func TestUnprovenAddressGetsLittle(t *testing.T) {
	e := newEnv(t)
	e.admit("r-amp", 1)
	tk, kid, sk := e.ticket("r-amp", 0)
	c := e.newClient(kid, sk)
	var w roomwire.Welcome
	if err := w.Unmarshal(c.handshake(helloBytes(t, tk))); err != nil {
		t.Fatal(err)
	}
	c.pingPong()
	c.reliable(&roomwire.Ready{})
	c.await(roomwire.TypeRoomState)
	big := bytes.Repeat([]byte{0xab}, roomwire.MaxInputLen)
	for seq := uint32(1); seq <= 60; seq++ { // about 60 frames of 128-byte inputs: a catch-up of 8 KB
		c.inputs(seq, big)
		c.await(roomwire.TypeFrame)
	}

	hs, err := roomwire.AppendHandshake(nil, roomwire.KindResume, w.ResumeToken, &roomwire.Resume{ClientNonce: 2})
	if err != nil {
		t.Fatal(err)
	}
	v := e.newClient(kid, sk)
	req := v.handshakeDatagram(hs)
	v.write(req)
	var reply []byte
	total := 0
	for d := v.read(time.Second); d != nil; d = v.read(time.Second) { // until KCP's backoff leaves a second's gap
		if h, err := sealed.ParseHeader(d); err == nil && h.KeyID == roomudp.HandshakeKeyID && reply == nil {
			reply = d
		}
		total += len(d)
	}
	if reply == nil {
		t.Fatal("no reply")
	}
	if total > 3*len(req) {
		t.Errorf("a silent address got %d bytes for one HANDSHAKE of %d", total, len(req))
	}

	// Once the session speaks, the catch-up follows.
	p, _, err := v.hsOpen.Open(nil, reply)
	if err != nil {
		t.Fatal(err)
	}
	sn, msg, err := roomudp.ParseReply(p)
	if err != nil || roomwire.Type(msg[0]) != roomwire.TypeWelcome {
		t.Fatalf("reply %x (%v)", msg, err)
	}
	v.start(sn, msg)
	v.pingPong()
	var fb roomwire.FrameBatch
	if err := fb.Unmarshal(v.await(roomwire.TypeFrameBatch).msg); err != nil || len(fb.Frames) < 60 {
		t.Fatalf("catch-up of %d frames (%v), want 60 or more", len(fb.Frames), err)
	}
}

// TestReadRate: a session's authenticated datagrams beyond its read
// budget (Config.ReadRate, ReadBurst: the WebSocket connection's) are
// dropped, counted rate, and not answered: one player's PINGs, or any
// datagram the node answers one for one, cannot fill the outgoing queue
// that every session shares.
func TestReadRate(t *testing.T) {
	e := newEnvWith(t, func(c *udp.Config) { c.ReadRate, c.ReadBurst = 1, roomudp.MaxDatagram })
	c := e.playing(t, "r-rate")
	for range 100 { // 43 bytes each: the burst of 1,472 lets about 30 through
		c.unreliable(&roomwire.Ping{ClientMS: 3})
	}
	waitFor(t, "rate drops", func() bool {
		return e.counter("switchboard_node_udp_dropped_total", "reason", "rate") >= 60
	})
	if n := e.counter("switchboard_node_messages_in_total", "type", "PING"); n > 40 {
		t.Errorf("%v PINGs reached the room's dispatcher, want at most 40", n)
	}
}

// TestFramesTwiceAfterLoss: while a session's datagrams show a gap (one of
// the client's was lost), the node sends each FRAME a second time, the same
// sealed bytes a few milliseconds later, which the client's replay window
// drops when the first arrived; on a clean path it sends each once.
func TestFramesTwiceAfterLoss(t *testing.T) {
	e := newEnv(t)
	e.admit("r-twice", 1)
	tk, kid, sk := e.ticket("r-twice", 0)
	c := e.newClient(kid, sk)
	c.handshake(helloBytes(t, tk))
	c.reliable(&roomwire.Ready{})
	c.await(roomwire.TypeFrame)
	clean := c.count(roomwire.TypeFrame)
	waitFor(t, "ten more frames", func() bool { return c.count(roomwire.TypeFrame) >= clean+10 })
	if got := e.counter("switchboard_node_udp_frame_repeats_total"); got != 0 {
		t.Fatalf("%v FRAMEs repeated on a clean path", got)
	}
	if n := c.replays.Load(); n != 0 {
		t.Fatalf("client saw %d copies on a clean path", n)
	}

	c.seal(roomudp.ChannelMessage, []byte{byte(roomwire.TypePing)}) // sealed, never sent: a lost datagram
	c.pingPong()
	waitFor(t, "ten repeated FRAMEs, dropped by the client as copies", func() bool {
		return e.counter("switchboard_node_udp_frame_repeats_total") >= 10 && c.replays.Load() >= 10
	})
}
