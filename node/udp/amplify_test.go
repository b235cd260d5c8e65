package udp_test

import (
	"bytes"
	"net"
	"testing"
	"time"

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
