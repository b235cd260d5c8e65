package p2p

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/switchboardgg/switchboard/protocol/p2pwire"
	"github.com/switchboardgg/switchboard/tokens"
)

// ErrServerClosed is returned by [Hub.Serve] after Shutdown or Close.
var ErrServerClosed = errors.New("p2p: hub closed")

// Hub is the P2P hub's TLS side: it admits peers with hub tickets, keeps
// networks and routes between their peers. Its methods are safe for
// concurrent use.
type Hub struct {
	cfg Config
	log *slog.Logger
	m   *metrics

	punch *broker // hole-punch brokering (punch.go); its lock is a leaf

	mu       sync.Mutex
	networks map[string]*network
	resume   map[string]*peer // resume token → peer within its window or connected
	conns    map[*conn]struct{}
	lns      map[net.Listener]struct{}
	closing  bool
	peers    int

	nconns atomic.Int64 // connections, for MaxConns
	wg     sync.WaitGroup

	udp  *udpSock // guarded by mu; the socket of ServeUDP (udp.go)
	kmu  sync.RWMutex
	keys map[uint32]*peer // guarded by kmu; UDP key id → peer
}

// Load is what the hub reports in the node registry.
type Load struct {
	Peers    int // in a network, connected or within the resume window
	Networks int
}

// network is a set of peers that see and reach each other.
type network struct {
	name string
	bw   sharedBucket

	mu      sync.RWMutex
	peers   map[string]*peer
	version uint64        // bumped on every join and leave
	ver     atomic.Uint64 // version, for readers' destination caches
}

// peer is one peer id: it outlives its connection for the resume window.
type peer struct {
	id       string
	idb      []byte // id as bytes, for stamping
	username string
	net      *network
	udp      *udpPeer // nil with Config.DisableUDP; immutable after join

	mu          sync.Mutex
	cond        sync.Cond
	cur         *conn  // nil while detached
	out         []byte // frames waiting for the writer, at most SendQueueBytes
	events      map[string]p2pwire.EventOp
	evVersion   uint64
	needSet     bool
	evict       p2pwire.ErrorCode // set when the hub removes the peer; the writer says why and closes
	evictReason string
	evictSent   bool
	gone        bool // removed from its network
	resumeToken string
	timer       *time.Timer // resume window while detached
}

// conn is one TLS connection and, once admitted, its peer.
type conn struct {
	h        *Hub
	nc       net.Conn
	p        *peer
	admitted bool          // under Hub.mu: c.p is set
	wdone    chan struct{} // closed when the writer ends
	spare    []byte        // the writer's second buffer

	// the reader's
	rate    bucket
	bw      bucket
	routed  int // messages queued since the last flushCounts
	routedB int // their bytes
	// the last destination looked up, valid while its network's version
	// is dstVer: a peer mostly talks to the same peer
	dst    *peer
	dstID  []byte
	dstVer uint64
}

// New returns a hub. It starts nothing until [Hub.Serve].
func New(cfg Config) (*Hub, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	t := cfg.TLS.Clone()
	t.MinVersion = tls.VersionTLS13
	t.DynamicRecordSizingDisabled = true // full 16 KiB records: the writer coalesces
	t.NextProtos = []string{"switchboard-p2p/1"}
	cfg.TLS = t
	h := &Hub{
		cfg: cfg, log: cfg.Logger,
		networks: map[string]*network{}, resume: map[string]*peer{},
		conns: map[*conn]struct{}{}, lns: map[net.Listener]struct{}{},
		keys: map[uint32]*peer{},
	}
	h.m = newMetrics(h, cfg.Registerer)
	h.punch = newBroker()
	return h, nil
}

// Logger returns the hub's logger.
func (h *Hub) Logger() *slog.Logger { return h.log }

// Load returns the hub's current peers and networks.
func (h *Hub) Load() Load {
	h.mu.Lock()
	defer h.mu.Unlock()
	return Load{Peers: h.peers, Networks: len(h.networks)}
}

// Serve accepts TLS connections on ln (a plain TCP listener: the hub does
// the TLS) until Shutdown or Close, and closes ln. It returns
// ErrServerClosed then, and the accept error otherwise.
func (h *Hub) Serve(ln net.Listener) error {
	h.mu.Lock()
	if h.closing {
		h.mu.Unlock()
		_ = ln.Close()
		return ErrServerClosed
	}
	h.lns[ln] = struct{}{}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.lns, ln)
		h.mu.Unlock()
		_ = ln.Close()
	}()
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			h.mu.Lock()
			closing := h.closing
			h.mu.Unlock()
			if closing {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			return fmt.Errorf("p2p: accept: %w", err)
		}
		delay = 0
		h.m.conns.Inc()
		if h.nconns.Add(1) > int64(h.cfg.MaxConns) {
			h.nconns.Add(-1)
			_ = nc.Close()
			continue
		}
		c := &conn{h: h, nc: tls.Server(nc, h.cfg.TLS)}
		h.mu.Lock()
		if h.closing {
			h.mu.Unlock()
			h.nconns.Add(-1)
			_ = nc.Close()
			return ErrServerClosed
		}
		h.conns[c] = struct{}{}
		h.wg.Add(1)
		h.mu.Unlock()
		go c.serve()
	}
}

// Shutdown stops accepting, tells every peer the hub is shutting down
// (ERROR shutting_down, closing), removes them and waits for the
// connections' goroutines until ctx ends, then closes what is left.
func (h *Hub) Shutdown(ctx context.Context) error {
	peers := h.stop()
	for _, p := range peers {
		h.evictPeer(p, p2pwire.CodeShuttingDown, evictReason(p2pwire.CodeShuttingDown))
	}
	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		_ = h.Close()
		<-done
		return ctx.Err()
	}
}

// stop marks the hub closing, closes its listeners and returns every peer.
func (h *Hub) stop() []*peer {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closing = true
	for ln := range h.lns {
		_ = ln.Close()
	}
	if h.udp != nil {
		_ = h.udp.pc.Close()
	}
	for c := range h.conns {
		if !c.admitted {
			_ = c.nc.Close() // in its handshake or HELLO
		}
	}
	var ps []*peer
	for _, n := range h.networks {
		n.mu.RLock()
		for _, p := range n.peers {
			ps = append(ps, p)
		}
		n.mu.RUnlock()
	}
	return ps
}

// Close closes every listener and connection at once and waits for the
// hub's goroutines. It is idempotent.
func (h *Hub) Close() error {
	peers := h.stop()
	h.mu.Lock()
	for c := range h.conns {
		_ = c.nc.Close()
	}
	h.mu.Unlock()
	for _, p := range peers {
		h.remove(p, "shutting_down")
	}
	h.wg.Wait()
	return nil
}

// Kick removes a peer from its network (ERROR kicked, closing). It reports
// whether the peer was there.
func (h *Hub) Kick(networkName, peerID string) bool {
	h.mu.Lock()
	n := h.networks[networkName]
	h.mu.Unlock()
	if n == nil {
		return false
	}
	n.mu.RLock()
	p := n.peers[peerID]
	n.mu.RUnlock()
	if p == nil {
		return false
	}
	h.evictPeer(p, p2pwire.CodeKicked, evictReason(p2pwire.CodeKicked))
	return true
}

// Peers returns the peer ids of a network, sorted.
func (h *Hub) Peers(networkName string) []string {
	h.mu.Lock()
	n := h.networks[networkName]
	h.mu.Unlock()
	if n == nil {
		return nil
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	ids := make([]string, 0, len(n.peers))
	for id := range n.peers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// evictPeer removes p for good: its writer sends ERROR code (closing) and
// closes the connection; a detached peer is removed at once.
func (h *Hub) evictPeer(p *peer, code p2pwire.ErrorCode, reason string) {
	p.mu.Lock()
	if p.evict == 0 {
		p.evict, p.evictReason = code, reason
	}
	c := p.cur
	p.mu.Unlock()
	p.cond.Broadcast()
	if c == nil {
		h.remove(p, code.String())
		return
	}
	// A writer stuck on a slow peer gives up quickly.
	_ = c.nc.SetWriteDeadline(h.cfg.Now().Add(time.Second))
}

// serve runs one connection: handshake, HELLO, then the read loop; the
// writer runs in its own goroutine once the peer is admitted.
func (c *conn) serve() {
	h := c.h
	defer func() {
		_ = c.nc.Close()
		h.mu.Lock()
		delete(h.conns, c)
		h.mu.Unlock()
		h.nconns.Add(-1)
		h.wg.Done()
	}()
	_ = c.nc.SetDeadline(h.cfg.Now().Add(h.cfg.HelloTimeout))
	if err := c.nc.(*tls.Conn).Handshake(); err != nil {
		return
	}
	br := bufio.NewReaderSize(c.nc, 32<<10)
	body, err := p2pwire.ReadFrame(br, make([]byte, 0, 512), p2pwire.MaxTicketLen+p2pwire.MaxResumeTokenLen+16)
	if err != nil {
		var ne net.Error
		switch {
		case errors.As(err, &ne) && ne.Timeout():
			c.refuse(p2pwire.CodeTimeout, "no HELLO in time")
		case errors.Is(err, p2pwire.ErrInvalid) || errors.Is(err, p2pwire.ErrFrameTooLarge):
			c.refuse(p2pwire.CodeMalformed, "the first frame must be a HELLO")
		}
		return
	}
	var hello p2pwire.Hello
	if err := hello.Unmarshal(body); err != nil {
		if errors.Is(err, p2pwire.ErrUnsupportedVersion) {
			c.refuse(p2pwire.CodeUnsupportedVersion, "this hub speaks version 1")
		} else {
			c.refuse(p2pwire.CodeMalformed, "the first frame must be a HELLO")
		}
		return
	}
	welcome, code, reason := h.admit(c, &hello)
	if code != 0 {
		c.refuse(code, reason)
		return
	}
	frame, err := p2pwire.AppendMessageFrame(nil, welcome)
	if err == nil {
		_ = c.nc.SetWriteDeadline(h.cfg.Now().Add(h.cfg.WriteTimeout))
		_, err = c.nc.Write(frame)
	}
	if err != nil {
		h.connEnded(c, false)
		return
	}
	_ = c.nc.SetDeadline(time.Time{})
	h.wg.Add(1)
	c.wdone = make(chan struct{})
	go c.writeLoop()
	goodbye := c.readLoop(br)
	h.connEnded(c, goodbye)
	p := c.p
	p.mu.Lock()
	evicted := p.evict != 0
	p.mu.Unlock()
	if !evicted {
		_ = c.nc.Close() // unblocks a writer stuck on a dead connection
	}
	<-c.wdone // an evicting writer sends its ERROR first (within a second)
}

// refuse writes ERROR code (closing) on a connection that has no writer.
func (c *conn) refuse(code p2pwire.ErrorCode, reason string) {
	c.h.m.refuse(code.String())
	b, err := p2pwire.AppendMessageFrame(nil, &p2pwire.Error{Code: code, Closing: true, Reason: reason})
	if err != nil {
		return
	}
	_ = c.nc.SetWriteDeadline(c.h.cfg.Now().Add(time.Second))
	_, _ = c.nc.Write(b)
}

// admit authenticates a HELLO and attaches c to its peer: a resumed one or
// a new one in its network. It returns the WELCOME, or the code refusing.
func (h *Hub) admit(c *conn, hello *p2pwire.Hello) (*p2pwire.Welcome, p2pwire.ErrorCode, string) {
	now := h.cfg.Now()
	if len(hello.ResumeToken) > 0 {
		if w := h.resumePeer(c, string(hello.ResumeToken)); w != nil {
			return w, 0, ""
		}
		if len(hello.Ticket) == 0 {
			return nil, p2pwire.CodeUnauthorized, "resume token refused (the window has passed?)"
		}
	}
	var t tokens.HubTicket
	if s := string(hello.Ticket); strings.HasPrefix(s, AnonymousPrefix) {
		if !h.cfg.AllowAnonymous {
			return nil, p2pwire.CodeUnauthorized, "anonymous peers are not allowed on this hub"
		}
		name := s[len(AnonymousPrefix):]
		if name == "" || len(name) > p2pwire.MaxNetworkLen || !utf8.ValidString(name) {
			return nil, p2pwire.CodeUnauthorized, "bad network name"
		}
		t = tokens.HubTicket{Username: "anonymous", Network: name, PeerID: "anonymous~" + tokens.NewName(9), HubID: h.cfg.ID}
	} else {
		var err error
		if t, err = h.cfg.Keyring.Open(hello.Ticket, now); err != nil {
			if errors.Is(err, tokens.ErrHubTicketExpired) {
				return nil, p2pwire.CodeUnauthorized, "hub ticket expired"
			}
			return nil, p2pwire.CodeUnauthorized, "hub ticket refused"
		}
		if t.HubID != h.cfg.ID {
			return nil, p2pwire.CodeUnauthorized, "hub ticket is for another hub"
		}
		if !p2pwire.PeerID(t.PeerID).Valid() {
			return nil, p2pwire.CodeUnauthorized, "hub ticket names a bad peer id"
		}
	}
	return h.join(c, &t)
}

func (h *Hub) welcome(p *peer, resumed bool) *p2pwire.Welcome {
	w := &p2pwire.Welcome{
		Resumed: resumed, PeerID: p2pwire.PeerID(p.id), Network: p.net.name,
		MaxFrameSize: uint32(h.cfg.MaxFrameSize),
	}
	if h.cfg.ResumeWindow > 0 {
		w.ResumeWindowMS = uint32(h.cfg.ResumeWindow / time.Millisecond)
		w.ResumeToken = []byte(p.resumeToken)
	}
	if p.udp != nil {
		w.UDP = &p2pwire.UDPSession{KeyID: p.udp.keyID, Secret: p.udp.secret}
	}
	return w
}

// join adds a new peer for ticket t to its network, attached to c.
func (h *Hub) join(c *conn, t *tokens.HubTicket) (*p2pwire.Welcome, p2pwire.ErrorCode, string) {
	p := &peer{id: t.PeerID, idb: []byte(t.PeerID), username: t.Username, needSet: true, cur: c}
	p.cond.L = &p.mu
	if h.cfg.ResumeWindow > 0 {
		p.resumeToken = tokens.Random(32)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closing {
		return nil, p2pwire.CodeShuttingDown, "the hub is stopping"
	}
	n := h.networks[t.Network]
	if n == nil {
		n = &network{name: t.Network, peers: map[string]*peer{}}
		n.bw.b = newBucket(h.cfg.NetworkBandwidth)
		h.networks[t.Network] = n
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, dup := n.peers[p.id]; dup {
		return nil, p2pwire.CodeUnauthorized, "peer id in use (resume with the resume token)"
	}
	if len(n.peers) >= h.cfg.MaxPeersPerNetwork {
		if len(n.peers) == 0 {
			delete(h.networks, t.Network)
		}
		return nil, p2pwire.CodeNetworkFull, "the network is full"
	}
	p.net = n
	if !h.cfg.DisableUDP { // after p.net: the UDP reader finds p by its key
		if err := h.addUDPPeer(p); err != nil {
			h.log.Error("hub: UDP key", "err", err)
			return nil, p2pwire.CodeInternal, "the hub could not make a UDP key"
		}
	}
	n.peers[p.id] = p
	n.version++
	n.ver.Store(n.version)
	for _, q := range n.peers {
		if q != p {
			q.addEvent(p.id, p2pwire.PeerJoined, n.version)
		}
	}
	h.peers++
	if p.resumeToken != "" {
		h.resume[p.resumeToken] = p
	}
	c.p, c.admitted = p, true
	c.rate, c.bw = newBucket(h.cfg.PeerMessageRate), newBucket(h.cfg.PeerBandwidth)
	return h.welcome(p, false), 0, ""
}

// resumePeer attaches c to the peer of token, closing its old connection if
// it still has one, and gives it a new token. It returns nil when the token
// is unknown.
func (h *Hub) resumePeer(c *conn, token string) *p2pwire.Welcome {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.resume[token]
	if p == nil || h.closing {
		return nil
	}
	delete(h.resume, token)
	p.mu.Lock()
	if p.gone || p.evict != 0 {
		p.mu.Unlock()
		return nil
	}
	old := p.cur
	p.cur = c
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	p.needSet = true
	p.resumeToken = tokens.Random(32)
	h.resume[p.resumeToken] = p
	p.mu.Unlock()
	p.cond.Broadcast()
	if old != nil {
		_ = old.nc.Close()
	}
	c.p, c.admitted = p, true
	c.rate, c.bw = newBucket(h.cfg.PeerMessageRate), newBucket(h.cfg.PeerBandwidth)
	return h.welcome(p, true)
}

// connEnded handles the end of c's reading: a peer that said GOODBYE, was
// evicted or has no resume window is removed; the others wait for their
// window.
func (h *Hub) connEnded(c *conn, goodbye bool) {
	p := c.p
	h.mu.Lock()
	closing := h.closing
	h.mu.Unlock()
	p.mu.Lock()
	if p.cur != c {
		p.mu.Unlock() // resumed on another connection
		return
	}
	p.cur = nil
	evict := p.evict
	wait := !goodbye && evict == 0 && !closing && h.cfg.ResumeWindow > 0 && !p.gone
	if wait {
		p.timer = time.AfterFunc(h.cfg.ResumeWindow, func() {
			p.mu.Lock()
			detached := p.cur == nil
			p.mu.Unlock()
			if detached {
				h.remove(p, "resume_expired")
			}
		})
	}
	p.mu.Unlock()
	p.cond.Broadcast()
	if !wait {
		reason := "goodbye"
		switch {
		case evict != 0:
			reason = evict.String()
		case closing:
			reason = "shutting_down"
		}
		h.remove(p, reason)
	}
}

// remove takes p out of its network for good and tells the others.
func (h *Hub) remove(p *peer, reason string) {
	n := p.net
	h.mu.Lock()
	defer h.mu.Unlock()
	n.mu.Lock()
	p.mu.Lock()
	if p.gone {
		p.mu.Unlock()
		n.mu.Unlock()
		return
	}
	p.gone = true
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	delete(h.resume, p.resumeToken)
	p.out, p.events = nil, nil
	p.mu.Unlock()
	p.cond.Broadcast()
	h.dropUDPPeer(p)
	delete(n.peers, p.id)
	n.version++
	n.ver.Store(n.version)
	for _, q := range n.peers {
		q.addEvent(p.id, p2pwire.PeerLeft, n.version)
	}
	empty := len(n.peers) == 0
	n.mu.Unlock()
	if empty && h.networks[n.name] == n {
		delete(h.networks, n.name)
	}
	h.peers--
	h.m.drop(reason)
	h.forgetPunches(p)
}

// addEvent records that peer id joined or left, coalesced with what q has
// not been sent yet. The caller holds q's network's lock.
func (q *peer) addEvent(id string, op p2pwire.EventOp, version uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.needSet || q.gone {
		return // the set q gets next is built after this change
	}
	if q.events == nil {
		q.events = map[string]p2pwire.EventOp{}
	}
	if prev, ok := q.events[id]; ok && prev != op {
		delete(q.events, id) // joined and left (or the reverse) since the last send
	} else {
		q.events[id] = op
	}
	q.evVersion = version
	q.cond.Signal()
}

// enqueue appends the frame delivering body (decoded as r) from from to p's
// queue and counts it in c. It reports false when p's queue is full: p is
// then being dropped.
func (h *Hub) enqueue(c *conn, p *peer, r *p2pwire.Routing, from []byte, body []byte) bool {
	need := p2pwire.FrameHeaderSize + p2pwire.StampedSize(r, len(from), len(body))
	p.mu.Lock()
	if p.gone || p.evict != 0 {
		p.mu.Unlock()
		return false
	}
	if len(p.out)+need > h.cfg.SendQueueBytes {
		p.out = p.out[:0]
		p.evict, p.evictReason = p2pwire.CodeSlowConsumer, evictReason(p2pwire.CodeSlowConsumer)
		pc := p.cur
		p.mu.Unlock()
		p.cond.Broadcast()
		if pc != nil {
			_ = pc.nc.SetWriteDeadline(h.cfg.Now().Add(time.Second))
		} else {
			h.wg.Go(func() { h.remove(p, "slow_consumer") })
		}
		return false
	}
	wake := len(p.out) == 0
	p.out, _ = p2pwire.AppendStampedFrameHeader(p.out, r, from, len(body))
	p.out = append(p.out, body[r.Size:]...)
	p.mu.Unlock()
	if wake {
		p.cond.Signal()
	}
	c.routed++
	c.routedB += need
	return true
}

// sendControl appends a control message to p's own queue (ERROR, PONG).
func (h *Hub) sendControl(p *peer, m p2pwire.Message) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gone || p.evict != 0 || len(p.out) > h.cfg.SendQueueBytes/2 {
		return // a peer whose own queue is half full gets no more answers
	}
	wake := len(p.out) == 0
	p.out, _ = p2pwire.AppendMessageFrame(p.out, m)
	if wake {
		p.cond.Signal()
	}
}

// readLoop reads frames until the connection fails or the peer says
// GOODBYE (then it returns true). It handles every whole frame buffered in
// br in place (no copy out of the read buffer) before it reads again, and
// reads the clock once per such batch, not per frame: in a VM a clock read
// costs as much as routing a message. A frame larger than br's buffer is
// read into a buffer of its own.
func (c *conn) readLoop(br *bufio.Reader) bool {
	h := c.h
	var big []byte
	var deadline int64
	idle := int64(h.cfg.IdleTimeout)
	for {
		c.flushCounts()
		hdr, err := br.Peek(p2pwire.FrameHeaderSize)
		if err != nil {
			return false
		}
		n, err := p2pwire.ParseFrameLength(hdr, h.cfg.MaxFrameSize)
		if err != nil {
			c.frameError(err)
			return false
		}
		now := h.cfg.Now()
		ns := now.UnixNano()
		if ns > deadline-idle+int64(time.Second) { // refresh the idle deadline at most once a second
			deadline = ns + idle
			_ = c.nc.SetReadDeadline(now.Add(h.cfg.IdleTimeout))
		}
		if p2pwire.FrameHeaderSize+n > br.Size() {
			body, err := p2pwire.ReadFrame(br, big, h.cfg.MaxFrameSize)
			if err != nil {
				c.frameError(err)
				return false
			}
			big = body[:0]
			if done, goodbye := c.handle(body, ns); done {
				return goodbye
			}
			continue
		}
		if _, err := br.Peek(p2pwire.FrameHeaderSize + n); err != nil {
			return false
		}
		buf, _ := br.Peek(br.Buffered())
		off := 0
		for off+p2pwire.FrameHeaderSize <= len(buf) {
			n, err := p2pwire.ParseFrameLength(buf[off:], h.cfg.MaxFrameSize)
			if err != nil {
				c.frameError(err)
				return false
			}
			end := off + p2pwire.FrameHeaderSize + n
			if end > len(buf) {
				break
			}
			if done, goodbye := c.handle(buf[off+p2pwire.FrameHeaderSize:end], ns); done {
				return goodbye
			}
			off = end
		}
		_, _ = br.Discard(off)
	}
}

// frameError ends the connection for a frame length that ParseFrameLength
// or ReadFrame refused.
func (c *conn) frameError(err error) {
	c.flushCounts()
	if errors.Is(err, p2pwire.ErrFrameTooLarge) {
		c.closeWith(p2pwire.CodeTooLarge, fmt.Sprintf("frame over %d bytes", c.h.cfg.MaxFrameSize))
	} else if errors.Is(err, p2pwire.ErrInvalid) {
		c.closeWith(p2pwire.CodeMalformed, "bad frame length")
	}
}

// handle handles one frame body read by c at ns (Unix nanoseconds). body
// may alias the read buffer: nothing keeps it. done says the reading ends,
// goodbye that the peer said GOODBYE.
func (c *conn) handle(body []byte, ns int64) (done, goodbye bool) {
	h, p := c.h, c.p
	r, err := p2pwire.DecodeRouting(body)
	if err != nil {
		c.closeWith(p2pwire.CodeMalformed, "bad routing header")
		return true, false
	}
	if r.Kind.Routed() {
		h.route(c, &r, body, ns)
		return false, false
	}
	switch r.Kind {
	case p2pwire.KindPing:
		var ping p2pwire.Ping
		if ping.Unmarshal(body) != nil {
			c.closeWith(p2pwire.CodeMalformed, "bad PING")
			return true, false
		}
		h.sendControl(p, &p2pwire.Pong{Value: ping.Value})
	case p2pwire.KindPong:
	case p2pwire.KindGoodbye:
		c.flushCounts()
		return true, true
	case p2pwire.KindPunchRequest:
		return !h.punchRequest(c, body, ns), false
	case p2pwire.KindPunchResult:
		return !h.punchResult(c, body, ns), false
	default:
		h.m.refuse("forbidden")
		h.sendControl(p, &p2pwire.Error{Code: p2pwire.CodeForbidden, Reason: "a peer may not send " + r.Kind.String() + " here"})
	}
	return false, false
}

// flushCounts adds the reader's routed counts to the metrics: once per
// batch, not per message.
func (c *conn) flushCounts() {
	if c.routed > 0 {
		c.h.m.routed.Add(float64(c.routed))
		c.h.m.routedB.Add(float64(c.routedB))
		c.routed, c.routedB = 0, 0
	}
}

// closeWith ends the connection and removes its peer: the writer sends
// ERROR code, closing, and closes; connEnded then removes the peer.
func (c *conn) closeWith(code p2pwire.ErrorCode, reason string) {
	c.h.m.refuse(code.String())
	c.h.evictPeer(c.p, code, reason)
}

// route delivers a routed frame read by c. It allocates nothing unless it
// refuses the frame.
func (h *Hub) route(c *conn, r *p2pwire.Routing, body []byte, now int64) {
	p := c.p
	if !r.FromPeer() || !r.Kind.OnStream() {
		h.m.refuse("forbidden")
		h.sendControl(p, &p2pwire.Error{Code: p2pwire.CodeForbidden, MessageID: p2pwire.PeekMessageID(body, r),
			Reason: "a peer sends " + r.Kind.String() + " over TLS to one peer or broadcast, never with from"})
		return
	}
	if !c.rate.take(now, 1) {
		h.m.refuse("rate_limited")
		h.sendControl(p, &p2pwire.Error{Code: p2pwire.CodeRateLimited, MessageID: p2pwire.PeekMessageID(body, r), Reason: "over the message rate"})
		return
	}
	n := p.net
	if !r.Broadcast() {
		dst := c.dst
		if dst == nil || n.ver.Load() != c.dstVer || !bytes.Equal(c.dstID, r.To) {
			n.mu.RLock()
			dst = n.peers[string(r.To)]
			c.dstVer = n.version
			n.mu.RUnlock()
			c.dst = dst
			c.dstID = append(c.dstID[:0], r.To...)
		}
		if dst == nil {
			h.m.refuse("unknown_peer")
			h.sendControl(p, &p2pwire.Error{Code: p2pwire.CodeUnknownPeer, MessageID: p2pwire.PeekMessageID(body, r),
				Peer: p2pwire.PeerID(r.To), Reason: "no such peer in this network"})
			return
		}
		size := float64(len(body))
		if !c.bw.take(now, size) || !n.bw.take(now, size) {
			h.m.refuse("quota_exceeded")
			h.sendControl(p, &p2pwire.Error{Code: p2pwire.CodeQuotaExceeded, MessageID: p2pwire.PeekMessageID(body, r), Reason: "over the bandwidth quota"})
			return
		}
		h.enqueue(c, dst, r, p.idb, body)
		return
	}
	h.m.broadcasts.Inc()
	n.mu.RLock()
	size := float64(len(body) * (len(n.peers) - 1))
	if size > 0 && (!c.bw.take(now, size) || !n.bw.take(now, size)) {
		n.mu.RUnlock()
		h.m.refuse("quota_exceeded")
		h.sendControl(p, &p2pwire.Error{Code: p2pwire.CodeQuotaExceeded, MessageID: p2pwire.PeekMessageID(body, r), Reason: "over the bandwidth quota"})
		return
	}
	for _, q := range n.peers {
		if q != p {
			h.enqueue(c, q, r, p.idb, body)
		}
	}
	n.mu.RUnlock()
}

// writeLoop writes p's queue to c, coalesced: everything queued since the
// last write goes out in one Write. It ends when p moves to another
// connection, is removed, or a write fails.
func (c *conn) writeLoop() {
	h, p := c.h, c.p
	defer h.wg.Done()
	defer close(c.wdone)
	defer func() { _ = c.nc.Close() }()
	var ctl []byte
	var wdl time.Time // the write deadline set last
	for {
		p.mu.Lock()
		for p.cur == c && p.evict == 0 && !p.gone && len(p.out) == 0 && len(p.events) == 0 && !p.needSet {
			p.cond.Wait()
		}
		if p.evict != 0 {
			sent := p.evictSent
			p.evictSent = true
			e := p2pwire.Error{Code: p.evict, Closing: true, Reason: p.evictReason}
			p.out = p.out[:0]
			p.mu.Unlock()
			if !sent {
				b, _ := p2pwire.AppendMessageFrame(nil, &e)
				_ = c.nc.SetWriteDeadline(h.cfg.Now().Add(time.Second))
				_, _ = c.nc.Write(b)
			}
			return
		}
		if p.gone || p.cur != c {
			p.mu.Unlock() // what is queued waits for the next connection
			return
		}
		needSet := p.needSet
		ctl = ctl[:0]
		if !needSet && len(p.events) > 0 {
			ctl = appendEvents(ctl, p)
		}
		out := p.out
		p.out = c.spare[:0]
		p.mu.Unlock()
		if needSet {
			ctl = h.appendPeerSet(ctl, p)
		}
		// Move the write deadline at most once a second: setting it costs
		// a timer update, as much as a small write.
		if now := h.cfg.Now(); now.After(wdl.Add(-h.cfg.WriteTimeout + time.Second)) {
			wdl = now.Add(h.cfg.WriteTimeout)
			_ = c.nc.SetWriteDeadline(wdl)
		}
		if len(ctl) > 0 {
			if _, err := c.nc.Write(ctl); err != nil {
				return
			}
		}
		if len(out) > 0 {
			h.m.writes.Inc()
			if _, err := c.nc.Write(out); err != nil {
				return
			}
		}
		if cap(out) <= 256<<10 {
			c.spare = out[:0]
		} else {
			c.spare = nil
		}
	}
}

func evictReason(code p2pwire.ErrorCode) string {
	switch code {
	case p2pwire.CodeSlowConsumer:
		return "your send queue overflowed: read faster"
	case p2pwire.CodeKicked:
		return "removed from the network"
	case p2pwire.CodeShuttingDown:
		return "the hub is stopping; reconnect through the API"
	}
	return code.String()
}

// appendEvents appends p's pending PEER_EVENTS frame and clears them. The
// caller holds p.mu.
func appendEvents(b []byte, p *peer) []byte {
	ev := p2pwire.PeerEvents{Version: p.evVersion, Events: make([]p2pwire.PeerEvent, 0, len(p.events))}
	for id, op := range p.events {
		ev.Events = append(ev.Events, p2pwire.PeerEvent{Op: op, Peer: p2pwire.PeerID(id)})
	}
	clear(p.events)
	slices.SortFunc(ev.Events, func(a, b p2pwire.PeerEvent) int { return strings.Compare(string(a.Peer), string(b.Peer)) })
	b, _ = p2pwire.AppendMessageFrame(b, &ev)
	return b
}

// appendPeerSet appends a PEER_SET of p's network (p excluded) and clears
// p's pending events, which the set supersedes.
func (h *Hub) appendPeerSet(b []byte, p *peer) []byte {
	n := p.net
	n.mu.RLock()
	set := p2pwire.PeerSet{Version: n.version, Peers: make([]p2pwire.PeerID, 0, len(n.peers))}
	for id := range n.peers {
		if id != p.id {
			set.Peers = append(set.Peers, p2pwire.PeerID(id))
		}
	}
	p.mu.Lock()
	p.needSet = false
	clear(p.events)
	p.mu.Unlock()
	n.mu.RUnlock()
	slices.Sort(set.Peers)
	b, err := p2pwire.AppendMessageFrame(b, &set)
	if err != nil {
		h.log.Error("p2p: encode PEER_SET", "network", n.name, "err", err)
	}
	return b
}

var _ io.Closer = (*Hub)(nil)
