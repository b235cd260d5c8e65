package impair

// packet is one datagram copy waiting in the delay queue.
type packet struct {
	dir Direction
	c   *client
	buf []byte
	n   int
}
