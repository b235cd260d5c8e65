package rooms

import (
	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// Transports a Room can use to reach its game node.
const (
	// TransportUDP is the encrypted UDP channel (KCP + sealed datagrams,
	// docs/protocol/rooms-udp.md).
	TransportUDP = "udp"
	// TransportWS is WebSocket.
	TransportWS = "ws"
)

// conn is one connection to a game node after its handshake: a *wsConn or
// a *udpConn. Each has a reader goroutine (and the WebSocket one a writer)
// started by start and joined by wait; the Room's supervisor owns it.
type conn interface {
	// start starts the connection's goroutines. The reader calls handle
	// with each message from the node, in order for reliable ones; an
	// error from handle ends the connection with that cause. msg is valid
	// only until handle returns.
	start(handle func(msg []byte) error)
	// wait returns once every goroutine start started has exited.
	wait()
	// done is closed once the connection is dead (kill was called).
	done() <-chan struct{}
	// kill ends the connection with err (the first cause wins) and closes
	// what it owns. It is idempotent.
	kill(err error)
	// cause returns why the connection ended, nil before.
	cause() error
	// lastRecv returns Config.Now of the last message from the node, Unix ns.
	lastRecv() int64
	// transport returns TransportWS or TransportUDP.
	transport() string

	// The send methods queue a message; they fail with ErrNotConnected on
	// a dead connection and ErrSendQueueFull when the queue is full.
	sendInput(ack uint32, data []byte) error
	sendPing(clientMS uint64, rttMS uint32) error
	sendFrameReq(req roomwire.FrameReq) error
	send(m roomwire.Message) error
	// sendLeave queues LEAVE and then closes the connection; done is closed
	// once LEAVE went out (or could not).
	sendLeave() error
}

var (
	_ conn = (*wsConn)(nil)
	_ conn = (*udpConn)(nil)
)
