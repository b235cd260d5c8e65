package p2p

// BreakDirect makes this peer drop its direct path to peer without a
// word, as a crashed or unplugged peer would: the other side's
// keep-alives go unanswered (UDP) or its connection ends (TCP).
func (p *Peer) BreakDirect(peer string) {
	pp := p.punch
	pp.mu.Lock()
	var gone []*attempt
	for _, a := range pp.live {
		if a.d.peer == peer {
			gone = append(gone, a)
		}
	}
	pp.mu.Unlock()
	for _, a := range gone {
		pp.forget(a)
	}
}

// IgnorePunches makes this peer ignore the hub's punch offers, as a
// client without hole punching does.
func (p *Peer) IgnorePunches() { p.punch.ignore.Store(true) }
