package udp

import (
	"crypto/rand"
	"net/netip"
	"time"

	"github.com/switchboardgg/switchboard/protocol/roomudp"
)

// Path validation (rooms-udp.md §8), QUIC's (RFC 9000 §8.2, §9) adapted.
// A SESSION datagram proves that its sender holds the session keys, not
// that it owns its source address: the keys' holder (a player, for its
// own seat) can forge the source, and an on-path attacker can re-send a
// copied datagram from elsewhere. So when an authenticated datagram with
// a sequence number above every earlier one comes from an address that is
// not validated, the session sends there from then on (a real rebinding
// loses as little as possible), but everything it sends there is held to
// amplification times the bytes of the authenticated datagrams that came
// from it — the budget that already bounds a session before it is
// established — and it sends that address a PATH_CHALLENGE of 8 random
// bytes. A PATH_RESPONSE carrying them, from that same address, validates
// it and lifts the limit. The challenge goes again, the same bytes sealed
// anew, with the next datagram from the address once pathRetry has passed,
// at most pathTries times; after that the check is abandoned and the
// address stays limited until the session moves.
//
// The address the handshake proved counts as validated: the HANDSHAKE
// REPLY carries the server nonce without which no SESSION datagram can be
// sealed, so the first SESSION datagram shows that the reply was read;
// when every HANDSHAKE of the attempt came from one address, the reply
// went there alone. A move back to the last validated address needs no
// challenge, so that a client whose datagram a forged copy overtook gets
// its traffic back with its next datagram.
const (
	pathRetry = 250 * time.Millisecond
	pathTries = 10
)

// pathState is what a session knows of its addresses; guarded by
// session.mu.
type pathState struct {
	// proven is the address every HANDSHAKE of the attempt came from
	// (zero once they came from two): the one the reply went to alone.
	proven netip.AddrPort
	// validated is the last validated address (zero: none yet).
	validated netip.AddrPort
	checking  bool             // a check of the session's address is under way
	data      roomudp.PathData // its challenge
	tries     int              // challenges sent in this check
	next      time.Time        // when the challenge may go again
}

// limitedLocked reports whether what the session sends is held to its
// budget: before it is established, and while its address is not
// validated. ss.mu is held.
func (ss *session) limitedLocked() bool {
	return !ss.established || ss.addr != ss.path.validated
}

// spendLocked reports whether n more bytes may go to the session's
// address, and takes them from the budget while it is limited; a refusal
// is counted (reason unvalidated). ss.mu is held.
func (ss *session) spendLocked(n int) bool {
	if !ss.limitedLocked() {
		return true
	}
	if n > ss.budget {
		ss.s.m.drop[dropUnvalidated].Inc()
		return false
	}
	ss.budget -= n
	return true
}

// challenge is a PATH_CHALLENGE to send: its bytes and where.
type challenge struct {
	data roomudp.PathData
	to   netip.AddrPort
}

// pathHeardLocked follows an authenticated datagram of n bytes from from
// (newest: its sequence number is above every earlier one; first: the
// session's first) and returns the challenge to send, if any. It moves
// the session to from when newest, credits the budget of an address not
// validated, and starts, repeats or abandons its check. ss.mu is held.
func (ss *session) pathHeardLocked(from netip.AddrPort, n int, first, newest bool, now time.Time) (c challenge, send bool) {
	p := &ss.path
	if first && from == p.proven {
		p.validated = from
	}
	if newest && (first || from != ss.addr) {
		ss.addr = from
		ss.endCheckLocked()
		if from != p.validated {
			p.checking, p.tries, p.next = true, 0, now
			ss.budget = 0
			_, _ = rand.Read(p.data[:]) // never fails (crypto/rand)
		}
	}
	if from != ss.addr || from == p.validated {
		return c, false
	}
	ss.budget += amplification * n
	if !p.checking || now.Before(p.next) {
		return c, false
	}
	if p.tries == pathTries {
		ss.endCheckLocked()
		return c, false
	}
	p.tries++
	p.next = now.Add(pathRetry)
	if !ss.spendLocked(roomudp.SessionOverhead + roomudp.PathDataSize) {
		return c, false // as if lost: it goes again with a later datagram
	}
	return challenge{data: p.data, to: from}, true
}

// endCheckLocked abandons the check under way, if any (the session left
// the address, or it never answered). ss.mu is held.
func (ss *session) endCheckLocked() {
	if ss.path.checking {
		ss.path.checking = false
		ss.s.m.paths[pathAbandoned].Inc()
	}
}

// sendChallenge queues c's PATH_CHALLENGE; pathHeardLocked spent its
// bytes.
func (ss *session) sendChallenge(c *challenge) {
	ss.s.out.seal(ss.s, ss.send, roomudp.ChannelPathChallenge, c.data[:], c.to)
}

// pathResponse handles a PATH_RESPONSE body from from: malformed ones are
// invalid (counted as one invalid message); one that answers the check
// under way, from the address being checked, validates it; any other
// (late, or for an address the session has left) is dropped, reason stale.
func (r *reader) pathResponse(ss *session, body []byte, from netip.AddrPort) {
	d, err := roomudp.ParsePath(body)
	if err != nil {
		r.drop(dropInvalid)
		r.dispatch(ss, nil, false)
		return
	}
	ss.mu.Lock()
	p := &ss.path
	ok := p.checking && from == ss.addr && d == p.data
	if ok {
		p.checking, p.validated = false, from
	}
	ss.mu.Unlock()
	if !ok {
		r.drop(dropStale)
		return
	}
	r.s.m.paths[pathValidated].Inc()
}
