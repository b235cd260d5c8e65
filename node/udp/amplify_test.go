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

// TestBudgetNotBankedAcrossAddresses: before a session is established,
// what goes to an address keeps to 3 times what came from that address,
// not from the attempt. The holder of a seat's key resumes it (a catch-up
// of 8 KB waits on KCP), retransmits the same HANDSHAKE twenty times from
// its own address, reading every reply, and then once with a forged
// source: the victim's. Each retransmission moves the attempt to its
// source; the budget the first twenty earned must not go to the victim.
func TestBudgetNotBankedAcrossAddresses(t *testing.T) {
	e := newEnv(t)
	e.admit("r-bank", 1)
	tk, kid, sk := e.ticket("r-bank", 0)
	c := e.newClient(kid, sk)
	var w roomwire.Welcome
	if err := w.Unmarshal(c.handshake(helloBytes(t, tk))); err != nil {
		t.Fatal(err)
	}
	c.pingPong()
	c.reliable(&roomwire.Ready{})
	c.await(roomwire.TypeRoomState)
	big := bytes.Repeat([]byte{0xab}, roomwire.MaxInputLen)
	for seq := uint32(1); seq <= 60; seq++ { // a catch-up of about 8 KB
		c.inputs(seq, big)
		c.await(roomwire.TypeFrame)
	}

	hs, err := roomwire.AppendHandshake(nil, roomwire.KindResume, w.ResumeToken, &roomwire.Resume{ClientNonce: 2})
	if err != nil {
		t.Fatal(err)
	}
	a := e.newClient(kid, sk) // the attacker, at its own address
	for range 20 {
		a.write(a.handshakeDatagram(hs))
		if a.readReply(2*time.Second) == nil {
			t.Fatal("no reply")
		}
	}
	victim, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close()
	forged := a.handshakeDatagram(hs)
	if _, err := victim.WriteToUDP(forged, e.addr); err != nil {
		t.Fatal(err)
	}
	total, buf := 0, make([]byte, 2048)
	for { // until KCP's backoff leaves a 1.5 s gap
		_ = victim.SetReadDeadline(time.Now().Add(1500 * time.Millisecond))
		n, _, err := victim.ReadFromUDP(buf)
		if err != nil {
			break
		}
		total += n
	}
	t.Logf("the victim sent %d bytes and received %d", len(forged), total)
	if total > 3*len(forged) {
		t.Errorf("the victim received %d bytes for the %d it sent: over 3 times", total, len(forged))
	}
}

// TestForgedSourcesAlternating: a player hops its seat's traffic between
// two forged sources and its own address (forged, real, forged, forged,
// real, ...) while its room streams FRAMEs at tick rate. Each forged
// address gets at most 3 times the bytes sent in its name, however often
// the session comes back to it: a move to an address not validated
// starts its budget at zero.
func TestForgedSourcesAlternating(t *testing.T) {
	e := newEnv(t)
	c := e.playing(t, "r-hop")
	c.reliable(&roomwire.Ready{})
	c.await(roomwire.TypeRoomState)
	c.await(roomwire.TypeFrame)

	type victim struct {
		pc   *net.UDPConn
		sent int
		got  chan int
	}
	vs := make([]*victim, 2)
	for i := range vs {
		pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		defer pc.Close()
		v := &victim{pc: pc, got: make(chan int, 1)}
		vs[i] = v
		go func() {
			buf, total := make([]byte, 2048), 0
			for {
				_ = pc.SetReadDeadline(time.Now().Add(time.Second))
				n, _, err := pc.ReadFromUDP(buf)
				if err != nil {
					v.got <- total
					return
				}
				total += n
			}
		}()
	}
	ping, _ := (&roomwire.Ping{ClientMS: 7}).AppendTo(nil)
	in := uint32(1)
	for round := range 12 {
		for _, i := range []int{0, 1, 0} { // the real address only every third hop
			d := c.seal(roomudp.ChannelMessage, ping)
			if _, err := vs[i].pc.WriteToUDP(d, e.addr); err != nil {
				t.Fatal(err)
			}
			vs[i].sent += len(d)
			time.Sleep(40 * time.Millisecond) // more than a tick: FRAMEs go to the forged address meanwhile
		}
		if round%2 == 0 {
			c.inputs(in, []byte{byte(round)})
			in++
		} else {
			c.unreliable(&roomwire.Ping{ClientMS: 1})
		}
		time.Sleep(40 * time.Millisecond)
	}
	for i, v := range vs {
		got := <-v.got
		t.Logf("forged address %d: %d bytes sent in its name, %d received", i, v.sent, got)
		if got > 3*v.sent {
			t.Errorf("forged address %d received %d bytes for the %d sent in its name: over 3 times", i, got, v.sent)
		}
	}
	if got := e.counter("switchboard_node_udp_dropped_total", "reason", "unvalidated"); got == 0 {
		t.Error("nothing held back from the forged addresses: the room streamed no FRAMEs there?")
	}
	c.pingPong() // the real client still plays
}

// TestPathResponseFromAnotherAddress: a player forges its source (the
// victim's), reads the PATH_CHALLENGE there (here the test can; a real
// attacker could only if it received at the victim's address) and answers
// it from its own address, sealed with a sequence number below the forged
// datagram's so that the answer does not move the session back. The
// victim's address is not validated: an answer counts only from the
// address it validates.
func TestPathResponseFromAnotherAddress(t *testing.T) {
	e := newEnv(t)
	c := e.playing(t, "r-answer")

	victim, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close()
	c.mute.Store(true) // the client's KCP says nothing meanwhile
	defer c.mute.Store(false)
	// A second sealer on the session's key, at the client's next
	// sequence number; the client's own sealer skips a few, so the
	// answer can be sealed after the forged datagram with a lower number.
	low, err := sealed.NewSealer(c.i2r[:], c.conv)
	if err != nil {
		t.Fatal(err)
	}
	for low.Next() < c.send.Next() {
		if _, err := low.Seal(nil, []byte{0}); err != nil {
			t.Fatal(err)
		}
	}
	for range 4 {
		c.seal(roomudp.ChannelMessage, nil)
	}
	ping, _ := (&roomwire.Ping{ClientMS: 9}).AppendTo(nil)
	if _, err := victim.WriteToUDP(c.seal(roomudp.ChannelMessage, ping), e.addr); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2048)
	var data []byte
	for data == nil {
		_ = victim.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, _, err := victim.ReadFromUDP(buf)
		if err != nil {
			t.Fatal("no PATH_CHALLENGE at the victim's address")
		}
		if p, _, err := c.open.Open(nil, buf[:n]); err == nil && p[0] == roomudp.ChannelPathChallenge {
			data = append([]byte(nil), p[1:]...)
		}
	}
	answer, err := low.Seal(nil, append([]byte{roomudp.ChannelPathResponse}, data...))
	if err != nil {
		t.Fatal(err)
	}
	c.write(answer)
	waitFor(t, "the answer from another address dropped as stale", func() bool {
		return e.counter("switchboard_node_udp_dropped_total", "reason", "stale") == 1
	})
	if got := e.counter("switchboard_node_udp_path_checks_total", "result", "validated"); got != 0 {
		t.Errorf("the victim's address was validated by an answer from elsewhere (%v)", got)
	}
}
