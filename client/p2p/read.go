package p2p

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// readLoop reads the hub's frames until the connection ends, then closes
// Messages and Events.
func (p *Peer) readLoop(br *bufio.Reader) {
	defer p.wg.Done()
	defer close(p.events)
	defer close(p.msgs)
	buf := make([]byte, 0, 64<<10)
	for {
		_ = p.conn.SetReadDeadline(time.Now().Add(3 * p.cfg.PingInterval))
		body, err := p2pwire.ReadFrame(br, buf, p.cfg.MaxFrameSize)
		if err != nil {
			p.end(readErr(err))
			return
		}
		if err := p.handle(body); err != nil {
			p.end(err)
			return
		}
		select {
		case <-p.closing:
			return
		default:
		}
	}
}

// readErr names why reading ended.
func readErr(err error) error {
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return fmt.Errorf("p2p: the hub closed the connection: %w", err)
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("p2p: the hub is silent: %w", err)
	case errors.Is(err, p2pwire.ErrInvalid):
		return &ProtocolError{Err: err}
	}
	return fmt.Errorf("p2p: read from hub: %w", err)
}

// handle acts on one frame. An error ends the connection.
func (p *Peer) handle(body []byte) error {
	rt, err := p2pwire.DecodeRouting(body)
	if err != nil {
		return &ProtocolError{Err: err}
	}
	switch rt.Kind {
	case p2pwire.KindPeerSet:
		var m p2pwire.PeerSet
		if err := m.Unmarshal(body); err != nil {
			return &ProtocolError{Err: err}
		}
		p.applySet(&m)
	case p2pwire.KindPeerEvents:
		var m p2pwire.PeerEvents
		if err := m.Unmarshal(body); err != nil {
			return &ProtocolError{Err: err}
		}
		p.applyEvents(&m)
	case p2pwire.KindError:
		var m p2pwire.Error
		if err := m.Unmarshal(body); err != nil {
			return &ProtocolError{Err: err}
		}
		return p.hubErr(&m)
	case p2pwire.KindPing:
		var m p2pwire.Ping
		if err := m.Unmarshal(body); err != nil {
			return &ProtocolError{Err: err}
		}
		_ = p.writeFrame(&p2pwire.Pong{Value: m.Value}) // a failed write ends the connection itself
	case p2pwire.KindMessage, p2pwire.KindRequest:
		var m p2pwire.Msg // REQUEST has the same layout
		var err error
		if rt.Kind == p2pwire.KindRequest {
			var r p2pwire.Request
			err = r.Unmarshal(body)
			m = p2pwire.Msg(r)
		} else {
			err = m.Unmarshal(body)
		}
		if err != nil {
			return &ProtocolError{Err: err}
		}
		p.deliver(&Message{From: string(m.From), Broadcast: m.Broadcast, id: m.MessageID, p: p,
			Envelope: Envelope{Header: m.Header, Pairs: m.Pairs, Payload: bytes.Clone(m.Payload)}})
	case p2pwire.KindResponse:
		var m p2pwire.Response
		if err := m.Unmarshal(body); err != nil {
			return &ProtocolError{Err: err}
		}
		p.answer(m.MessageID, &response{msg: &Message{From: string(m.From), p: p,
			Envelope: Envelope{Header: m.Header, Pairs: m.Pairs, Payload: bytes.Clone(m.Payload)}}})
	default:
		// PONG, and kinds this version does not know: ignored.
	}
	return nil
}

// hubErr acts on an ERROR: it fails its request, ends the connection, or
// becomes an event.
func (p *Peer) hubErr(m *p2pwire.Error) error {
	he := hubError(m)
	if m.Closing {
		return he
	}
	if m.MessageID != 0 && p.answer(m.MessageID, &response{err: he}) {
		return nil
	}
	p.emit(Event{Type: EventError, Peer: he.Peer, Err: he})
	return nil
}

// answer hands the outcome of request id to its waiter, and reports
// whether one was waiting.
func (p *Peer) answer(id uint64, r *response) bool {
	p.mu.Lock()
	ch := p.pending[id]
	delete(p.pending, id)
	p.mu.Unlock()
	if ch == nil {
		return false // abandoned: dropped
	}
	ch <- r // buffered, one answer per request
	return true
}

// applySet replaces the peer set; the differences become events.
func (p *Peer) applySet(m *p2pwire.PeerSet) {
	next := make(map[string]struct{}, len(m.Peers))
	for _, id := range m.Peers {
		next[string(id)] = struct{}{}
	}
	var evs []Event
	p.mu.Lock()
	for id := range p.peers {
		if _, ok := next[id]; !ok {
			evs = append(evs, Event{Type: EventPeerLeft, Peer: id})
		}
	}
	for _, id := range m.Peers {
		if _, ok := p.peers[string(id)]; !ok {
			evs = append(evs, Event{Type: EventPeerJoined, Peer: string(id)})
		}
	}
	p.peers, p.version = next, m.Version
	p.mu.Unlock()
	for _, e := range evs {
		p.emit(e)
	}
}

// applyEvents applies PEER_EVENTS newer than the set held.
func (p *Peer) applyEvents(m *p2pwire.PeerEvents) {
	var evs []Event
	p.mu.Lock()
	if m.Version <= p.version {
		p.mu.Unlock()
		return
	}
	p.version = m.Version
	for _, e := range m.Events {
		id := string(e.Peer)
		_, known := p.peers[id]
		switch {
		case e.Op == p2pwire.PeerJoined && !known && id != p.id:
			p.peers[id] = struct{}{}
			evs = append(evs, Event{Type: EventPeerJoined, Peer: id})
		case e.Op == p2pwire.PeerLeft && known:
			delete(p.peers, id)
			evs = append(evs, Event{Type: EventPeerLeft, Peer: id})
		}
	}
	p.mu.Unlock()
	for _, e := range evs {
		p.emit(e)
	}
}

// emit queues an event, waiting while Events is full.
func (p *Peer) emit(e Event) {
	select {
	case p.events <- e:
	case <-p.closing:
	}
}

// deliver queues a message, waiting while Messages is full.
func (p *Peer) deliver(m *Message) {
	select {
	case p.msgs <- m:
	case <-p.closing:
	}
}
