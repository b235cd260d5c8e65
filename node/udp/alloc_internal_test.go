package udp

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/time/rate"

	"github.com/switchboardgg/switchboard/internal/sealed"
	"github.com/switchboardgg/switchboard/protocol/roomudp"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
	"github.com/switchboardgg/switchboard/tokens"
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
	// Steady state: established at a validated address (pathcheck.go).
	ss := &session{s: s, open: open, send: seal, lim: rate.NewLimiter(rate.Inf, DefaultReadBurst),
		established: true, heardAny: true, addr: addr, path: pathState{validated: addr}}
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

	// An INPUTS datagram of inputs already taken: opened, parsed and
	// counted; and a FRAME queued with its acknowledgement.
	in, _ := (&roomwire.Input{AckFrame: 3, Data: []byte{1, 2, 3}}).AppendTo(nil)
	plain := []byte{roomudp.ChannelInputs}
	plain = roomudp.AppendInputsHeader(plain, 1, 3)
	for range 3 {
		plain = roomudp.AppendInputEntry(plain, in)
	}
	ss.inSeq.Store(3)
	dg := make([]byte, 0, roomudp.MaxDatagram)
	if n := testing.AllocsPerRun(100, func() {
		dg, _ = seal.Seal(dg[:0], plain)
		r.handle(dg, addr)
	}); n != 0 {
		t.Errorf("repeated INPUTS: %v allocations per datagram", n)
	}
	if got := testutil.ToFloat64(s.m.inputs[inputRepeat]); got < 300 {
		t.Errorf("%v repeats counted, want at least 300", got)
	}
	frame, _ := (&roomwire.Frame{Frames: []roomwire.TickFrame{{Number: 1}}}).AppendTo(nil)
	if n := testing.AllocsPerRun(100, func() {
		s.out.put(s, seal, roomudp.ChannelFrame, true, 3, frame, addr, false)
		s.out.done(s.out.take())
	}); n != 0 {
		t.Errorf("FRAME with its acknowledgement: %v allocations per datagram", n)
	}
	if n := testing.AllocsPerRun(100, func() {
		s.out.put(s, seal, roomudp.ChannelFrame, true, 3, frame, addr, true) // and once more, later
		s.out.done(s.out.take())
		s.out.again.release(s.out.again.n)
	}); n != 0 {
		t.Errorf("FRAME sent twice: %v allocations per datagram", n)
	}

	// Datagrams that alternate between the validated address and another
	// (forged sources, or a NAT flapping between two mappings): each move
	// starts a check and queues a PATH_CHALLENGE, each return abandons it;
	// and a PATH_RESPONSE that answers nothing. Nothing allocates.
	other := netip.MustParseAddrPort("127.0.0.1:10")
	ping := []byte{roomudp.ChannelMessage, byte(roomwire.TypePing), 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}
	stale := []byte{roomudp.ChannelPathResponse, 1, 2, 3, 4, 5, 6, 7, 8}
	if n := testing.AllocsPerRun(100, func() {
		dg, _ = seal.Seal(dg[:0], ping)
		r.handle(dg, other)
		dg, _ = seal.Seal(dg[:0], ping)
		r.handle(dg, addr)
		dg, _ = seal.Seal(dg[:0], stale)
		r.handle(dg, addr)
		s.out.done(s.out.take())
	}); n != 0 {
		t.Errorf("moves, challenges and a stale PATH_RESPONSE: %v allocations per datagram", n)
	}
	if got := testutil.ToFloat64(s.m.paths[pathAbandoned]); got < 100 {
		t.Errorf("%v checks abandoned, want at least 100", got)
	}
	if got := testutil.ToFloat64(s.m.drop[dropStale]); got < 100 {
		t.Errorf("%v stale responses, want at least 100", got)
	}
}

// BenchmarkQueueFrame is the node's cost of one FRAME to one player
// before the system call: seal a 60-byte message into the outgoing queue.
func BenchmarkQueueFrame(b *testing.B) {
	s := &Server{m: newMetrics()}
	s.out.init(1024)
	seal, _ := sealed.NewSealer(bytes.Repeat([]byte{1}, 32), 7)
	addr := netip.MustParseAddrPort("127.0.0.1:9")
	body := make([]byte, 60)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.out.seal(s, seal, roomudp.ChannelMessage, body, addr)
		if i%1000 == 999 {
			s.out.done(s.out.take())
		}
	}
}

// BenchmarkDropReplay is the cost of a replayed datagram: header, session
// lookup, replay window; no AEAD work.
func BenchmarkDropReplay(b *testing.B) {
	s := &Server{m: newMetrics(), sessions: map[uint32]*session{}}
	key := bytes.Repeat([]byte{1}, 32)
	seal, _ := sealed.NewSealer(key, 7)
	open, _ := sealed.NewOpener(key, 7)
	s.sessions[7] = &session{s: s, open: open}
	d, _ := seal.Seal(nil, make([]byte, 60))
	_, _, _ = open.Open(nil, d)
	r := &reader{s: s, plain: make([]byte, roomudp.MaxDatagram)}
	addr := netip.MustParseAddrPort("127.0.0.1:9")
	b.ReportAllocs()
	for b.Loop() {
		r.handle(d, addr)
	}
}

// BenchmarkDropForged is the cost of a forged datagram for a live key id:
// one failed AEAD open.
func BenchmarkDropForged(b *testing.B) {
	s := &Server{m: newMetrics(), sessions: map[uint32]*session{}}
	key := bytes.Repeat([]byte{1}, 32)
	seal, _ := sealed.NewSealer(key, 7)
	open, _ := sealed.NewOpener(key, 7)
	s.sessions[7] = &session{s: s, open: open}
	d, _ := seal.Seal(nil, make([]byte, 60))
	d[len(d)-1] ^= 1
	r := &reader{s: s, plain: make([]byte, roomudp.MaxDatagram)}
	addr := netip.MustParseAddrPort("127.0.0.1:9")
	b.ReportAllocs()
	for b.Loop() {
		r.handle(d, addr)
	}
}

// BenchmarkDropHandshake is the cost of an unauthenticated HANDSHAKE:
// two HMACs and an HKDF to derive its keys, one failed AEAD open.
func BenchmarkDropHandshake(b *testing.B) {
	signer, _ := tokens.NewSigner(bytes.Repeat([]byte{3}, 32))
	s := &Server{m: newMetrics(), sessions: map[uint32]*session{}, pending: map[hsKey]*session{},
		secret: signer.Derive(roomudp.SecretLabel), cfg: Config{MaxPending: 8, MaxSessions: 8}}
	d := make([]byte, roomudp.HandshakeSize)
	d[0] = roomudp.KindHandshake
	d[roomudp.HandshakeHeaderSize] = sealed.Version
	r := &reader{s: s, plain: make([]byte, roomudp.MaxDatagram)}
	addr := netip.MustParseAddrPort("127.0.0.1:9")
	b.ReportAllocs()
	for b.Loop() {
		r.handle(d, addr)
	}
}

// BenchmarkSessionDatagram is the reader's cost of one authenticated
// SESSION datagram at the session's validated address (an INPUTS of
// inputs already taken: open, replay window, heard and the path check,
// parse), its sealing by the client included.
func BenchmarkSessionDatagram(b *testing.B) {
	s := &Server{m: newMetrics(), sessions: map[uint32]*session{}}
	s.out.init(4)
	key := bytes.Repeat([]byte{1}, 32)
	seal, _ := sealed.NewSealer(key, 7)
	open, _ := sealed.NewOpener(key, 7)
	addr := netip.MustParseAddrPort("127.0.0.1:9")
	ss := &session{s: s, open: open, send: seal, lim: rate.NewLimiter(rate.Inf, DefaultReadBurst),
		established: true, heardAny: true, addr: addr, path: pathState{validated: addr}}
	ss.inSeq.Store(3)
	s.sessions[7] = ss
	in, _ := (&roomwire.Input{AckFrame: 3, Data: []byte{1, 2, 3}}).AppendTo(nil)
	plain := roomudp.AppendInputsHeader([]byte{roomudp.ChannelInputs}, 1, 3)
	for range 3 {
		plain = roomudp.AppendInputEntry(plain, in)
	}
	r := &reader{s: s, plain: make([]byte, roomudp.MaxDatagram)}
	dg := make([]byte, 0, roomudp.MaxDatagram)
	b.ReportAllocs()
	for b.Loop() {
		dg, _ = seal.Seal(dg[:0], plain)
		r.handle(dg, addr)
	}
}
