package p2p

import (
	"net/netip"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/internal/udpio"
	"github.com/switchboardgg/switchboard/protocol/p2pwire"
	"github.com/switchboardgg/switchboard/tokens"
)

// FuzzUDPDatagram feeds arbitrary datagrams, and arbitrary plaintexts
// sealed with a peer's real key, to the hub's UDP handling (no sockets),
// from the peer's validated endpoint or from another source: it never
// panics; an unauthenticated datagram is never answered, except a STUN
// binding request (one answer); an authenticated one yields at most one
// datagram per other peer of the network, or an answer, and perhaps a
// PATH_CHALLENGE, each a whole sealed datagram no larger than the
// protocol allows; and what goes to the other source, which never
// answers a challenge, stays within 3 times the authenticated bytes that
// came from it.
func FuzzUDPDatagram(f *testing.F) {
	keys, err := tokens.NewHubKeyring(tokens.HubKey{ID: 1, Secret: testSecret})
	if err != nil {
		f.Fatal(err)
	}
	h, err := New(Config{ID: testHubID, Keyring: keys, TLS: fuzzTLS(f)})
	if err != nil {
		f.Fatal(err)
	}
	n := &network{name: "lobby", peers: map[string]*peer{}}
	var ps []*peer
	for i, id := range []string{"alice~1", "bob~2", "carol~3"} {
		p := &peer{id: id, idb: []byte(id), net: n}
		if err := h.addUDPPeer(p); err != nil {
			f.Fatal(err)
		}
		ep := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(4000+i))
		p.udp.ep.Store(&ep)
		p.udp.path.validated = ep
		n.peers[id] = p
		ps = append(ps, p)
	}
	for _, m := range []p2pwire.Message{
		&p2pwire.UDPMsg{Route: p2pwire.Route{To: "bob~2"}, Envelope: p2pwire.Envelope{Payload: []byte("x")}},
		&p2pwire.UDPMsg{Route: p2pwire.Route{Broadcast: true}, Envelope: p2pwire.Envelope{Header: "h"}},
		&p2pwire.Jumbo{Route: p2pwire.Route{To: "carol~3"}, MessageID: 1, Count: 1, Total: 1, Chunk: []byte{0}},
		&p2pwire.Reliable{Route: p2pwire.Route{To: "bob~2"}, Channel: 1, Segment: []byte{1}},
		&p2pwire.Register{Candidates: []netip.AddrPort{netip.MustParseAddrPort("10.0.0.1:5")}},
		&p2pwire.Ping{Value: 1},
	} {
		b, _ := m.AppendTo(nil)
		f.Add(true, false, b)
		f.Add(true, true, b)
		d, _ := ps[0].udp.side.Seal.Seal(nil, b)
		f.Add(false, false, d)
	}
	f.Add(false, false, []byte{0x00, 0x01, 0x00, 0x00, 0x21, 0x12, 0xa4, 0x42, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}) // a binding request
	f.Add(false, false, []byte{p2pwire.SealedMarker, 0, 0, 0, 1})
	home := netip.MustParseAddrPort("127.0.0.1:4000")
	other := netip.MustParseAddrPort("192.0.2.7:9")
	var fromOther, toOther int // bytes, over the whole run
	s := &udpSock{out: make([]udpio.Message, 0, 16), plain: make([]byte, 0, p2pwire.MaxDatagramSize), stamp: make([]byte, 0, p2pwire.MaxOpenedSize)}
	s.stun.init(h.cfg)
	f.Fuzz(func(t *testing.T, seal, moved bool, data []byte) {
		d := data
		if seal {
			if len(data) > p2pwire.MaxOpenedSize {
				return
			}
			d, _ = ps[0].udp.side.Seal.Seal(nil, data)
		}
		src := home
		if moved {
			src = other
		}
		s.out = s.out[:0]
		in := ps[0].udp.bytesIn.Load()
		h.handleDatagram(s, d, src, time.Now().UnixNano())
		if moved {
			fromOther += int(ps[0].udp.bytesIn.Load() - in)
		}
		challenges := 0
		for _, m := range s.out {
			if m.Addr == other && m.Buf[0] == p2pwire.SealedMarker { // not a STUN answer
				toOther += len(m.Buf)
			}
			if m.Addr == src && len(m.Buf) == 2+p2pwire.PathDataSize+p2pwire.SealedHeaderSize+p2pwire.TagSize {
				challenges++ // or a PONG of the same size: counted once at most either way
			}
		}
		if toOther > 3*fromOther {
			t.Fatalf("%d bytes to a source that never answered, for %d from it", toOther, fromOther)
		}
		switch {
		case !seal && len(d) > 0 && d[0] < 0x40:
			if len(s.out) > 1 {
				t.Fatalf("%d answers to a STUN-range datagram", len(s.out))
			}
		case !seal && len(s.out) > 0:
			// Only a datagram sealed with a real key (a seed) may be answered.
			if _, _, _, err := p2pwire.ParseSealed(d); err != nil {
				t.Fatalf("an unparsable datagram was answered")
			}
		}
		if len(s.out) > max(len(ps)-1, 1)+min(challenges, 1) {
			t.Fatalf("%d datagrams out for one in", len(s.out))
		}
		for _, m := range s.out {
			if len(m.Buf) > p2pwire.MaxDatagramSize {
				t.Fatalf("a %d-byte datagram out", len(m.Buf))
			}
			if m.Buf[0] != p2pwire.SealedMarker && !(len(d) > 0 && d[0] < 0x40) {
				t.Fatalf("an unsealed answer %x", m.Buf)
			}
		}
	})
}
