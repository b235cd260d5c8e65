package sealed

// SetNext makes s use seq as its next sequence number, so that tests can
// reach exhaustion without sealing 2^64 datagrams.
func (s *Sealer) SetNext(seq uint64) { s.next.Store(seq) }
