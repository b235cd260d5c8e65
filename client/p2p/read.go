package p2p

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// Backoff of the resume attempts: the first at once, then doubling
// from resumeBackoffMin up to resumeBackoffMax, while the hub's resume
// window lasts.
const (
	resumeBackoffMin = 100 * time.Millisecond
	resumeBackoffMax = 2 * time.Second
)

// run reads the hub's frames until the connection ends, resuming the
// session after a lost connection, then closes Messages and Events.
func (p *Peer) run(br *bufio.Reader) {
	defer p.wg.Done()
	defer close(p.events)
	defer close(p.msgs)
	defer p.stopUDP() // before the channels close: UDP delivers to Messages
	buf := make([]byte, 0, 64<<10)
	for {
		err := p.readConn(p.curConn(), br, buf)
		select {
		case <-p.closing:
			return
		default:
		}
		if !p.resumable(err) {
			p.end(err)
			return
		}
		old := p.curConn()
		if !p.setConn(nil) {
			return
		}
		_ = old.Close()
		p.emit(Event{Type: EventDisconnected, Err: err})
		if br, err = p.resume(err); err != nil {
			p.end(err)
			return
		}
		p.emit(Event{Type: EventResumed})
	}
}

// readConn reads and handles frames from conn until an error.
func (p *Peer) readConn(conn net.Conn, br *bufio.Reader, buf []byte) error {
	for {
		_ = conn.SetReadDeadline(time.Now().Add(3 * p.cfg.PingInterval))
		body, err := p2pwire.ReadFrame(br, buf, p.cfg.MaxFrameSize)
		if err != nil {
			return readErr(err)
		}
		if err := p.handle(body); err != nil {
			return err
		}
	}
}

// resumable reports whether a connection that ended with err may be
// resumed: the hub offered resuming, and did not end it itself.
func (p *Peer) resumable(err error) bool {
	var he *HubError
	var pe *ProtocolError
	return len(p.resumeToken) > 0 && p.resumeWindow > 0 && !errors.As(err, &he) && !errors.As(err, &pe)
}

// resume reconnects with the resume token until the hub's window is
// over. It returns the new connection's reader, or why it gave up.
func (p *Peer) resume(lost error) (*bufio.Reader, error) {
	deadline := time.Now().Add(p.resumeWindow)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	stop := make(chan struct{})
	defer close(stop)
	go func() { // ends a dial in progress when the peer is closed
		select {
		case <-p.closing:
			cancel()
		case <-stop:
		}
	}()
	wait := time.Duration(0)
	for {
		select {
		case <-p.closing:
			return nil, ErrClosed
		case <-time.After(wait):
		}
		conn, br, w, err := p.dial(ctx, &p2pwire.Hello{ResumeToken: p.resumeToken})
		if err == nil {
			p.resumeToken = w.ResumeToken
			p.rekeyUDP(w.UDP)
			if !w.Resumed || string(w.PeerID) != p.id {
				_ = conn.Close()
				return nil, &ProtocolError{Err: errors.New("the hub did not resume the session")}
			}
			if !p.setConn(conn) {
				return nil, ErrClosed
			}
			p.log.Info("p2p session resumed", "peer", p.id)
			return br, nil
		}
		var he *HubError
		if errors.As(err, &he) {
			return nil, fmt.Errorf("p2p: resume after %v: %w", lost, err)
		}
		if !time.Now().Add(wait).Before(deadline) {
			return nil, fmt.Errorf("p2p: the resume window passed: %w (lost: %v)", err, lost)
		}
		wait = min(max(2*wait, resumeBackoffMin), resumeBackoffMax)
	}
}

// readErr names why reading ended.
func readErr(err error) error {
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF):
		return fmt.Errorf("p2p: the hub closed the connection: %w", err)
	case errors.Is(err, net.ErrClosed):
		return fmt.Errorf("p2p: the connection to the hub was closed: %w", err)
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
		p.answer(m.MessageID, string(m.From), &response{msg: &Message{From: string(m.From), p: p,
			Envelope: Envelope{Header: m.Header, Pairs: m.Pairs, Payload: bytes.Clone(m.Payload)}}})
	case p2pwire.KindPunchOffer:
		var m p2pwire.PunchOffer
		if err := m.Unmarshal(body); err != nil {
			return &ProtocolError{Err: err}
		}
		if p.punch != nil {
			p.punch.onOffer(&m)
		}
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
	if m.MessageID != 0 && p.answer(m.MessageID, "", &response{err: he}) {
		return nil
	}
	p.emit(Event{Type: EventError, Peer: he.Peer, Err: he})
	return nil
}

// pending is a request in flight: its waiter, and the peer asked ("" for
// a request to the hub, which only the hub's ERROR answers).
type pending struct {
	ch chan *response
	to string
}

// answer hands the outcome of request id to its waiter, and reports
// whether one was waiting. from is the responding peer, "" for the hub's
// ERROR: a RESPONSE from any peer but the one asked is dropped (request
// ids are a counter, so another peer of the network could guess them).
func (p *Peer) answer(id uint64, from string, r *response) bool {
	p.mu.Lock()
	w, ok := p.pending[id]
	if ok && from != "" && from != w.to {
		p.mu.Unlock()
		return false // not the asked peer's: dropped
	}
	delete(p.pending, id)
	p.mu.Unlock()
	if !ok {
		return false // abandoned: dropped
	}
	w.ch <- r // buffered, one answer per request
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
	if e.Type == EventPeerLeft && p.rel != nil {
		p.rel.peerLeft(e.Peer)
	}
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
