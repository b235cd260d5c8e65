// Package udpio reads and writes UDP datagrams in batches: recvmmsg and
// sendmmsg on Linux (one system call for up to a batch of datagrams), one
// datagram per call elsewhere. It sizes the socket's buffers and allocates
// nothing per datagram or per batch once a [Conn] is made, so it serves the
// hot paths of the relay, node/udp and the P2P hub. On Linux, WriteBatch
// sends a run of datagrams of one size to one destination as one write
// with UDP segmentation offload (UDP_SEGMENT), which the kernel cuts apart
// again: receivers see the same datagrams, and the sender pays the IP
// stack once per run. A socket whose path refuses it falls back for good.
//
// A Conn wraps a *net.UDPConn that the caller opened and closes; the Conn
// starts no goroutines. ReadBatch blocks through Go's network poller (so
// Close on the socket and deadlines work as usual). A Conn is used by one
// reading goroutine and one writing goroutine at a time (ReadBatch and
// WriteBatch may run concurrently; two ReadBatch calls may not).
//
// Why not golang.org/x/net's ipv4.PacketConn.ReadBatch: it returns each
// sender as a net.Addr, allocating a *net.UDPAddr and its IP for every
// datagram; here senders are netip.AddrPort values parsed from the raw
// sockaddr.
package udpio
