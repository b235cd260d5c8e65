package p2p

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboardgg/switchboard/internal/p2pseal"
	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// Hole punching (docs/protocol/p2p.md §20; doc.go "Direct paths"). The
// puncher is an extension of the UDP side: it handles PUNCH_OFFER from
// the TLS reader, PUNCH_PROBE and PUNCH_ACK from the datagram dispatch,
// runs one goroutine per punch in progress and one keeper per direct path
// (keep-alive probes; the path goes back to the hub when they stop being
// answered).

// Transport is what [Peer.Punch] opens.
type Transport = p2pwire.Transport

// The transports of [Peer.Punch].
const (
	PunchUDP = p2pwire.TransportUDP
	PunchTCP = p2pwire.TransportTCP
)

// ErrPunchFailed is returned by [Peer.Punch] when no direct path was
// confirmed both ways before the deadline (a symmetric NAT, a firewall);
// traffic to the peer stays on the hub.
var ErrPunchFailed = errors.New("p2p: hole punch failed")

// Defaults of the punch fields of [Config].
const (
	// DefaultPunchTimeout bounds a punch whose ctx has no deadline.
	DefaultPunchTimeout = 5 * time.Second
	// DefaultProbeInterval is the gap between two rounds of probes to
	// every candidate during a punch.
	DefaultProbeInterval = 50 * time.Millisecond
	// DefaultKeepAlive is how often a direct path is probed once up.
	DefaultKeepAlive = time.Second
	// DefaultDirectTimeout: a direct path whose keep-alives got no answer
	// for this long is dead; traffic goes back to the hub.
	DefaultDirectTimeout = 4 * time.Second
	// maxPunchTargets bounds the endpoints probed: the candidates and
	// the public endpoint.
	maxPunchTargets = p2pwire.MaxCandidates + 1
	// maxLive bounds the punches in progress and the direct paths up at
	// once (the hub bounds each requester; this bounds them all): an
	// offer beyond it fails at once.
	maxLive = 1024
)

// puncher is a peer's hole-punch state.
type puncher struct {
	p    *Peer
	stop chan struct{}
	wg   sync.WaitGroup

	mu     sync.Mutex
	offers map[uint64]chan *p2pwire.PunchOffer // guarded by mu; request id → its Punch call
	live   map[uint64]*attempt                 // guarded by mu; punch id → attempt or direct path
	closed bool                                // guarded by mu
	ignore atomic.Bool                         // tests: drop offers
}

// attempt is one punch from offer to deadline, and then the direct path
// it made, until it dies.
type attempt struct {
	pp    *puncher
	offer p2pwire.PunchOffer
	side  p2pseal.Side
	d     *directPath
	// acked is closed when a PUNCH_ACK confirmed a path (UDP).
	acked   chan struct{}
	ackOnce sync.Once
	mu      sync.Mutex
	lastAck time.Time               // guarded by mu
	tcp     atomic.Pointer[tcpPath] // TCP: the punched connection once up
}

// ErrNotRegistered matches the hub's refusal of a punch when a side has
// no UDP registration (ERROR not_registered).
var ErrNotRegistered = errors.New("p2p: not registered on UDP")

func init() {
	extensions = append(extensions, startPuncher)
	codeErrors[p2pwire.CodeNotRegistered] = ErrNotRegistered
}

// startPuncher is the punch extension's start: nothing without UDP (the
// punch needs the registered endpoints).
func startPuncher(p *Peer) func() {
	if p.udp == nil {
		return func() {}
	}
	pp := &puncher{p: p, stop: make(chan struct{}),
		offers: map[uint64]chan *p2pwire.PunchOffer{}, live: map[uint64]*attempt{}}
	p.punch = pp
	p.handleDatagrams(p2pwire.KindPunchProbe, pp.onProbe)
	p.handleDatagrams(p2pwire.KindPunchAck, pp.onAck)
	return func() {
		pp.mu.Lock()
		pp.closed = true
		live := make([]*attempt, 0, len(pp.live))
		for _, a := range pp.live {
			live = append(live, a)
		}
		pp.mu.Unlock()
		close(pp.stop)
		for _, a := range live {
			if tp := a.tcp.Load(); tp != nil {
				tp.close()
			}
		}
		pp.wg.Wait()
	}
}

// Punch asks the hub to broker a hole punch to peer over transport
// ([PunchUDP] or [PunchTCP]) and waits until the direct path is confirmed
// both ways, for ctx (Config.PunchTimeout when ctx has no deadline; at
// most a minute, the protocol's cap). From
// then on every send to the peer takes the direct path while it is up;
// an [Event] of type EventPath says when the path changes (up, or back to
// the hub when its keep-alives go unanswered). It fails with
// [ErrPunchFailed] when no path was confirmed in time, a *HubError when
// the hub refused (ErrNotRegistered: a side has no UDP registration),
// or [ErrNoUDP] without a UDP session. Traffic stays on the hub when it
// fails. A TCP punch to a peer whose punched TCP connection is up
// returns nil at once (a second connection between the same ports could
// not open); a UDP punch replaces an up path.
func (p *Peer) Punch(ctx context.Context, peer string, transport Transport) error {
	pp := p.punch
	if pp == nil {
		return ErrNoUDP
	}
	if !transport.Valid() {
		return fmt.Errorf("p2p: punch: unknown transport %d", transport)
	}
	if transport == PunchTCP && p.PathTo(peer) == PathDirectTCP {
		// The connection's addresses are taken while it is up (and for
		// a while after in TIME_WAIT): a second one could not open.
		return nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.cfg.PunchTimeout)
		defer cancel()
	}
	dl, _ := ctx.Deadline()
	ms := time.Until(dl).Milliseconds()
	if ms <= 0 {
		return fmt.Errorf("p2p: punch to %s: %w", peer, context.DeadlineExceeded)
	}
	if ms > p2pwire.MaxPunchTimeoutMS { // the protocol's cap: both sides stop together
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p2pwire.MaxPunchTimeoutMS*time.Millisecond)
		defer cancel()
		ms = p2pwire.MaxPunchTimeoutMS
	}
	select {
	case <-p.udp.regCh:
	case <-ctx.Done():
		return fmt.Errorf("p2p: punch to %s: not registered on UDP: %w", peer, ctx.Err())
	}
	id := p.nextID.Add(1)
	errCh := make(chan *response, 1)
	offerCh := make(chan *p2pwire.PunchOffer, 1)
	p.mu.Lock()
	switch {
	case p.err != nil:
		err := p.err
		p.mu.Unlock()
		return closedErr(err)
	case len(p.pending) >= p.cfg.MaxPendingRequests:
		p.mu.Unlock()
		return fmt.Errorf("p2p: punch: %d requests in flight already", len(p.pending))
	}
	p.pending[id] = pending{ch: errCh} // an ERROR about the request fails it; no peer answers it
	p.mu.Unlock()
	pp.mu.Lock()
	pp.offers[id] = offerCh
	pp.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.pending, id)
		p.mu.Unlock()
		pp.mu.Lock()
		delete(pp.offers, id)
		pp.mu.Unlock()
	}()
	req := &p2pwire.PunchRequest{RequestID: id, Transport: transport, TimeoutMS: uint32(ms), Peer: p2pwire.PeerID(peer)}
	if err := p.writeFrame(req); err != nil {
		return fmt.Errorf("p2p: punch to %s: %w", peer, err)
	}
	var offer *p2pwire.PunchOffer
	select {
	case offer = <-offerCh:
	case r := <-errCh:
		return fmt.Errorf("p2p: punch to %s: %w", peer, r.err)
	case <-ctx.Done():
		return fmt.Errorf("p2p: punch to %s: no offer from the hub: %w", peer, ctx.Err())
	case <-p.closing:
		return closedErr(p.Err())
	}
	a, err := pp.newAttempt(offer)
	if err != nil {
		return err
	}
	pp.mu.Lock()
	if pp.closed {
		pp.mu.Unlock()
		return closedErr(p.Err())
	}
	pp.wg.Add(1) // the extension's stop waits for the attempt, which ends at pp.stop
	pp.mu.Unlock()
	defer pp.wg.Done()
	return a.run(ctx)
}

// onOffer takes a PUNCH_OFFER from the TLS reader: the requester's goes
// to its Punch call, the other side's starts an attempt of its own.
func (pp *puncher) onOffer(m *p2pwire.PunchOffer) {
	if pp.ignore.Load() {
		return
	}
	if m.Initiator() {
		pp.mu.Lock()
		ch := pp.offers[m.RequestID]
		pp.mu.Unlock()
		if ch != nil {
			select {
			case ch <- m:
			default:
			}
		}
		return
	}
	a, err := pp.newAttempt(m)
	if err != nil {
		pp.p.log.Debug("p2p: punch offer refused", "peer", string(m.Peer), "err", err)
		return
	}
	pp.mu.Lock()
	if pp.closed {
		pp.mu.Unlock()
		return
	}
	pp.wg.Add(1)
	pp.mu.Unlock()
	go func() {
		defer pp.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(m.TimeoutMS)*time.Millisecond)
		defer cancel()
		go func() { // the punch ends with the peer
			select {
			case <-pp.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		_ = a.run(ctx)
	}()
}

func (pp *puncher) newAttempt(m *p2pwire.PunchOffer) (*attempt, error) {
	p := pp.p
	if !p.knows(string(m.Peer)) {
		return nil, fmt.Errorf("p2p: punch offer for %s, not a peer of this network", m.Peer)
	}
	side, err := p2pseal.PairSide(m.Secret[:], m.KeyID, p.id, string(m.Peer))
	if err != nil {
		return nil, fmt.Errorf("p2p: punch keys: %w", err)
	}
	a := &attempt{pp: pp, offer: *m, side: side, acked: make(chan struct{})}
	path := PathDirectUDP
	if m.Transport == p2pwire.TransportTCP {
		path = PathDirectTCP
	}
	a.d = &directPath{peer: string(m.Peer), path: path, keyID: m.KeyID, side: side}
	return a, nil
}

// knows reports whether id is in the peer set.
func (p *Peer) knows(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.peers[id]
	return ok
}

// targets returns the endpoints to probe: the other side's candidates,
// then its public endpoint, without repeats. Loopback candidates are left
// out unless the public endpoint is a loopback one too (both peers on the
// hub's machine): elsewhere they name this side's own machine.
func (a *attempt) targets() []netip.AddrPort {
	out := make([]netip.AddrPort, 0, maxPunchTargets)
	loop := a.offer.Public.Addr().IsLoopback()
	for _, c := range append(a.offer.Candidates, a.offer.Public) {
		if c.Addr().IsLoopback() && !loop {
			continue
		}
		if c.IsValid() && !contains(out, c) && len(out) < maxPunchTargets {
			out = append(out, c)
		}
	}
	return out
}

func contains(s []netip.AddrPort, x netip.AddrPort) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// run punches until a path is confirmed or ctx ends, reports the outcome
// to the hub, and on success installs the path and starts its keeper.
func (a *attempt) run(ctx context.Context) error {
	pp, p := a.pp, a.pp.p
	pp.mu.Lock()
	if pp.closed {
		pp.mu.Unlock()
		return ErrClosed
	}
	if len(pp.live) >= maxLive {
		pp.mu.Unlock()
		_ = p.writeFrame(&p2pwire.PunchResult{PunchID: a.offer.PunchID, Outcome: p2pwire.PunchFailed})
		return fmt.Errorf("p2p: punch to %s: %d punches and direct paths already: %w", a.offer.Peer, maxLive, ErrPunchFailed)
	}
	pp.live[a.offer.PunchID] = a
	pp.mu.Unlock()
	var err error
	if a.offer.Transport == p2pwire.TransportTCP {
		err = a.runTCP(ctx)
	} else {
		err = a.runUDP(ctx)
	}
	if err == nil && !pp.isLive(a) {
		err = ErrPunchFailed // dropped meanwhile (a newer punch, the peer closing)
	}
	outcome := p2pwire.PunchUp
	if err != nil {
		outcome = p2pwire.PunchFailed
		pp.forget(a)
	}
	_ = p.writeFrame(&p2pwire.PunchResult{PunchID: a.offer.PunchID, Outcome: outcome})
	if err != nil {
		return fmt.Errorf("p2p: punch to %s over %s: %w", a.offer.Peer, a.offer.Transport, err)
	}
	p.emit(Event{Type: EventPath, Peer: a.d.peer, Path: a.d.path})
	pp.mu.Lock()
	if pp.closed {
		pp.mu.Unlock()
		return nil
	}
	pp.wg.Add(1)
	pp.mu.Unlock()
	go a.keep()
	return nil
}

// isLive reports whether a is still the attempt of its punch id.
func (pp *puncher) isLive(a *attempt) bool {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	return !pp.closed && pp.live[a.offer.PunchID] == a
}

// forget drops a's state and its direct path.
func (pp *puncher) forget(a *attempt) {
	pp.mu.Lock()
	if pp.live[a.offer.PunchID] == a {
		delete(pp.live, a.offer.PunchID)
	}
	pp.mu.Unlock()
	a.d.up.Store(false)
	pp.p.clearDirectPath(a.d)
	if tp := a.tcp.Load(); tp != nil {
		tp.close()
	}
}

// runUDP registers the pair key (so the other side's probes open), probes
// every target each ProbeInterval, and succeeds at the first PUNCH_ACK:
// this side's probes reach the other and the other's answers reach this
// one. The other side succeeds at the ack of its own probes.
func (a *attempt) runUDP(ctx context.Context) error {
	p := a.pp.p
	p.setDirectPath(a.d) // not up: sends still take the hub
	targets := a.targets()
	t := time.NewTicker(p.cfg.ProbeInterval)
	defer t.Stop()
	var buf []byte
	for {
		for _, to := range targets {
			buf, _ = (&p2pwire.PunchProbe{PunchID: a.offer.PunchID, Target: to}).AppendTo(buf[:0])
			_ = p.sealTo(a.side.Seal, to, buf)
		}
		select {
		case <-a.acked:
			a.d.up.Store(true)
			return nil
		case <-ctx.Done():
			return ErrPunchFailed
		case <-a.pp.stop:
			return ErrClosed
		case <-t.C:
		}
	}
}

// lookup returns the attempt of punch id whose pair key is keyID.
func (pp *puncher) lookup(id uint64, keyID uint32) *attempt {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if a := pp.live[id]; a != nil && a.offer.KeyID == keyID {
		return a
	}
	return nil
}

// onProbe answers a PUNCH_PROBE (during a punch, and the keep-alives of a
// direct path) with a PUNCH_ACK to its source. It runs on the UDP reader.
func (pp *puncher) onProbe(in *inDatagram) {
	var m p2pwire.PunchProbe
	if in.Path != PathDirectUDP || unmarshalRest(&m, in) != nil {
		return
	}
	a := pp.lookup(m.PunchID, in.KeyID)
	if a == nil {
		return
	}
	ack, _ := (&p2pwire.PunchAck{PunchID: m.PunchID, Target: m.Target, Observed: in.Src}).AppendTo(nil)
	_ = pp.p.sealTo(a.side.Seal, in.Src, ack)
}

// onAck confirms a punch, or keeps a direct path alive. It runs on the
// UDP reader.
func (pp *puncher) onAck(in *inDatagram) {
	var m p2pwire.PunchAck
	if in.Path != PathDirectUDP || unmarshalRest(&m, in) != nil {
		return
	}
	a := pp.lookup(m.PunchID, in.KeyID)
	if a == nil {
		return
	}
	a.mu.Lock()
	a.lastAck = time.Now()
	a.mu.Unlock()
	a.d.setRemote(in.Src) // where the answers come from: also after a rebinding
	a.ackOnce.Do(func() { close(a.acked) })
}

// unmarshalRest decodes a punch datagram from its fields: it rebuilds the
// body (kind, no route flags, fields) that the typed decoder reads.
func unmarshalRest(m p2pwire.Message, in *inDatagram) error {
	var b [64]byte
	body := append(append(b[:0], byte(in.Kind), 0), in.Rest...)
	return m.Unmarshal(body)
}

// keep probes an up direct path every KeepAlive; when no answer came for
// DirectTimeout the path is dead: it is removed, sends go through the hub
// again and an EventPath says so.
func (a *attempt) keep() {
	pp, p := a.pp, a.pp.p
	defer pp.wg.Done()
	a.mu.Lock()
	a.lastAck = time.Now()
	a.mu.Unlock()
	t := time.NewTicker(p.cfg.KeepAlive)
	defer t.Stop()
	var buf []byte
	for {
		select {
		case <-pp.stop:
			return
		case <-t.C:
		}
		tp := a.tcp.Load()
		if tp != nil && tp.dead() {
			break
		}
		a.mu.Lock()
		silent := time.Since(a.lastAck)
		a.mu.Unlock()
		if silent > p.cfg.DirectTimeout {
			break
		}
		if p.directPath(a.d.peer) != a.d || !p.knows(a.d.peer) {
			pp.forget(a) // replaced by a newer punch, or the peer left: no event
			return
		}
		buf, _ = (&p2pwire.PunchProbe{PunchID: a.offer.PunchID, Target: a.remote()}).AppendTo(buf[:0])
		if tp != nil {
			_ = tp.write(buf)
		} else {
			_ = p.sealTo(a.side.Seal, a.d.remote(), buf)
		}
	}
	replaced := p.directPath(a.d.peer) != a.d
	pp.forget(a)
	if !replaced {
		p.log.Debug("p2p: direct path died", "peer", a.d.peer, "path", a.d.path.String())
		p.emit(Event{Type: EventPath, Peer: a.d.peer, Path: PathHub})
	}
}

// remote returns the other end of a's path.
func (a *attempt) remote() netip.AddrPort {
	if tp := a.tcp.Load(); tp != nil {
		return tp.remote
	}
	return a.d.remote()
}

// PathTo returns the path sends to peer take now: a direct path while one
// is up, else PathHub.
func (p *Peer) PathTo(peer string) Path {
	if p.udp == nil {
		return PathHub
	}
	if d := p.directPath(peer); d != nil && d.up.Load() {
		return d.path
	}
	return PathHub
}
