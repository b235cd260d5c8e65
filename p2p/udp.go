package p2p

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/switchboardgg/switchboard/internal/p2pseal"
	"github.com/switchboardgg/switchboard/internal/sealed"
	"github.com/switchboardgg/switchboard/internal/udpio"
	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// udpPeer is a peer's UDP session with the hub: the key of WELCOME, the
// endpoint its authenticated datagrams come from, its datagram rate and
// its counters. It lives as long as the peer (across resumes).
type udpPeer struct {
	keyID  uint32
	secret [p2pwire.UDPSecretSize]byte
	side   p2pseal.Side

	// ep is where the hub sends the peer's datagrams: the source of its
	// newest authenticated datagram (pathcheck.go); nil until the first.
	// Written under mu, read without it.
	ep atomic.Pointer[netip.AddrPort]

	mu    sync.Mutex
	rate  bucket           // guarded by mu
	cands []netip.AddrPort // guarded by mu; of the last REGISTER
	path  pathState        // guarded by mu

	dgIn, dgOut, bytesIn, bytesOut atomic.Uint64
}

// UDPStats are one peer's counters on the hub's UDP port.
type UDPStats struct {
	// Endpoint is where the peer's datagrams come from (its NAT mapping),
	// the source of its newest authenticated one; invalid until the first.
	Endpoint netip.AddrPort
	// Validated reports whether the peer answered a PATH_CHALLENGE from
	// Endpoint (docs/protocol/p2p.md §12.4): until then, what the hub
	// sends there is held to 3 times what came from it.
	Validated bool
	// Candidates are the local endpoints of its last REGISTER.
	Candidates []netip.AddrPort
	// DatagramsIn and BytesIn count its authenticated datagrams, whole
	// (sealed) sizes; DatagramsOut and BytesOut what the hub sent it.
	DatagramsIn, DatagramsOut, BytesIn, BytesOut uint64
}

// addUDPPeer draws a fresh UDP key for p and makes its key id find p.
func (h *Hub) addUDPPeer(p *peer) error {
	u := &udpPeer{rate: newBucket(h.cfg.PeerDatagramRate)}
	if _, err := rand.Read(u.secret[:]); err != nil {
		return fmt.Errorf("p2p: UDP secret: %w", err)
	}
	h.kmu.Lock()
	defer h.kmu.Unlock()
	var b [4]byte
	for u.keyID == 0 || h.keys[u.keyID] != nil {
		if _, err := rand.Read(b[:]); err != nil {
			return fmt.Errorf("p2p: UDP key id: %w", err)
		}
		u.keyID = binary.BigEndian.Uint32(b[:])
	}
	side, err := p2pseal.HubSide(u.secret[:], u.keyID)
	if err != nil {
		return err
	}
	u.side = side
	p.udp = u
	h.keys[u.keyID] = p
	return nil
}

// dropUDPPeer forgets p's key: its datagrams are dropped from now on.
func (h *Hub) dropUDPPeer(p *peer) {
	if p.udp == nil {
		return
	}
	h.kmu.Lock()
	delete(h.keys, p.udp.keyID)
	h.kmu.Unlock()
}

// udpSock is the hub's UDP socket and its reader's buffers.
type udpSock struct {
	pc *net.UDPConn
	uc *udpio.Conn

	in    []udpio.Message
	out   []udpio.Message // sealed datagrams waiting for WriteBatch
	plain []byte          // the opened datagram
	stamp []byte          // the stamped plaintext being re-sealed
	stun  stunState
}

// PeerUDP returns the UDP counters of peer id of network, and false when
// there is no such peer.
func (h *Hub) PeerUDP(networkName, id string) (UDPStats, bool) {
	h.mu.Lock()
	n := h.networks[networkName]
	h.mu.Unlock()
	if n == nil {
		return UDPStats{}, false
	}
	n.mu.RLock()
	p := n.peers[id]
	n.mu.RUnlock()
	if p == nil || p.udp == nil {
		return UDPStats{}, false
	}
	u := p.udp
	s := UDPStats{
		DatagramsIn: u.dgIn.Load(), DatagramsOut: u.dgOut.Load(),
		BytesIn: u.bytesIn.Load(), BytesOut: u.bytesOut.Load(),
	}
	u.mu.Lock()
	if ep := u.ep.Load(); ep != nil {
		s.Endpoint = *ep
		s.Validated = *ep == u.path.validated
	}
	s.Candidates = append([]netip.AddrPort(nil), u.cands...)
	u.mu.Unlock()
	return s, true
}

// ServeUDP serves the hub's UDP port on pc (bind it to the TLS listener's
// port number): sealed datagrams of registered peers and STUN binding
// requests, until Shutdown or Close; it closes pc. It returns
// ErrServerClosed then, and the socket's error otherwise. A hub serves
// one UDP socket: a second ServeUDP fails.
func (h *Hub) ServeUDP(pc *net.UDPConn) error {
	uc, err := udpio.New(pc, udpio.Config{Batch: h.cfg.UDPBatch})
	if err != nil {
		_ = pc.Close()
		return fmt.Errorf("p2p: UDP: %w", err)
	}
	s := &udpSock{pc: pc, uc: uc,
		in:    make([]udpio.Message, uc.Batch()),
		out:   make([]udpio.Message, 0, 4*uc.Batch()),
		plain: make([]byte, 0, p2pwire.MaxDatagramSize),
		stamp: make([]byte, 0, p2pwire.MaxOpenedSize),
	}
	s.stun.init(h.cfg)
	for i := range s.in {
		s.in[i].Buf = make([]byte, p2pwire.MaxDatagramSize+1) // one more: larger is seen as too large
	}
	h.mu.Lock()
	switch {
	case h.closing:
		h.mu.Unlock()
		_ = pc.Close()
		return ErrServerClosed
	case h.udp != nil:
		h.mu.Unlock()
		_ = pc.Close()
		return errors.New("p2p: the hub serves a UDP socket already")
	}
	h.udp = s
	h.mu.Unlock()
	defer func() { _ = pc.Close() }()
	for {
		n, err := uc.ReadBatch(s.in)
		if err != nil {
			h.mu.Lock()
			closing := h.closing
			h.mu.Unlock()
			if closing || errors.Is(err, net.ErrClosed) {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("p2p: UDP read: %w", err)
		}
		now := h.cfg.Now().UnixNano()
		for i := range n {
			m := &s.in[i]
			h.handleDatagram(s, m.Buf[:m.N], m.Addr, now)
		}
		h.flushUDP(s)
	}
}

// flushUDP writes the queued datagrams.
func (h *Hub) flushUDP(s *udpSock) {
	if len(s.out) == 0 {
		return
	}
	sent, _ := s.uc.WriteBatch(s.out)
	h.m.udpOut.Add(float64(sent))
	if sent < len(s.out) {
		h.m.udpDrop["write_failed"].Add(float64(len(s.out) - sent))
	}
	s.out = s.out[:0]
}

// queue returns the next out message's buffer, flushing when full.
func (h *Hub) queue(s *udpSock) *udpio.Message {
	if len(s.out) == cap(s.out) {
		h.flushUDP(s)
	}
	s.out = s.out[:len(s.out)+1]
	m := &s.out[len(s.out)-1]
	if m.Buf == nil {
		m.Buf = make([]byte, 0, p2pwire.MaxDatagramSize)
	}
	return m
}

// unqueue takes back the last queued message (its sealing failed).
func unqueue(s *udpSock) { s.out = s.out[:len(s.out)-1] }

// handleDatagram acts on one datagram from src.
func (h *Hub) handleDatagram(s *udpSock, d []byte, src netip.AddrPort, now int64) {
	h.m.udpIn.Inc()
	src = netip.AddrPortFrom(src.Addr().Unmap(), src.Port())
	switch {
	case len(d) == 0:
		h.m.udpDrop["not_ours"].Inc()
		return
	case d[0] < 0x40:
		h.handleSTUN(s, d, src, now)
		return
	}
	hd, _, _, err := p2pwire.ParseSealed(d)
	if err != nil {
		h.m.udpDrop["not_ours"].Inc()
		return
	}
	h.kmu.RLock()
	p := h.keys[hd.KeyID]
	h.kmu.RUnlock()
	if p == nil {
		h.m.udpDrop["unknown_key"].Inc()
		return
	}
	u := p.udp
	plain, seq, err := u.side.Open.Open(s.plain[:0], d)
	switch {
	case errors.Is(err, sealed.ErrReplay):
		h.m.udpDrop["replay"].Inc()
		return
	case err != nil:
		h.m.udpDrop["unauthenticated"].Inc()
		return
	}
	u.dgIn.Add(1)
	u.bytesIn.Add(uint64(len(d)))
	h.heard(s, p, src, seq, len(d), now) // the endpoint, its budget, a challenge (pathcheck.go)
	if !h.takeDatagrams(p, now, 1) {     // every datagram: REGISTER and PING cost the hub too
		h.m.udpDrop["rate_limited"].Inc()
		return
	}
	r, err := p2pwire.DecodeRouting(plain)
	if err != nil || !r.Kind.OnDatagram() || !r.FromPeer() {
		h.m.udpDrop["malformed"].Inc()
		return
	}
	switch {
	case r.Kind == p2pwire.KindRegister:
		h.register(s, p, plain, src, now)
	case r.Kind == p2pwire.KindPing:
		var ping p2pwire.Ping
		if ping.Unmarshal(plain) != nil {
			h.m.udpDrop["malformed"].Inc()
			return
		}
		var b [16]byte
		pong, _ := (&p2pwire.Pong{Value: ping.Value}).AppendTo(b[:0])
		h.sendTo(s, p, pong, src, now)
	case r.Kind == p2pwire.KindPathResponse:
		h.pathResponse(p, plain, src)
	case r.Kind.Routed():
		h.routeDatagram(s, p, &r, plain, now)
	default:
		h.m.udpDrop["malformed"].Inc() // a control kind the hub does not take on UDP
	}
}

// register records a peer's candidates and answers REGISTERED.
func (h *Hub) register(s *udpSock, p *peer, plain []byte, src netip.AddrPort, now int64) {
	var m p2pwire.Register
	if m.Unmarshal(plain) != nil {
		h.m.udpDrop["malformed"].Inc()
		return
	}
	u := p.udp
	u.mu.Lock()
	u.cands = m.Candidates
	u.mu.Unlock()
	var b [32]byte
	out, err := (&p2pwire.Registered{Observed: src}).AppendTo(b[:0])
	if err != nil {
		h.m.udpDrop["malformed"].Inc()
		return
	}
	if h.sendTo(s, p, out, src, now) {
		h.m.udpRegisters.Inc()
	}
}

// seal queues plain sealed with p's key to addr, whatever the path check
// says (sendTo asks it), and reports whether it did.
func (h *Hub) seal(s *udpSock, p *peer, plain []byte, addr netip.AddrPort) bool {
	m := h.queue(s)
	d, err := p.udp.side.Seal.Seal(m.Buf[:0], plain)
	if err != nil {
		unqueue(s)
		h.m.udpDrop["seal_failed"].Inc()
		return false
	}
	m.Buf, m.Addr = d, addr
	p.udp.dgOut.Add(1)
	p.udp.bytesOut.Add(uint64(len(d)))
	return true
}

// routeDatagram stamps a routed datagram from p and re-seals it for its
// destination, or for every other registered peer of p's network.
func (h *Hub) routeDatagram(s *udpSock, p *peer, r *p2pwire.Routing, plain []byte, now int64) {
	rest := plain[r.Size:]
	if len(rest) > p2pwire.MaxRoutedRest {
		h.m.udpDrop["too_large"].Inc()
		return
	}
	st, err := p2pwire.AppendStampedRouting(s.stamp[:0], r, p.idb)
	if err != nil {
		h.m.udpDrop["malformed"].Inc()
		return
	}
	st = append(st, rest...)
	s.stamp = st
	n := p.net
	n.mu.RLock()
	defer n.mu.RUnlock()
	if !r.Broadcast() {
		q := n.peers[string(r.To)]
		switch {
		case q == nil || q == p:
			h.m.udpDrop["unknown_peer"].Inc()
			return
		case q.udp == nil || q.udp.ep.Load() == nil:
			h.m.udpDrop["not_registered"].Inc()
			return
		}
		if h.sendTo(s, q, st, *q.udp.ep.Load(), now) {
			h.m.udpRouted.Inc()
		}
		return
	}
	h.m.udpBroadcasts.Inc()
	// One token was taken on arrival; a broadcast costs one per recipient.
	if extra := len(n.peers) - 2; extra > 0 && !h.takeDatagrams(p, now, float64(extra)) {
		h.m.udpDrop["rate_limited"].Inc()
		return
	}
	for _, q := range n.peers {
		if q == p || q.udp == nil {
			continue
		}
		ep := q.udp.ep.Load()
		if ep == nil {
			continue
		}
		if h.sendTo(s, q, st, *ep, now) {
			h.m.udpRouted.Inc()
		}
	}
}

// takeDatagrams takes n from p's datagram rate.
func (h *Hub) takeDatagrams(p *peer, now int64, n float64) bool {
	u := p.udp
	u.mu.Lock()
	ok := u.rate.take(now, n)
	u.mu.Unlock()
	return ok
}
