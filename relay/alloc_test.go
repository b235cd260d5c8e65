package relay_test

import (
	"net"
	"net/netip"
	"testing"
)

// TestRelayDoesNotAllocate: forwarding a RELAY and dropping garbage
// allocate nothing.
func TestRelayDoesNotAllocate(t *testing.T) {
	f := newFixture(t, nil)
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	handle := f.s.HandleUDPForTest(pc)
	hc, jc := dialUDP(t, pc.LocalAddr().String()), dialUDP(t, pc.LocalAddr().String())
	hAddr := hc.c.LocalAddr().(*net.UDPAddr).AddrPort()
	jAddr := jc.c.LocalAddr().(*net.UDPAddr).AddrPort()
	h := f.host(4)
	j := f.joiner(h)
	handle(hAddr, mBind(0, h.blob, h.key))
	expectNext(t, hc, hdr(tBindReceived))
	handle(jAddr, mBind(0, j.blob, j.key))
	expectNext(t, jc, hdr(tBindReceived))
	handle(jAddr, mConnect(j.id, h.blob))
	expectNext(t, jc, mFromTo(tAccepted, h.id, j.id))

	m := mRelay(j.id, h.id, make([]byte, 1200))
	garbage := []byte{0xDA, 0x72, 0x00, 0x0A, 1, 2, 3}
	stranger := netip.MustParseAddrPort("127.0.0.1:9")
	for _, tc := range []struct {
		name string
		from netip.AddrPort
		b    []byte
	}{
		{"forward", jAddr, m},
		{"garbage", stranger, garbage},
		{"unknown type", stranger, []byte{0xDA, 0x72, 0x00, 0x05}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if n := testing.AllocsPerRun(200, func() { handle(tc.from, tc.b) }); n != 0 {
				t.Fatalf("got %v allocations per message, want 0", n)
			}
		})
	}
}
