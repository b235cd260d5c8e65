package relay

import (
	"time"

	"github.com/switchboardgg/switchboard/protocol/relaywire"
)

// readLoop reads the messages of one carrier until it closes. When the
// carrier breaks while it is still the current one, it tells the keeper.
func (c *Conn) readLoop(ref *carrierRef) {
	defer c.wg.Done()
	buf := make([]byte, relaywire.RelayHeaderSize+c.cfg.MaxPayload+1)
	var rm relaywire.Relay
	for {
		n, err := ref.c.recv(buf)
		if err != nil {
			select {
			case <-c.done:
			default:
				if c.car.Load() == ref && !isClosed(err) {
					select {
					case c.broken <- ref:
					default:
					}
				}
			}
			return
		}
		c.lastRecv.Store(time.Now().UnixNano())
		c.handle(buf[:n], &rm)
	}
}

// handle acts on one message from the relay node.
func (c *Conn) handle(b []byte, rm *relaywire.Relay) {
	t, err := relaywire.Peek(b)
	if err != nil {
		return // not ours (or an extension this version does not know)
	}
	switch t {
	case relaywire.TypeRelay:
		if rm.Unmarshal(b) != nil || rm.To != c.alloc.ID {
			return
		}
		c.onRelay(rm)
	case relaywire.TypePeerEvent:
		var m relaywire.PeerEvent
		if m.Unmarshal(b) != nil {
			return
		}
		c.onPeerEvent(m.Event, m.Peer)
	case relaywire.TypeBindReceived:
		signal(c.bound)
	case relaywire.TypePing:
		// the echo of our keep-alive: lastRecv is updated
	case relaywire.TypeAccepted:
		var m relaywire.Accepted
		if m.Unmarshal(b) != nil || m.To != c.alloc.ID || c.IsHost() {
			return
		}
		c.mu.Lock()
		if c.host.IsZero() {
			c.host = m.From
		}
		ours := m.From == c.host
		c.mu.Unlock()
		if ours {
			select {
			case c.connected <- nil:
			default:
			}
		}
	case relaywire.TypeRejected:
		var m relaywire.Rejected
		if m.Unmarshal(b) != nil || m.To != c.alloc.ID {
			return
		}
		select {
		case c.connected <- ErrRejected:
		default:
		}
	case relaywire.TypeDisconnect:
		var m relaywire.Disconnect
		if m.Unmarshal(b) != nil || m.To != c.alloc.ID {
			return
		}
		c.onDisconnect(m.From)
	case relaywire.TypeError:
		var m relaywire.Error
		if m.Unmarshal(b) != nil || m.AllocationID != c.alloc.ID {
			return
		}
		c.onError(&ServerError{Code: m.Code, Allocation: m.AllocationID})
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (c *Conn) onRelay(rm *relaywire.Relay) {
	if len(rm.Data) > c.cfg.MaxPayload {
		c.count(func(s *Stats) { s.Dropped++ })
		return
	}
	if c.IsHost() {
		// A relay without peer events: a peer is known from its first
		// message (Unity Transport does the same).
		if c.addPeer(rm.From) {
			c.emit(Event{Type: EventPeerConnected, Peer: rm.From})
		}
	} else if rm.From != c.HostID() {
		return
	}
	var b []byte
	select {
	case b = <-c.free:
	default:
		if int(c.nbuf.Load()) >= c.cfg.QueueLen {
			c.count(func(s *Stats) { s.Dropped++ })
			return
		}
		c.nbuf.Add(1)
		b = make([]byte, c.cfg.MaxPayload)
	}
	b = b[:copy(b[:cap(b)], rm.Data)]
	select {
	case c.in <- inbound{from: rm.From, b: b}:
		c.count(func(s *Stats) { s.Received++ })
	default:
		c.free <- b
		c.count(func(s *Stats) { s.Dropped++ })
	}
}

func (c *Conn) count(f func(*Stats)) {
	c.mu.Lock()
	f(&c.stats)
	c.mu.Unlock()
}

// onPeerEvent acts on a PEER_EVENT (docs/protocol/relay.md, host peer
// events): the ack of PEERS_SUBSCRIBE, or a peer that connected or left,
// deduplicated against the peer set (events are repeated after every
// re-subscription).
func (c *Conn) onPeerEvent(ev relaywire.PeerEventKind, peer AllocationID) {
	if !c.IsHost() {
		return
	}
	switch ev {
	case relaywire.PeerSubscribed:
		c.mu.Lock()
		c.subAcked = true
		c.mu.Unlock()
	case relaywire.PeerConnected:
		if c.addPeer(peer) {
			c.emit(Event{Type: EventPeerConnected, Peer: peer})
		}
	case relaywire.PeerDisconnected:
		if c.removePeer(peer) {
			c.emit(Event{Type: EventPeerDisconnected, Peer: peer})
		}
	}
}

func (c *Conn) onDisconnect(from AllocationID) {
	if c.IsHost() {
		if c.removePeer(from) {
			c.emit(Event{Type: EventPeerDisconnected, Peer: from})
		}
		return
	}
	if from != c.HostID() {
		return
	}
	if c.removePeer(from) {
		c.emit(Event{Type: EventPeerDisconnected, Peer: from})
	}
	// Release the allocation too: when the host only disconnected this
	// peer, it would otherwise live on until the relay's idle timeout.
	c.sendClose()
	c.end(ErrHostGone)
	c.closeCarrier()
}

func (c *Conn) onError(e *ServerError) {
	switch {
	case e.Fatal():
		c.end(e)
		c.closeCarrier()
	case e.Code == relaywire.CodeClientMismatch:
		signal(c.mismatch)
	case e.Code == relaywire.CodeNotConnected && c.isConnecting():
		// The host has not bound yet: the CONNECT_REQUEST is retried.
	case c.isConnecting() && (e.Code == relaywire.CodeUnauthorized || e.Code == relaywire.CodeSelfConnect):
		select {
		case c.connected <- e:
		default:
		}
	default:
		c.emit(Event{Type: EventError, Err: e})
	}
}

func (c *Conn) isConnecting() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.connecting
}
