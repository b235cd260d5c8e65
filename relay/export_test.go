package relay

import (
	"net"
	"net/netip"
)

// HandleUDPForTest returns a function that handles one datagram as if it
// had arrived on pc from ap, with a reader's own worker.
func (s *Server) HandleUDPForTest(pc *net.UDPConn) func(ap netip.AddrPort, b []byte) {
	u := &udpCarrier{s: s, pc: pc, uc: pc}
	w := s.newWorker(newSourceTable(4096, &s.cfg))
	return func(ap netip.AddrPort, b []byte) { w.handle(endpoint{c: u, ap: ap}, b) }
}

// FilledConfigForTest returns c with its defaults filled.
func FilledConfigForTest(c Config) Config { c.fill(); return c }
