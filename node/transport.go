package node

import (
	"github.com/switchboardgg/switchboard/protocol/roomwire"
	"github.com/switchboardgg/switchboard/rooms"
)

// This file is what another transport of the node (node/udp) uses: the
// handshake's checks, the message dispatch and the messages it sends
// itself. The WebSocket connections of this package use the same code.

// Seat runs the checks of a parsed handshake (as rooms.md §3 and the
// package documentation list them) and seats p: the room sends WELCOME,
// and for a resume the catch-up, to p before Seat returns. ticketID, when
// not empty, is the id a HELLO's connect ticket must have (ERROR 1
// otherwise). On failure it returns the ERROR code to answer and why.
func (s *Server) Seat(hs roomwire.Handshake, ticketID string, p rooms.Peer) (*rooms.Link, uint8, error) {
	if s.draining.Load() {
		return nil, roomwire.CodeNodeDraining, errDraining
	}
	return s.seat(hs, ticketID, p, func(bool) {})
}

// NewDispatcher returns the Dispatcher of a connection seated on link.
func (s *Server) NewDispatcher(link *rooms.Link) *Dispatcher {
	return &Dispatcher{s: s, link: link}
}

// ErrorMsg returns ERROR code as the node's own message (the caller
// releases it): a handshake's refusal, or ERROR 6 after invalid messages.
func (s *Server) ErrorMsg(code uint8) *rooms.Msg {
	return s.engine.ErrorMsg(code, "", nil)
}

// CountSent counts p, one im.game.v1 message (type byte first) another
// transport sent, in switchboard_node_messages_out_total and, for an
// ERROR, switchboard_node_errors_total, as the WebSocket writer counts
// what it writes. It allocates nothing.
func (s *Server) CountSent(p []byte) {
	if len(p) == 0 {
		return
	}
	s.m.out[p[0]].Inc()
	if roomwire.Type(p[0]) == roomwire.TypeError && len(p) > 1 {
		s.m.errs[p[1]].Inc()
	}
}
