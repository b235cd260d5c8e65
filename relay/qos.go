package relay

import (
	"net/netip"
)

// The QoS probe of Unity's QoS SDK (reference unity-relay.md §2.3), answered
// on the relay's UDP port so that clients measure the path to the relay
// itself. Multi-byte fields are little-endian and echoed as they came.
//
//	request:  59 | ver/flow | titleLen | title (titleLen-1) | seq | id (2) | timestamp (8)
//	response: 95 | ver/flow | seq | id (2) | timestamp (8)          13 bytes
//
// The request is 14 + len(title) bytes (at least 15, at most 1500); the
// answer is always 13, smaller than any valid request.
const (
	qosRequestMagic  = 0x59
	qosResponseMagic = 0x95
	qosMinRequest    = 15
	qosMaxRequest    = 1500
	qosResponseSize  = 13
)

// qos answers one QoS probe from ap on u, or drops it (counted as
// malformed) when it is not one.
func (s *Server) qos(u *udpCarrier, ap netip.AddrPort, b []byte, w *worker) {
	s.m.packetsIn.Inc()
	s.m.bytesIn.Add(float64(len(b)))
	if len(b) < qosMinRequest || len(b) > qosMaxRequest || b[1]>>4 != 0 || b[2] == 0 || len(b) != 13+int(b[2]) {
		w.drop(dropMalformed)
		return
	}
	if !w.src.allow(ap, s.cfg.Now().UnixNano()) {
		w.drop(dropSourceRate)
		return
	}
	tail := b[len(b)-11:] // seq, id, timestamp
	out := w.out[:qosResponseSize]
	out[0] = qosResponseMagic
	out[1] = 0 // version 0, no flow control
	copy(out[2:], tail)
	s.m.qos.Inc()
	w.send(endpoint{c: u, ap: ap}, out, false)
}
