package relay

import (
	"errors"
	"time"

	"golang.org/x/time/rate"

	"github.com/switchboardgg/switchboard/internal/udpio"

	"github.com/switchboardgg/switchboard/protocol/relaywire"
)

// worker handles the messages of one reading goroutine (a UDP socket's
// reader, a WebSocket connection's reader) with its own decoders, answer
// buffer and source rate table, so that handling allocates nothing.
type worker struct {
	s   *Server
	src *sourceTable

	relay   relaywire.Relay
	bind    relaywire.Bind
	ping    relaywire.Ping
	connect relaywire.ConnectRequest
	disc    relaywire.Disconnect
	close   relaywire.Close
	sub     relaywire.PeersSubscribe
	out     [64]byte

	// A UDP reader's outbox: what it sends through its own socket while
	// handling a batch goes out in one sendmmsg after the batch. Nil for
	// WebSocket readers.
	udp    *udpCarrier
	outbox []udpio.Message
	small  [][64]byte // copies of answers (out is reused)
}

func (s *Server) newWorker(src *sourceTable) *worker { return &worker{s: s, src: src} }

// send sends b to ep: into the outbox when ep is on the worker's own UDP
// socket (alias: b stays valid until the flush, as a datagram of the read
// batch does; else it is copied), directly otherwise.
func (w *worker) send(ep endpoint, b []byte, alias bool) {
	if w.udp == nil || ep.c != carrier(w.udp) || (!alias && len(b) > len(w.small[0])) {
		w.s.send(ep, b)
		return
	}
	if len(w.outbox) == cap(w.outbox) {
		w.flush()
	}
	i := len(w.outbox)
	if !alias {
		b = w.small[i][:copy(w.small[i][:], b)]
	}
	w.outbox = append(w.outbox, udpio.Message{Buf: b, Addr: ep.ap})
}

// flush sends the outbox.
func (w *worker) flush() {
	if len(w.outbox) == 0 {
		return
	}
	n, _ := w.udp.io.WriteBatch(w.outbox)
	var bytes int
	for _, m := range w.outbox[:n] {
		bytes += len(m.Buf)
	}
	w.s.m.packetsOut.Add(float64(n))
	w.s.m.bytesOut.Add(float64(bytes))
	if n < len(w.outbox) {
		w.s.m.drops[dropSendFailed].Add(float64(len(w.outbox) - n))
	}
	clear(w.outbox) // drop the references to the read buffers
	w.outbox = w.outbox[:0]
}

func (w *worker) drop(r dropReason) { w.s.m.drops[r].Inc() }

// answer sends m to ep, if ep's source is within its rate. Every answer is
// smaller than the message it answers (ERROR 21 bytes answers messages of
// at least 22; BIND_RECEIVED, ACCEPTED and REJECTED answer BIND and
// CONNECT_REQUEST), so the relay amplifies nothing.
func (w *worker) answer(ep endpoint, m relaywire.Message, now time.Time) {
	if !w.src.allow(ep.ap, now.UnixNano()) {
		w.drop(dropSourceRate)
		return
	}
	b, err := m.AppendTo(w.out[:0])
	if err != nil {
		return
	}
	w.send(ep, b, false)
}

func (w *worker) sendError(ep endpoint, id relaywire.AllocationID, code relaywire.ErrorCode, now time.Time) {
	e := relaywire.Error{AllocationID: id, Code: code}
	w.answer(ep, &e, now)
}

// handle serves one relay message from ep (reference §1.8).
func (w *worker) handle(ep endpoint, b []byte) {
	s := w.s
	s.m.packetsIn.Inc()
	s.m.bytesIn.Add(float64(len(b)))
	if len(b) > s.cfg.MaxDatagram {
		w.drop(dropTooLarge)
		return
	}
	t, err := relaywire.Peek(b)
	if err != nil {
		if errors.Is(err, relaywire.ErrUnknownType) {
			w.drop(dropUnknownType)
		} else {
			w.drop(dropMalformed)
		}
		return
	}
	now := s.cfg.Now()
	switch t {
	case relaywire.TypeRelay:
		w.onRelay(ep, b, now)
	case relaywire.TypeBind:
		w.onBind(ep, b, now)
	case relaywire.TypePing:
		w.onPing(ep, b, now)
	case relaywire.TypeConnectRequest:
		w.onConnect(ep, b, now)
	case relaywire.TypeDisconnect:
		w.onDisconnect(ep, b, now)
	case relaywire.TypeClose:
		w.onClose(ep, b)
	case relaywire.TypePeersSubscribe:
		w.onSubscribe(ep, b, now)
	default: // types only a relay sends
		w.drop(dropUnknownType)
	}
}

// sender returns the live allocation id bound at ep, answering ERROR 4
// (unknown or released) or ERROR 3 (bound elsewhere: the client re-binds
// with a larger nonce) and returning nil otherwise.
func (w *worker) sender(ep endpoint, id relaywire.AllocationID, now time.Time) *allocation {
	a := w.s.lookup(id)
	if a == nil {
		if _, ok := w.s.released.Load(id); ok {
			w.drop(dropReleased)
		} else {
			w.drop(dropUnknownAlloc)
		}
		w.sendError(ep, id, relaywire.CodeNotFound, now)
		return nil
	}
	if !a.bound(ep) {
		w.drop(dropAddrMismatch)
		w.sendError(ep, id, relaywire.CodeClientMismatch, now)
		return nil
	}
	return a
}

// onRelay forwards a RELAY unchanged (§1.8.5): the sender must be bound
// at ep and connected to the recipient.
func (w *worker) onRelay(ep endpoint, b []byte, now time.Time) {
	if err := w.relay.Unmarshal(b); err != nil {
		w.drop(dropMalformed)
		return
	}
	from := w.sender(ep, w.relay.From, now)
	if from == nil {
		return
	}
	to := from.peer(w.relay.To)
	if to == nil {
		w.drop(dropNotConnected)
		w.sendError(ep, w.relay.From, relaywire.CodeNotConnected, now)
		return
	}
	if !from.bw.AllowN(now, len(b)) {
		w.drop(dropBandwidth)
		return
	}
	dst := to.ep.Load()
	if dst == nil {
		w.drop(dropNoRoute)
		return
	}
	from.touch(now)
	to.touch(now)
	from.packetsIn.Add(1)
	from.bytesIn.Add(uint64(len(w.relay.Data)))
	to.packetsOut.Add(1)
	to.bytesOut.Add(uint64(len(w.relay.Data)))
	w.send(*dst, b, true)
}

// onPing echoes a PING to the allocation's bound address, never elsewhere.
func (w *worker) onPing(ep endpoint, b []byte, now time.Time) {
	if err := w.ping.Unmarshal(b); err != nil {
		w.drop(dropMalformed)
		return
	}
	if !w.src.allow(ep.ap, now.UnixNano()) {
		w.drop(dropSourceRate)
		return
	}
	a := w.sender(ep, w.ping.From, now)
	if a == nil {
		return
	}
	a.touch(now)
	w.send(ep, b, true)
}

// onBind binds an allocation to ep (§1.8.1–3, reference §8): the blob
// must open, the HMAC must be right (else silence), the blob must be this
// node's, of this boot epoch, unexpired and not released (else ERROR 4).
// From the bound address any nonce is accepted; from another address only
// a larger one (else ERROR 3).
func (w *worker) onBind(ep endpoint, b []byte, now time.Time) {
	s := w.s
	if err := w.bind.Unmarshal(b); err != nil {
		w.drop(dropMalformed)
		return
	}
	if !w.src.allow(ep.ap, now.UnixNano()) {
		w.drop(dropSourceRate)
		return
	}
	c, err := s.cfg.Keys.Open(w.bind.ConnectionData[:])
	if err != nil {
		w.drop(dropBadData)
		return
	}
	id := relaywire.AllocationID(c.AllocationID)
	if d, ok := ep.c.(*dtlsConn); ok && d.id != id {
		// A DTLS connection is keyed by its allocation's key: it binds
		// that allocation only.
		w.drop(dropDTLSIdentity)
		return
	}
	a := s.lookup(id)
	var key relaywire.Key
	if a != nil {
		key = a.key
	} else {
		k, err := s.cfg.Keys.AllocationKey(c.KeyID, c.AllocationID)
		if err != nil {
			w.drop(dropBadData)
			return
		}
		key = relaywire.Key(k)
	}
	if !w.bind.Verify(&key) {
		// Silence, not ERROR 2: the sender proved nothing, and UTP only
		// logs ERROR 2 anyway (docs/protocol/relay.md §15).
		w.drop(dropBadHMAC)
		return
	}
	if a == nil {
		switch {
		case c.NodeID != s.cfg.NodeID || c.BootEpoch != s.cfg.BootEpoch:
			w.drop(dropWrongNode)
			w.sendError(ep, id, relaywire.CodeNotFound, now)
			return
		case !now.Before(c.Expires) || now.After(c.Issued.Add(s.cfg.BindTimeout)):
			w.drop(dropExpired)
			w.sendError(ep, id, relaywire.CodeNotFound, now)
			return
		}
		if _, ok := s.released.Load(id); ok {
			w.drop(dropReleased)
			w.sendError(ep, id, relaywire.CodeNotFound, now)
			return
		}
		if s.nAllocs.Load() >= int64(s.cfg.MaxAllocations) || s.nReleased.Load() >= int64(s.cfg.MaxReleased) {
			w.drop(dropCapacity)
			return
		}
		n := &allocation{
			id:       id,
			host:     relaywire.AllocationID(c.HostAllocationID),
			isHost:   !c.IsJoiner(),
			key:      key,
			maxPeers: s.cfg.MaxPeers,
			idle:     c.IdleTimeout,
			expires:  c.Expires,
			created:  now,
			bw:       rate.NewLimiter(rate.Limit(s.cfg.AllocationRate), s.cfg.AllocationBurst),
			peers:    make(map[relaywire.AllocationID]*allocation),
		}
		if n.isHost {
			n.subRate = rate.NewLimiter(rate.Limit(s.cfg.SubscribeRate), s.cfg.SubscribeBurst)
		}
		if c.MaxConnections > 0 {
			n.maxPeers = min(n.maxPeers, int(c.MaxConnections))
		}
		n.nonce = w.bind.Nonce
		n.ep.Store(&ep)
		n.touch(now)
		if v, loaded := s.allocs.LoadOrStore(id, n); loaded {
			a = v.(*allocation) // bound concurrently on another carrier: a re-bind
		} else {
			s.nAllocs.Add(1)
			s.m.allocations.Inc()
			s.byAddr.Store(ep, n)
			s.m.binds.Inc()
			s.log.Debug("relay: allocation bound", "allocation", id, "host", n.isHost, "carrier", ep.c.kind())
			noteBound(ep, n)
			w.answer(ep, &relaywire.BindReceived{}, now)
			return
		}
	}
	a.mu.Lock()
	switch {
	case a.released:
		a.mu.Unlock()
		w.drop(dropReleased)
		w.sendError(ep, id, relaywire.CodeNotFound, now)
		return
	case a.bound(ep):
		a.nonce = max(a.nonce, w.bind.Nonce)
	case w.bind.Nonce > a.nonce:
		old := a.ep.Load()
		a.nonce = w.bind.Nonce
		a.ep.Store(&ep)
		s.byAddr.CompareAndDelete(*old, a)
		s.byAddr.Store(ep, a)
	default:
		a.mu.Unlock()
		w.drop(dropAddrMismatch)
		w.sendError(ep, id, relaywire.CodeClientMismatch, now)
		return
	}
	a.mu.Unlock()
	a.touch(now)
	noteBound(ep, a)
	s.m.binds.Inc()
	w.answer(ep, &relaywire.BindReceived{}, now)
}

// onConnect connects a joiner to its host (§1.8.4): ACCEPTED(from = host,
// to = requester) to the requester only, again on a retry; REJECTED when
// the host has MaxConnections peers.
func (w *worker) onConnect(ep endpoint, b []byte, now time.Time) {
	s := w.s
	if err := w.connect.Unmarshal(b); err != nil {
		w.drop(dropMalformed)
		return
	}
	if !w.src.allow(ep.ap, now.UnixNano()) {
		w.drop(dropSourceRate)
		return
	}
	req := w.sender(ep, w.connect.AllocationID, now)
	if req == nil {
		return
	}
	c, err := s.cfg.Keys.Open(w.connect.ToConnectionData[:])
	if err != nil {
		w.drop(dropBadData)
		return
	}
	hostID := relaywire.AllocationID(c.AllocationID)
	req.touch(now)
	switch {
	case hostID == req.id:
		w.drop(dropUnauthorized)
		w.sendError(ep, req.id, relaywire.CodeSelfConnect, now)
		return
	case hostID != req.host:
		// Only a joiner connects, and only to the host its blob names.
		w.drop(dropUnauthorized)
		w.sendError(ep, req.id, relaywire.CodeUnauthorized, now)
		return
	}
	host := s.lookup(hostID)
	if host == nil {
		if _, ok := s.released.Load(hostID); ok {
			w.drop(dropReleased)
			w.sendError(ep, req.id, relaywire.CodeNotFound, now)
			return
		}
		// Not bound yet: UTP retries every second.
		w.drop(dropNotConnected)
		w.sendError(ep, req.id, relaywire.CodeNotConnected, now)
		return
	}
	if !host.isHost {
		// Blobs never name a joiner as a host; refusing it also keeps the
		// lock order (a host's before a joiner's) acyclic.
		w.drop(dropUnauthorized)
		w.sendError(ep, req.id, relaywire.CodeUnauthorized, now)
		return
	}
	host.mu.Lock()
	if host.released {
		host.mu.Unlock()
		w.drop(dropReleased)
		w.sendError(ep, req.id, relaywire.CodeNotFound, now)
		return
	}
	_, already := host.peers[req.id]
	if !already && len(host.peers) >= host.maxPeers {
		host.mu.Unlock()
		w.drop(dropRejected)
		w.answer(ep, &relaywire.Rejected{From: hostID, To: req.id}, now)
		return
	}
	if !already {
		req.mu.Lock()
		ok := !req.released
		if ok {
			req.peers[hostID] = host
			req.npeers.Store(1)
		}
		req.mu.Unlock()
		if !ok {
			host.mu.Unlock()
			return
		}
		host.peers[req.id] = req
		host.npeers.Add(1)
		if host.subscribed.Load() {
			// Under the host's lock: a PEERS_SUBSCRIBE answering now
			// lists req or is followed by this event, never neither.
			w.s.peerEvent(host, relaywire.PeerConnected, req.id)
		}
	}
	host.mu.Unlock()
	host.touch(now)
	w.answer(ep, &relaywire.Accepted{From: hostID, To: req.id}, now)
}

// onDisconnect ends a peer relation, frees the host's slot and forwards
// the DISCONNECT to the peer. It does not release either allocation.
func (w *worker) onDisconnect(ep endpoint, b []byte, now time.Time) {
	if err := w.disc.Unmarshal(b); err != nil {
		w.drop(dropMalformed)
		return
	}
	a := w.sender(ep, w.disc.From, now)
	if a == nil {
		return
	}
	p := a.peer(w.disc.To)
	if p == nil {
		w.drop(dropNotConnected)
		w.sendError(ep, a.id, relaywire.CodeNotConnected, now)
		return
	}
	host, joiner := a, p
	if !a.isHost {
		host, joiner = p, a
	}
	host.mu.Lock()
	joiner.mu.Lock()
	if _, ok := host.peers[joiner.id]; ok {
		delete(host.peers, joiner.id)
		host.npeers.Add(-1)
		if a == joiner && host.subscribed.Load() {
			w.s.peerEvent(host, relaywire.PeerDisconnected, joiner.id)
		}
	}
	if _, ok := joiner.peers[host.id]; ok {
		delete(joiner.peers, host.id)
		joiner.npeers.Store(0)
	}
	joiner.mu.Unlock()
	host.mu.Unlock()
	a.touch(now)
	p.touch(now)
	if dst := p.ep.Load(); dst != nil {
		w.send(*dst, b, true)
	}
}

// onClose releases the sender's allocation: CLOSE with the sender's own id
// from its bound address, or the bare CLOSE from a bound address. It is
// never answered (20 bytes are less than an ERROR's 21).
func (w *worker) onClose(ep endpoint, b []byte) {
	if err := w.close.Unmarshal(b); err != nil {
		w.drop(dropMalformed)
		return
	}
	var a *allocation
	if w.close.HasAllocationID {
		a = w.s.lookup(w.close.AllocationID)
		if a == nil {
			w.drop(dropUnknownAlloc)
			return
		}
		if !a.bound(ep) {
			w.drop(dropAddrMismatch)
			return
		}
	} else {
		v, ok := w.s.byAddr.Load(ep)
		if !ok {
			w.drop(dropUnknownAlloc)
			return
		}
		a = v.(*allocation)
	}
	w.s.release(a, ReleaseClosed)
}

// onSubscribe serves PEERS_SUBSCRIBE (docs/protocol/relay.md, host peer
// events): from a host's bound address, within the host's subscribe rate,
// it answers PEER_EVENT subscribed and one PEER_EVENT connected per
// connected peer, and marks the host subscribed. Every other is dropped
// without an answer, even an ERROR: at 21 bytes it would be larger than
// the 20-byte request, and the answer to a host grows with its peers, so
// only a bound host gets one, at a bounded rate.
func (w *worker) onSubscribe(ep endpoint, b []byte, now time.Time) {
	if err := w.sub.Unmarshal(b); err != nil {
		w.drop(dropMalformed)
		return
	}
	if !w.src.allow(ep.ap, now.UnixNano()) {
		w.drop(dropSourceRate)
		return
	}
	a := w.s.lookup(w.sub.AllocationID)
	if a == nil {
		w.drop(dropUnknownAlloc)
		return
	}
	if !a.bound(ep) {
		w.drop(dropAddrMismatch)
		return
	}
	if !a.isHost || !a.subRate.AllowN(now, 1) {
		w.drop(dropSubscribe)
		return
	}
	a.touch(now)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.released {
		return
	}
	a.subscribed.Store(true)
	w.s.peerEvent(a, relaywire.PeerSubscribed, a.id)
	for id := range a.peers {
		w.s.peerEvent(a, relaywire.PeerConnected, id)
	}
}
