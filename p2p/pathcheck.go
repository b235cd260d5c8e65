package p2p

import (
	"crypto/rand"
	"net/netip"
	"time"

	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// Path validation on the hub's UDP port (docs/protocol/p2p.md §12.4),
// QUIC's (RFC 9000 §8.2, §9) adapted. A datagram sealed with a peer's key
// proves that its sender holds the key, not that it owns the source
// address: the key's holder can forge its source, and so aim at a victim
// everything the hub sends the peer (other peers' datagrams, relayed).
//
// So the hub moves a peer's endpoint to the source of an authenticated
// datagram whose sequence number is above every earlier one of the peer
// (an older datagram, reordered behind a rebinding, moves nothing), and
// sends there from then on — a real NAT rebinding loses little — but,
// until that endpoint is validated, everything it sends there is held to
// pathAmplification times the bytes of the authenticated datagrams that
// came from it; what does not fit is dropped and counted (reason
// unvalidated), as a full queue would be. It sends the endpoint a
// PATH_CHALLENGE of 8 random bytes, again at most every pathRetry while
// the endpoint is unvalidated and the hub hears from it or sends to it,
// pathTries in all; a PATH_RESPONSE carrying them, from that same
// endpoint, validates it. After pathTries unanswered challenges the check
// is abandoned and the endpoint stays limited until the peer moves.
//
// The first endpoint of a peer is checked too: it is learnt from a
// datagram sealed with a key the peer got over TLS, which proves the key
// and nothing about the source (a QUIC server validates a client's first
// address as well, unless its handshake did; ours has no UDP handshake).
// A move back to the last validated endpoint needs no challenge, so the
// peer's next datagram from its real address undoes a forged one at once.
//
// The state is a fixed-size pathState per peer, guarded by udpPeer.mu;
// nothing here allocates but a move (the endpoint's new pointer) and
// nothing logs.
const (
	// pathAmplification bounds the bytes sent to an unvalidated endpoint
	// as a multiple of the bytes received from it (QUIC's 3).
	pathAmplification = 3
	// pathRetry is the least time between two challenges to an endpoint.
	pathRetry = 250 * time.Millisecond
	// pathTries is the number of challenges an endpoint gets.
	pathTries = 10
	// sealedOverhead is what sealing adds to a plaintext.
	sealedOverhead = p2pwire.SealedHeaderSize + p2pwire.TagSize
)

// pathState is what the hub knows of a peer's endpoints; guarded by
// udpPeer.mu (udpPeer.ep is written under it too).
type pathState struct {
	seq  uint64 // the highest sequence number accepted from the peer
	seen bool   // seq is set: a datagram was accepted
	// validated is the last endpoint a PATH_RESPONSE came from (zero:
	// none yet); the hub sends there without limit.
	validated netip.AddrPort
	checking  bool             // udpPeer.ep is being checked
	data      p2pwire.PathData // its challenge
	tries     int              // challenges sent to it
	next      int64            // Unix nanoseconds: when the challenge may go again
	budget    int              // bytes the hub may still send to udpPeer.ep while it is unvalidated
}

// heard follows an authenticated datagram of n bytes (sealed size) with
// sequence number seq from src, at now (Unix nanoseconds): it moves p's
// endpoint to src when seq is the highest yet, credits the budget of an
// endpoint under check, and sends a challenge when one is due.
func (h *Hub) heard(s *udpSock, p *peer, src netip.AddrPort, seq uint64, n int, now int64) {
	u := p.udp
	u.mu.Lock()
	defer u.mu.Unlock()
	ps := &u.path
	newest := !ps.seen || seq > ps.seq
	if newest {
		ps.seq, ps.seen = seq, true
	}
	ep := u.ep.Load()
	if newest && (ep == nil || *ep != src) {
		moved := src       // a copy: taking src's address would move it to the heap on every call
		u.ep.Store(&moved) // first datagram, or NAT rebinding: rare, so the allocation is too
		if ep != nil {
			h.m.udpRebinds.Inc()
		}
		ep = &moved
		h.endCheckLocked(u)
		if src != ps.validated {
			ps.checking, ps.tries, ps.next, ps.budget = true, 0, now, 0
			_, _ = rand.Read(ps.data[:]) // never fails (crypto/rand)
		}
	}
	if ep == nil || src != *ep || src == ps.validated {
		return
	}
	ps.budget += pathAmplification * n
	h.challengeLocked(s, p, now)
}

// challengeLocked queues a PATH_CHALLENGE to p's endpoint when its check
// is under way and the last challenge went at least pathRetry ago, out
// of the endpoint's budget (one that does not fit waits for more
// credit); after pathTries it abandons the check. u.mu is held.
func (h *Hub) challengeLocked(s *udpSock, p *peer, now int64) {
	u := p.udp
	ps := &u.path
	if !ps.checking || now < ps.next {
		return
	}
	if ps.tries >= pathTries {
		h.endCheckLocked(u)
		return
	}
	var b [2 + p2pwire.PathDataSize]byte
	plain, _ := (&p2pwire.PathChallenge{Data: ps.data}).AppendTo(b[:0])
	if ps.budget < len(plain)+sealedOverhead {
		return
	}
	if !h.seal(s, p, plain, *u.ep.Load()) {
		return
	}
	ps.budget -= len(plain) + sealedOverhead
	ps.tries++
	ps.next = now + int64(pathRetry)
	h.m.pathChallenges.Inc()
}

// endCheckLocked abandons the check under way, if any (the peer left the
// endpoint, or it never answered). u.mu is held.
func (h *Hub) endCheckLocked(u *udpPeer) {
	if u.path.checking {
		u.path.checking = false
		h.m.pathChecks[pathAbandoned].Inc()
	}
}

// sendTo queues plain sealed with q's key to addr, if the path check lets
// it: always to q's validated endpoint; to its current endpoint while
// that is under check, out of its budget, after any challenge that is
// due; to any other address never. It reports whether it queued; a
// refusal is counted (reason unvalidated).
func (h *Hub) sendTo(s *udpSock, q *peer, plain []byte, addr netip.AddrPort, now int64) bool {
	u := q.udp
	n := len(plain) + sealedOverhead
	u.mu.Lock()
	ok := addr == u.path.validated
	if ep := u.ep.Load(); !ok && ep != nil && addr == *ep {
		h.challengeLocked(s, q, now)
		if ok = u.path.budget >= n; ok {
			u.path.budget -= n
		}
	}
	u.mu.Unlock()
	if !ok {
		h.m.udpDrop["unvalidated"].Inc()
		return false
	}
	return h.seal(s, q, plain, addr)
}

// pathResponse handles an opened PATH_RESPONSE of p from src: one that
// answers the check under way, from the endpoint being checked, validates
// it; any other (late, for an endpoint p has left, or with other data) is
// dropped, reason stale.
func (h *Hub) pathResponse(p *peer, plain []byte, src netip.AddrPort) {
	var m p2pwire.PathResponse
	if m.Unmarshal(plain) != nil {
		h.m.udpDrop["malformed"].Inc()
		return
	}
	u := p.udp
	u.mu.Lock()
	ps := &u.path
	ep := u.ep.Load()
	ok := ps.checking && ep != nil && src == *ep && m.Data == ps.data
	if ok {
		ps.checking, ps.validated = false, src
	}
	u.mu.Unlock()
	if !ok {
		h.m.udpDrop["stale"].Inc()
		return
	}
	h.m.pathChecks[pathValidated].Inc()
}
