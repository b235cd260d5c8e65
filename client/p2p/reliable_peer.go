package p2p

import (
	"context"
	"fmt"

	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

func init() {
	extensions = append(extensions, startReliable)
}

// startReliable starts the reliable channels of a peer with a UDP
// session: RELIABLE datagrams go out through sendDatagram (the direct
// path when one is up, else the hub) and come in through the handler.
func startReliable(p *Peer) (stop func()) {
	if p.udp == nil {
		return func() {}
	}
	l := newChannels(p.cfg.Reliable, p.log, func(to string, body []byte) {
		_, _ = p.sendDatagram(to, p2pwire.KindReliable, body) // a failure is a lost datagram: KCP resends
	})
	l.known = p.known
	p.handleDatagrams(p2pwire.KindReliable, func(d *inDatagram) {
		if d.Broadcast || d.From == "" || len(d.Rest) < 2 {
			l.dropped.Add(1) // RELIABLE is never broadcast, and has a channel and a segment
			return
		}
		l.input(d.From, Channel(d.Rest[0]), d.Rest[1:])
	})
	p.rel = l
	l.start()
	return l.close
}

// SendReliable queues env on reliable channel ch (Ch1, Ch2 or Realtime)
// to peer to. Messages on one channel arrive once each, whole, and in the
// order they were sent; a channel's backlog never holds up the others.
// They travel as RELIABLE datagrams over the path the UDP side picks:
// the direct path when a punch made one, else through the hub.
//
// A nil error means the message is queued, not that it arrived. When the
// channel's send queue is full (BulkSendQueue or RealtimeSendQueue
// segments queued or unacknowledged: the receiver is slow or
// unreachable), SendReliable waits for room until ctx ends, and then
// returns ctx's error with nothing queued. The encoded envelope is at
// most ReliableConfig.MaxMessage bytes (ErrTooLarge). It fails with
// ErrNoUDP without a UDP session, ErrUnknownPeer for a peer not in the
// network (also when it leaves while the send waits), ErrBadChannel,
// ErrTooManyConversations, and ErrClosed.
func (p *Peer) SendReliable(ctx context.Context, to string, ch Channel, env Envelope) error {
	select {
	case <-p.closing:
		return closedErr(p.Err())
	default:
	}
	if p.rel == nil {
		return ErrNoUDP
	}
	if !p.known(to) {
		return fmt.Errorf("p2p: send reliable to %s: %w", to, ErrUnknownPeer)
	}
	err := p.rel.sendReliable(ctx, to, ch, env)
	if !p.known(to) {
		p.rel.peerLeft(to) // it left meanwhile: do not keep a conversation for it
	}
	if err == ErrClosed {
		return closedErr(p.Err())
	}
	return err
}

// known reports whether peer is in the network as this client knows it.
func (p *Peer) known(peer string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.peers[peer]
	return ok
}

// Reliable delivers the messages other peers sent on reliable channels,
// each with its channel, one channel's ready messages after another's in
// turn. It is closed when the connection ends (at once without a UDP
// session). Drain it: while it is full, received messages wait in their
// channels' receive windows and the senders' queues fill.
func (p *Peer) Reliable() <-chan *ReliableMessage {
	if p.rel == nil {
		c := make(chan *ReliableMessage)
		close(c)
		return c
	}
	return p.rel.out
}

// ReliableStats returns the counters of the reliable channels (zero
// without a UDP session).
func (p *Peer) ReliableStats() ReliableStats {
	if p.rel == nil {
		return ReliableStats{}
	}
	return p.rel.stats()
}
