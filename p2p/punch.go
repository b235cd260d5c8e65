package p2p

import (
	"crypto/rand"
	"encoding/binary"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// Hole-punch brokering (docs/protocol/p2p.md §20). A peer sends
// PUNCH_REQUEST over TLS; the hub checks it (rate, concurrency, the other
// peer in the same network, both registered on UDP), draws a pair key
// (a fresh key id and 32-byte secret) and a punch id, and queues a
// PUNCH_OFFER to each side with the other's public endpoint and
// candidates and the time left. It then only counts the PUNCH_RESULTs.
// The hub never sees the punched traffic.
//
// The broker's state is bounded: at most Config.MaxPunchesPerPeer punches
// in flight per requester, each forgotten at its deadline (lazily, on the
// requester's next request or result) or when both results arrived, and
// everything of a peer when it leaves its network.

// punch is one brokered punch, in flight until its deadline.
type punch struct {
	id       uint64
	a, b     *peer // requester, other side
	deadline int64 // Unix nanoseconds
	resA     bool  // a's PUNCH_RESULT came
	resB     bool  // b's PUNCH_RESULT came
}

// broker holds the punch state of a hub.
type broker struct {
	mu      sync.Mutex
	punches map[uint64]*punch
	byPeer  map[*peer][]*punch // a requester's punches in flight
	limits  map[*peer]*bucket  // per-requester request rate
	nextID  uint64
}

func newBroker() *broker {
	return &broker{
		punches: map[uint64]*punch{},
		byPeer:  map[*peer][]*punch{}, limits: map[*peer]*bucket{},
	}
}

// udpOf returns what p's UDP side told the hub: the public endpoint its
// authenticated datagrams come from and the candidates of its last
// REGISTER; ok is false before its first authenticated datagram (the
// hub's UDP side routes nothing to it either).
func udpOf(p *peer) (public netip.AddrPort, cands []netip.AddrPort, ok bool) {
	u := p.udp
	if u == nil {
		return public, nil, false
	}
	ep := u.ep.Load()
	if ep == nil {
		return public, nil, false
	}
	u.mu.Lock()
	cands = slices.Clone(u.cands)
	u.mu.Unlock()
	return *ep, cands, true
}

// pairKeyID draws a pair key id that is no peer's hub session key id, so
// a receiver tells its datagrams apart by key id alone.
func (h *Hub) pairKeyID() uint32 {
	var b [4]byte
	h.kmu.RLock()
	defer h.kmu.RUnlock()
	for {
		_, _ = rand.Read(b[:]) // never fails (crypto/rand)
		if id := binary.BigEndian.Uint32(b[:]); id != 0 && h.keys[id] == nil {
			return id
		}
	}
}

// forgetPunches drops everything the broker holds about p; the hub calls
// it when p leaves its network.
func (h *Hub) forgetPunches(p *peer) {
	b := h.punch
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.limits, p)
	for _, x := range b.byPeer[p] {
		delete(b.punches, x.id)
	}
	delete(b.byPeer, p)
}

// punchRequest handles a PUNCH_REQUEST read by c at now (Unix
// nanoseconds).
func (h *Hub) punchRequest(c *conn, body []byte, now int64) bool {
	p := c.p
	var req p2pwire.PunchRequest
	if req.Unmarshal(body) != nil {
		c.closeWith(p2pwire.CodeMalformed, "bad PUNCH_REQUEST")
		return false
	}
	refuse := func(code p2pwire.ErrorCode, peer p2pwire.PeerID, reason string) bool {
		h.m.refuse(code.String())
		h.m.punch("refused")
		h.sendControl(p, &p2pwire.Error{Code: code, MessageID: req.RequestID, Peer: peer, Reason: reason})
		return true
	}
	if string(req.Peer) == p.id {
		return refuse(p2pwire.CodeForbidden, "", "a peer cannot punch to itself")
	}
	p.net.mu.RLock()
	q := p.net.peers[string(req.Peer)]
	p.net.mu.RUnlock()
	if q == nil {
		return refuse(p2pwire.CodeUnknownPeer, req.Peer, "no such peer in this network")
	}
	b := h.punch
	b.mu.Lock()
	lim := b.limits[p]
	if lim == nil {
		lim = &bucket{rate: h.cfg.PunchRate, burst: max(h.cfg.PunchRate, DefaultPunchBurst), tokens: max(h.cfg.PunchRate, DefaultPunchBurst)}
		b.limits[p] = lim
	}
	b.expire(p, now)
	if !lim.take(now, 1) {
		b.mu.Unlock()
		return refuse(p2pwire.CodeRateLimited, req.Peer, "too many punch requests")
	}
	if len(b.byPeer[p]) >= h.cfg.MaxPunchesPerPeer {
		b.mu.Unlock()
		return refuse(p2pwire.CodeRateLimited, req.Peer, "too many punches in flight")
	}
	pubA, candA, okA := udpOf(p)
	pubB, candB, okB := udpOf(q)
	if !okA || !okB {
		b.mu.Unlock()
		who := "the other peer has"
		if !okA {
			who = "you have"
		}
		return refuse(p2pwire.CodeNotRegistered, req.Peer, who+" no registered UDP endpoint")
	}
	b.nextID++
	x := &punch{id: b.nextID, a: p, b: q, deadline: now + int64(req.TimeoutMS)*int64(time.Millisecond)}
	b.punches[x.id] = x
	b.byPeer[p] = append(b.byPeer[p], x)
	b.mu.Unlock()

	offer := p2pwire.PunchOffer{
		PunchID: x.id, RequestID: req.RequestID, Transport: req.Transport, TimeoutMS: req.TimeoutMS,
		Peer: p2pwire.PeerID(q.id), KeyID: h.pairKeyID(), Public: pubB, Candidates: candB,
	}
	_, _ = rand.Read(offer.Secret[:]) // never fails (crypto/rand)
	h.sendControl(p, &offer)
	offer.RequestID, offer.Peer, offer.Public, offer.Candidates = 0, p2pwire.PeerID(p.id), pubA, candA
	h.sendControl(q, &offer)
	clear(offer.Secret[:])
	h.m.punch("offered")
	h.log.Debug("p2p: punch offered", "punch", x.id, "from", p.id, "to", q.id, "transport", req.Transport.String())
	return true
}

// expire drops p's punches whose deadline passed. The caller holds b.mu.
func (b *broker) expire(p *peer, now int64) {
	list := b.byPeer[p]
	keep := list[:0]
	for _, x := range list {
		if now < x.deadline {
			keep = append(keep, x)
		} else {
			delete(b.punches, x.id)
		}
	}
	clear(list[len(keep):])
	if len(keep) == 0 {
		delete(b.byPeer, p)
	} else {
		b.byPeer[p] = keep
	}
}

// punchResult handles a PUNCH_RESULT read by c: counted once per side of
// a punch in flight, ignored otherwise (late, unknown, a third party's, or
// a side's second: the punch ends with both sides' results, so that a
// requester cannot end its punches early and exceed MaxPunchesPerPeer).
func (h *Hub) punchResult(c *conn, body []byte, now int64) bool {
	var res p2pwire.PunchResult
	if res.Unmarshal(body) != nil {
		c.closeWith(p2pwire.CodeMalformed, "bad PUNCH_RESULT")
		return false
	}
	b := h.punch
	b.mu.Lock()
	x := b.punches[res.PunchID]
	counted := x != nil && (x.a == c.p && !x.resA || x.b == c.p && !x.resB) && now < x.deadline+int64(time.Second)
	if counted {
		if x.a == c.p {
			x.resA = true
		} else {
			x.resB = true
		}
		if x.resA && x.resB {
			delete(b.punches, x.id)
			b.removeFrom(x)
		}
	}
	b.mu.Unlock()
	if counted {
		h.m.punch(res.Outcome.String())
		h.log.Debug("p2p: punch result", "punch", res.PunchID, "peer", c.p.id, "outcome", res.Outcome.String())
	}
	return true
}

// removeFrom takes x out of its requester's list. The caller holds b.mu.
func (b *broker) removeFrom(x *punch) {
	list := b.byPeer[x.a]
	for i, y := range list {
		if y == x {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(b.byPeer, x.a)
	} else {
		b.byPeer[x.a] = list
	}
}
