package p2p

import (
	"bytes"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/internal/p2pseal"
	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// FuzzDispatchDatagram feeds arbitrary opened plaintexts to the UDP
// reader's dispatch, as from the hub and as from a direct path (no hub):
// it never panics, delivers only whole envelopes, the jumbo reassembly's
// memory stays within its bounds, and what it answers is right: a PING
// from the hub gets a PONG with its value, a PATH_CHALLENGE from the hub
// a PATH_RESPONSE with its data (the test's socket is the "hub", so the
// answers come back to it, sealed with the peer's key).
func FuzzDispatchDatagram(f *testing.F) {
	uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		f.Fatal(err)
	}
	defer func() { _ = uc.Close() }()
	side, err := p2pseal.PeerSide(bytes.Repeat([]byte{1}, 32), 1)
	if err != nil {
		f.Fatal(err)
	}
	cfg := (&Config{JumboMemory: 4 << 10, JumboTotalMemory: 8 << 10, JumboTimeout: time.Millisecond}).resolve()
	p := &Peer{cfg: cfg, id: "me~1", msgs: make(chan *Message, 1), closing: make(chan struct{})}
	u := &udpSide{
		conn: uc, hubAddr: uc.LocalAddr().(*net.UDPAddr).AddrPort(), regCh: make(chan struct{}),
		plain: make([]byte, 0, p2pwire.MaxOpenedSize), out: make([]byte, 0, p2pwire.MaxDatagramSize),
		direct: map[string]*directPath{}, byKey: map[uint32]*directPath{}, handlers: map[p2pwire.Kind]datagramHandler{},
		stop: make(chan struct{}),
	}
	u.hub.Store(&hubSession{keyID: 1, side: side})
	hubSide, err := p2pseal.HubSide(bytes.Repeat([]byte{1}, 32), 1)
	if err != nil {
		f.Fatal(err)
	}
	buf := make([]byte, p2pwire.MaxDatagramSize)
	u.reasm.init(cfg)
	p.udp = u
	for _, m := range []p2pwire.Message{
		&p2pwire.UDPMsg{Route: p2pwire.Route{From: "bob~2"}, Envelope: p2pwire.Envelope{Payload: []byte("x")}},
		&p2pwire.UDPMsg{Route: p2pwire.Route{From: "bob~2", Broadcast: true}, Envelope: p2pwire.Envelope{Header: "h"}},
		&p2pwire.UDPMsg{Envelope: p2pwire.Envelope{Payload: []byte("direct")}},
		&p2pwire.Jumbo{Route: p2pwire.Route{From: "bob~2"}, MessageID: 1, Count: 2, Total: 1030, Index: 0, Chunk: make([]byte, 1024)},
		&p2pwire.Jumbo{Route: p2pwire.Route{From: "bob~2"}, MessageID: 1, Count: 2, Total: 1030, Index: 1, Chunk: []byte{0, 0, 0, 0, 0, 0}},
		&p2pwire.Jumbo{MessageID: 2, Count: 1, Total: 1, Chunk: []byte{0}},
		&p2pwire.Registered{Observed: netip.MustParseAddrPort("1.2.3.4:5")},
		&p2pwire.Ping{Value: 3},
		&p2pwire.Reliable{Route: p2pwire.Route{From: "bob~2"}, Channel: 1, Segment: []byte{1}},
		&p2pwire.PathChallenge{Data: p2pwire.PathData{1, 2, 3, 4, 5, 6, 7, 8}},
		&p2pwire.PathResponse{Data: p2pwire.PathData{1, 2, 3, 4, 5, 6, 7, 8}},
	} {
		b, _ := m.AppendTo(nil)
		f.Add(false, b)
		f.Add(true, b)
	}
	src := netip.MustParseAddrPort("127.0.0.1:9")
	f.Fuzz(func(t *testing.T, direct bool, plain []byte) {
		path, from := PathHub, ""
		if direct {
			path, from = PathDirectUDP, "bob~2"
		}
		p.dispatchDatagram(path, from, src, 1, plain, time.Now())
		var want p2pwire.Message // the answer due to the hub
		if m, err := p2pwire.Decode(plain); err == nil && !direct {
			switch m := m.(type) {
			case *p2pwire.Ping:
				want = &p2pwire.Pong{Value: m.Value}
			case *p2pwire.PathChallenge:
				want = &p2pwire.PathResponse{Data: m.Data}
			}
		}
		if want != nil {
			_ = uc.SetReadDeadline(time.Now().Add(5 * time.Second))
			n, _, err := uc.ReadFromUDPAddrPort(buf)
			if err != nil {
				t.Fatalf("no answer to %x: %v", plain, err)
			}
			got, _, err := hubSide.Open.Open(nil, buf[:n])
			if w, _ := want.AppendTo(nil); err != nil || !bytes.Equal(got, w) {
				t.Fatalf("answer to %x: %x, %v; want %x", plain, got, err, w)
			}
		}
		select {
		case m := <-p.msgs:
			if !m.UDP || m.From == "" {
				t.Fatalf("delivered %+v", m)
			}
			e := p2pwire.Envelope{Header: m.Header, Pairs: m.Pairs, Payload: m.Payload}
			if _, err := e.AppendTo(nil); err != nil {
				t.Fatalf("delivered an envelope that does not encode: %v", err)
			}
		default:
		}
		r := &u.reasm
		r.mu.Lock()
		used, sum := r.used, 0
		for _, s := range r.bySender {
			sum += s.used
			if s.used > cfg.JumboMemory {
				t.Fatalf("a sender holds %d bytes, over %d", s.used, cfg.JumboMemory)
			}
		}
		r.mu.Unlock()
		if used != sum || used < 0 || used > cfg.JumboTotalMemory {
			t.Fatalf("reassembly memory %d (senders %d), bound %d", used, sum, cfg.JumboTotalMemory)
		}
		r.sweep(p, time.Now().Add(time.Hour))
	})
}
