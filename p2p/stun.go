package p2p

import (
	"net/netip"

	"github.com/pion/stun/v3"

	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// stunState answers STUN binding requests (RFC 5389) on the hub's UDP
// port, so that peers and standard tools learn their public address. The
// answer is larger than the request (the one datagram the hub answers
// without authentication), so it is rate-limited per source address and
// in total. It belongs to the UDP reader.
type stunState struct {
	req, resp stun.Message
	rate      float64
	maxSrc    int
	perSrc    map[netip.Addr]*bucket
	all       bucket
	lastSweep int64 // Unix ns of the last sweep of perSrc
}

func (st *stunState) init(c Config) {
	st.rate, st.maxSrc = c.STUNRatePerSource, c.STUNMaxSources
	st.perSrc = map[netip.Addr]*bucket{}
	st.all = newBucket(c.STUNRate)
}

// allow takes a token for src, and one from the total.
func (st *stunState) allow(src netip.Addr, now int64) bool {
	b := st.perSrc[src]
	if b == nil {
		if len(st.perSrc) >= st.maxSrc {
			// Forget the sources whose buckets are full again: they are
			// as good as new. At most once a second, so that a flood from
			// many (spoofed) sources does not cost a sweep per datagram.
			if now-st.lastSweep < 1e9 {
				return false
			}
			st.lastSweep = now
			for a, ob := range st.perSrc {
				ob.take(now, 0)
				if ob.tokens >= ob.burst {
					delete(st.perSrc, a)
				}
			}
			if len(st.perSrc) >= st.maxSrc {
				return false
			}
		}
		nb := newBucket(st.rate)
		b = &nb
		st.perSrc[src] = b
	}
	if !b.take(now, 1) {
		return false
	}
	return st.all.take(now, 1)
}

// handleSTUN answers a binding request with the source's address
// (XOR-MAPPED-ADDRESS) and a FINGERPRINT; anything else in the STUN range
// is dropped unanswered.
func (h *Hub) handleSTUN(s *udpSock, d []byte, src netip.AddrPort, now int64) {
	st := &s.stun
	if !p2pwire.IsSTUN(d) {
		h.m.udpDrop["not_ours"].Inc()
		return
	}
	st.req.Raw = append(st.req.Raw[:0], d...)
	if err := st.req.Decode(); err != nil || st.req.Type != stun.BindingRequest {
		h.m.udpDrop["stun_refused"].Inc()
		return
	}
	if !st.allow(src.Addr(), now) {
		h.m.udpDrop["stun_rate_limited"].Inc()
		return
	}
	r := &st.resp
	r.Reset()
	r.Type = stun.BindingSuccess
	r.TransactionID = st.req.TransactionID
	r.WriteHeader()
	if err := (&stun.XORMappedAddress{IP: src.Addr().AsSlice(), Port: int(src.Port())}).AddTo(r); err != nil {
		h.m.udpDrop["stun_refused"].Inc()
		return
	}
	if err := stun.Fingerprint.AddTo(r); err != nil {
		h.m.udpDrop["stun_refused"].Inc()
		return
	}
	m := h.queue(s)
	m.Buf, m.Addr = append(m.Buf[:0], r.Raw...), src
	h.m.stunAnswered.Inc()
}
