package udp

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/switchboardgg/switchboard/internal/sealed"
	"github.com/switchboardgg/switchboard/protocol/roomudp"
)

// TestHotPathsAllocateNothing: queuing a sealed datagram, and dropping a
// replayed, forged or unknown-key one, allocate nothing per datagram.
func TestHotPathsAllocateNothing(t *testing.T) {
	s := &Server{m: newMetrics(), sessions: map[uint32]*session{}, pending: map[hsKey]*session{}}
	s.out.init(4)
	key := bytes.Repeat([]byte{1}, 32)
	seal, _ := sealed.NewSealer(key, 7)
	addr := netip.MustParseAddrPort("127.0.0.1:9")
	body := make([]byte, 200)
	if n := testing.AllocsPerRun(100, func() {
		s.out.seal(s, seal, roomudp.ChannelMessage, body, addr)
		s.out.done(s.out.take())
	}); n != 0 {
		t.Errorf("seal and queue: %v allocations per datagram", n)
	}

	open, _ := sealed.NewOpener(key, 7)
	ss := &session{s: s, open: open}
	s.sessions[7] = ss
	r := &reader{s: s, plain: make([]byte, roomudp.MaxDatagram)}
	d, _ := seal.Seal(nil, []byte{roomudp.ChannelMessage, 0x50})
	if _, _, err := open.Open(nil, d); err != nil {
		t.Fatal(err)
	}
	forged, _ := seal.Seal(nil, []byte{roomudp.ChannelMessage, 0x50})
	forged[len(forged)-1] ^= 1
	stranger, _ := sealed.NewSealer(key, 8)
	unknown, _ := stranger.Seal(nil, []byte{roomudp.ChannelMessage, 0x50})
	for name, dg := range map[string][]byte{"replay": d, "forged": forged, "unknown key": unknown, "kind": {9, 9}} {
		if n := testing.AllocsPerRun(100, func() { r.handle(dg, addr) }); n != 0 {
			t.Errorf("%s: %v allocations per datagram", name, n)
		}
	}
}
