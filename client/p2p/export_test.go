package p2p

// BreakConnection closes the socket under the peer, as a network failure
// would.
func (p *Peer) BreakConnection() {
	if c := p.curConn(); c != nil {
		_ = c.Close()
	}
}
