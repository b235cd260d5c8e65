package relay

import (
	"net"
	"net/netip"

	"github.com/switchboardgg/switchboard/internal/udpio"
)

// HandleUDPForTest returns a function that handles one datagram as if it
// had arrived on pc from ap, with a reader's own worker.
func (s *Server) HandleUDPForTest(pc *net.UDPConn) func(ap netip.AddrPort, b []byte) {
	u := &udpCarrier{s: s, pc: pc, uc: pc}
	io, err := udpio.New(pc, udpio.Config{})
	if err != nil {
		panic(err)
	}
	u.io = io
	w := s.newWorker(newSourceTable(4096, &s.cfg))
	w.udp = u
	w.outbox = make([]udpio.Message, 0, io.Batch())
	w.small = make([][64]byte, io.Batch())
	return func(ap netip.AddrPort, b []byte) { w.handle(endpoint{c: u, ap: ap}, b); w.flush() }
}

// FilledConfigForTest returns c with its defaults filled.
func FilledConfigForTest(c Config) Config { c.fill(); return c }

// TruncatePSKForTest makes the DTLS carrier use the first n bytes of each
// allocation key as its pre-shared key (a client library that caps PSK
// lengths); call it before serving.
func (s *Server) TruncatePSKForTest(n int) { s.pskLen = n }

// HandshakeSourceForTest is what MaxDTLSHandshakesPerIP counts ap by.
func HandshakeSourceForTest(ap netip.AddrPort) netip.Addr { return handshakeSource(ap) }

// DTLSCookiesForTest parses b as a HelloVerifyRequest and as a
// ClientHello, returning the cookies found.
func DTLSCookiesForTest(b []byte) (hvr []byte, hvrOK bool, hello []byte, helloOK bool) {
	hvr, hvrOK = hvrCookie(b)
	hello, helloOK = helloCookie(b)
	return
}
