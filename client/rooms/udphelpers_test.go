package rooms

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net"
	"net/netip"
	"sync"
	"testing"

	"github.com/switchboardgg/switchboard/internal/kcploop"
	"github.com/switchboardgg/switchboard/internal/sealed"
	"github.com/switchboardgg/switchboard/protocol/roomudp"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// fakeUDPNode is the node side of docs/protocol/rooms-udp.md on a real
// 127.0.0.1 socket, built from the same codec (roomudp, sealed, kcploop):
// it answers each HANDSHAKE with answer's message (WELCOME by default)
// and hands every session to sessions.
type fakeUDPNode struct {
	t     *testing.T
	pc    *net.UDPConn
	key   [roomudp.KeySize]byte
	keyID roomudp.KeyID
	loop  *kcploop.Loop
	wg    sync.WaitGroup

	sessions chan *udpSession

	mu       sync.Mutex
	answer   func(hs roomwire.Handshake) roomwire.Message
	nextConv uint32
	byConv   map[uint32]*udpSession
	replied  map[[roomudp.NonceSize]byte]bool
}

// udpSession is one client session as the fake node sees it.
type udpSession struct {
	n      *fakeUDPNode
	hs     roomwire.Handshake
	conv   uint32
	sealer *sealed.Sealer
	opener *sealed.Opener
	kc     *kcploop.Conv
	in     chan udpMsg
	// inputs gets the (first, count) of every INPUTS datagram
	inputs chan [2]uint32
	// paths gets every PATH_RESPONSE that authenticates, with its source
	paths chan pathResponse

	mu    sync.Mutex
	twice bool   // send every datagram twice, as the node does under loss
	inSeq uint32 // the highest input sequence delivered
	// inNewest counts the inputs first delivered by a datagram whose
	// newest entry they were: sent for them (or repeated for them), not
	// brought late by the next input's datagram
	inNewest int
	addr     netip.AddrPort
	buf      []byte
}

// pathResponse is a PATH_RESPONSE the fake node received.
type pathResponse struct {
	data roomudp.PathData
	from netip.AddrPort
}

// udpMsg is one message from the client and how it came.
type udpMsg struct {
	m          roomwire.Message
	unreliable bool
}

func newFakeUDPNode(t *testing.T) *fakeUDPNode {
	t.Helper()
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	loop, err := kcploop.New(kcploop.Config{})
	if err != nil {
		t.Fatal(err)
	}
	n := &fakeUDPNode{
		t: t, pc: pc, loop: loop, sessions: make(chan *udpSession, 16),
		nextConv: 7, byConv: make(map[uint32]*udpSession), replied: make(map[[roomudp.NonceSize]byte]bool),
	}
	_, _ = rand.Read(n.key[:])
	_, _ = rand.Read(n.keyID[:])
	n.wg.Add(2)
	go func() { defer n.wg.Done(); _ = loop.Run(t.Context()) }()
	go n.read()
	t.Cleanup(func() {
		loop.Close()
		pc.Close()
		n.wg.Wait()
	})
	return n
}

// connectFields are the C1 connect fields that point at the node.
func (n *fakeUDPNode) connectFields() map[string]any {
	return map[string]any{
		"udp": n.pc.LocalAddr().String(), "session_key": base64.StdEncoding.EncodeToString(n.key[:]),
		"key_id": n.keyID.String(), "transport": "udp",
	}
}

func (n *fakeUDPNode) setAnswer(f func(hs roomwire.Handshake) roomwire.Message) {
	n.mu.Lock()
	n.answer = f
	n.mu.Unlock()
}

func (n *fakeUDPNode) read() {
	defer n.wg.Done()
	buf := make([]byte, 2048)
	for {
		k, from, err := n.pc.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		b := buf[:k]
		switch b[0] {
		case roomudp.KindHandshake:
			n.handshake(from, b)
		case roomudp.KindSession:
			h, err := sealed.ParseHeader(b)
			if err != nil {
				continue
			}
			n.mu.Lock()
			s := n.byConv[h.KeyID]
			n.mu.Unlock()
			if s != nil {
				s.input(from, b)
			}
		}
	}
}

func (n *fakeUDPNode) handshake(from netip.AddrPort, b []byte) {
	h, err := roomudp.ParseHandshake(b)
	if err != nil || h.KeyID != n.keyID {
		return
	}
	keys, err := roomudp.HandshakeKeys(&n.key, &h.ClientNonce)
	if err != nil {
		return
	}
	op, _ := sealed.NewOpener(keys.I2R[:], roomudp.HandshakeKeyID)
	p, _, err := op.Open(nil, h.Sealed)
	if err != nil {
		return
	}
	raw, err := roomudp.HandshakeBytes(p)
	if err != nil {
		return
	}
	hs, err := roomwire.ParseHandshake(raw)
	if err != nil {
		return
	}
	hs.Token = append([]byte(nil), hs.Token...)
	n.mu.Lock()
	if n.replied[h.ClientNonce] { // a retransmission: answered already
		n.mu.Unlock()
		return
	}
	n.replied[h.ClientNonce] = true
	answer := n.answer
	conv := n.nextConv
	n.nextConv++
	n.mu.Unlock()
	var msg roomwire.Message = welcome(0, "rt-udp")
	if answer != nil {
		msg = answer(hs)
	}
	if msg == nil {
		return // stay silent
	}
	var serverNonce [roomudp.NonceSize]byte
	_, _ = rand.Read(serverNonce[:])
	if w, ok := msg.(*roomwire.Welcome); ok {
		w.Conv = conv
		sk, _ := roomudp.SessionKeys(&n.key, &h.ClientNonce, &serverNonce)
		s := &udpSession{n: n, hs: hs, conv: conv, addr: from, in: make(chan udpMsg, 1024), inputs: make(chan [2]uint32, 1024),
			paths: make(chan pathResponse, 64)}
		s.sealer, _ = sealed.NewSealer(sk.R2I[:], conv)
		s.opener, _ = sealed.NewOpener(sk.I2R[:], conv)
		s.kc, err = n.loop.Open(conv, kcploop.ConvConfig{
			MTU: roomudp.DefaultMTU - roomudp.SessionOverhead, SendWindow: roomudp.KCPWindow, RecvWindow: roomudp.KCPWindow,
			NoDelay: true, Interval: roomudp.KCPInterval, MaxMessage: udpMaxMessage,
		}, func(_ *kcploop.Conv, b []byte) { s.write(roomudp.ChannelKCP, b) })
		if err != nil {
			n.t.Errorf("fake node: open conv: %v", err)
			return
		}
		n.mu.Lock()
		n.byConv[conv] = s
		n.mu.Unlock()
		n.sessions <- s
	}
	body, _ := roomwire.Append(nil, msg)
	hsSealer, _ := sealed.NewSealer(keys.R2I[:], roomudp.HandshakeKeyID)
	out, _ := hsSealer.Seal(nil, roomudp.AppendReply(nil, &serverNonce, body))
	_, _ = n.pc.WriteToUDPAddrPort(out, from)
}

// next returns the next session after its handshake.
func (n *fakeUDPNode) next() *udpSession {
	n.t.Helper()
	return recv(n.t, n.sessions, "udp session")
}

func (s *udpSession) write(channel byte, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(append(s.buf[:0], channel), body...)
	out, err := s.sealer.Seal(nil, s.buf)
	if err != nil {
		return
	}
	_, _ = s.n.pc.WriteToUDPAddrPort(out, s.addr)
	if s.twice {
		_, _ = s.n.pc.WriteToUDPAddrPort(out, s.addr) // the node's copy under loss
	}
}

func (s *udpSession) input(from netip.AddrPort, b []byte) {
	p, _, err := s.opener.Open(nil, b)
	if err != nil {
		return
	}
	s.mu.Lock()
	s.addr = from
	s.mu.Unlock()
	ch, body, err := roomudp.ParseSession(p)
	if err != nil {
		return
	}
	if ch == roomudp.ChannelMessage {
		s.deliver(body, true)
		return
	}
	if ch == roomudp.ChannelPathResponse {
		if d, err := roomudp.ParsePath(body); err == nil {
			select {
			case s.paths <- pathResponse{d, from}:
			default:
			}
		}
		return
	}
	if ch == roomudp.ChannelInputs { // as the node: each new INPUT once
		in, err := roomudp.ParseInputs(body)
		if err != nil {
			return
		}
		select {
		case s.inputs <- [2]uint32{in.FirstSeq, uint32(in.Count)}:
		default:
		}
		for {
			seq, msg, ok := in.Next()
			if !ok {
				return
			}
			s.mu.Lock()
			fresh := seq > s.inSeq
			if fresh {
				s.inSeq = seq
				if seq == in.FirstSeq+uint32(in.Count)-1 {
					s.inNewest++
				}
			}
			s.mu.Unlock()
			if fresh {
				s.deliver(msg, true)
			}
		}
	}
	if s.kc.Input(body) != nil {
		return
	}
	buf := make([]byte, udpMaxMessage)
	for {
		k, err := s.kc.Recv(buf)
		if err != nil {
			return
		}
		s.deliver(buf[:k], false)
	}
}

func (s *udpSession) deliver(b []byte, unreliable bool) {
	m, err := roomwire.Decode(b)
	if err != nil {
		return
	}
	select {
	case s.in <- udpMsg{clone(m), unreliable}:
	default:
	}
}

// sendReliable sends m on KCP; sendUnreliable in one MESSAGE datagram.
func (s *udpSession) sendReliable(t *testing.T, m roomwire.Message) {
	t.Helper()
	b, err := roomwire.Append(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.kc.Send(b); err != nil {
		t.Fatal(err)
	}
}

func (s *udpSession) sendUnreliable(t *testing.T, m roomwire.Message) {
	t.Helper()
	b, err := roomwire.Append(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	s.write(roomudp.ChannelMessage, b)
}

// sendFrame sends m on the FRAME channel acknowledging input seq ack.
func (s *udpSession) sendFrame(t *testing.T, ack uint32, m *roomwire.Frame) {
	t.Helper()
	b, err := roomwire.Append(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	s.write(roomudp.ChannelFrame, roomudp.AppendFrame(nil, ack, b))
}

// recvType returns the next client message of type typ, skipping others.
func (s *udpSession) recvType(t *testing.T, typ roomwire.Type) udpMsg {
	t.Helper()
	for {
		m := recv(t, s.in, "client message "+typ.String())
		if m.m.Type() == typ {
			return m
		}
	}
}

// stop makes the node forget the session: the client hears nothing more.
func (s *udpSession) stop() {
	s.n.mu.Lock()
	delete(s.n.byConv, s.conv)
	s.n.mu.Unlock()
	s.kc.Close()
}

// lose seals a datagram and sends it nowhere: the client sees a gap in the
// node's sequence numbers, as after a loss on the way.
func (s *udpSession) lose() {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = s.sealer.Seal(nil, []byte{roomudp.ChannelMessage})
}

// newest returns how many inputs the node took from a datagram whose
// newest entry they were.
func (s *udpSession) newest() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inNewest
}
