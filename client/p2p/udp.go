package p2p

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboardgg/switchboard/internal/p2pseal"
	"github.com/switchboardgg/switchboard/internal/sealed"
	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// ErrNoUDP is returned by the UDP sends of a peer whose hub offered no
// UDP session (WELCOME without a UDP key) or whose Config.DisableUDP is
// set.
var ErrNoUDP = errors.New("p2p: no UDP session with the hub")

// Path says which way a datagram travels between two peers.
type Path uint8

// The paths.
const (
	// PathHub: through the hub (its UDP port, or TLS for messages).
	PathHub Path = iota
	// PathDirectUDP: a punched UDP path straight to the peer.
	PathDirectUDP
	// PathDirectTCP: a punched TCP connection straight to the peer.
	PathDirectTCP
)

// String returns "hub", "direct-udp" or "direct-tcp".
func (p Path) String() string {
	switch p {
	case PathHub:
		return "hub"
	case PathDirectUDP:
		return "direct-udp"
	case PathDirectTCP:
		return "direct-tcp"
	}
	return fmt.Sprintf("path %d", uint8(p))
}

// UDPStats are a peer's UDP counters since Connect.
type UDPStats struct {
	Sent     uint64 // datagrams sent (all kinds, all paths)
	Received uint64 // datagrams that opened and decoded
	// Drops of received datagrams, by reason.
	DroppedUnauthenticated uint64 // not ours: bad marker, unknown key id, tag, size
	DroppedReplay          uint64 // a sequence number seen before or too old
	DroppedMalformed       uint64 // opened, but did not decode, or a kind not allowed there
	DroppedNoHandler       uint64 // a kind nothing here handles
	DroppedQueueFull       uint64 // Messages was full: a UDP message is never waited for
	// PathChallenges counts the hub's PATH_CHALLENGEs, each answered at
	// once: one per new endpoint the hub saw this peer at (its first, and
	// each NAT rebinding), more when answers were lost.
	PathChallenges uint64
	// Jumbo messages.
	JumboSent     uint64 // jumbo messages sent
	JumboReceived uint64 // jumbo messages reassembled and delivered
	JumboTimedOut uint64 // dropped: a chunk missing after Config.JumboTimeout
	JumboOverMem  uint64 // dropped: reassembly memory for the sender was used up
	JumboBad      uint64 // dropped: fragments that disagree, or an envelope that does not decode
}

type udpCounters struct {
	sent, received                               atomic.Uint64
	dropUnauth, dropReplay, dropMalformed        atomic.Uint64
	dropNoHandler, dropQueueFull                 atomic.Uint64
	pathChallenges                               atomic.Uint64
	jumboSent, jumboRecv, jumboTimeout, jumboMem atomic.Uint64
	jumboBad                                     atomic.Uint64
}

// inDatagram is one received, opened datagram, as dispatch hands it to a
// [datagramHandler]. Rest aliases the reader's buffer: it is valid during
// the handler call only (copy what you keep).
type inDatagram struct {
	Kind      p2pwire.Kind
	From      string // the sender: stamped by the hub, or the direct path's peer; "" for a control kind from the hub
	Broadcast bool
	Path      Path
	Src       netip.AddrPort // the UDP source; zero for PathDirectTCP
	KeyID     uint32         // the key that opened it (the hub session's or a pair key)
	Rest      []byte         // the kind's fields, after the routing header
}

// datagramHandler handles the received datagrams of one kind. It runs on
// the UDP reader goroutine (or a direct TCP path's reader) and must not
// block: hand work to your own goroutine.
type datagramHandler func(d *inDatagram)

// directPath is a direct path to one peer, made by the punch code and
// installed with [Peer.setDirectPath]. A UDP path has side (the pair
// key: Seal for what this peer sends, Open for what it receives) and a
// remote endpoint; a TCP path has writeTCP. While up is true every send
// to the peer takes this path; when it is false, or a send on it fails,
// sends go through the hub.
type directPath struct {
	peer  string
	path  Path                           // PathDirectUDP or PathDirectTCP
	keyID uint32                         // UDP: the pair key id the datagrams carry
	side  p2pseal.Side                   // UDP: the pair key
	up    atomic.Bool                    // the punch code's keep-alive says the path works
	dst   atomic.Pointer[netip.AddrPort] // UDP: where the peer is; setRemote
	// writeTCP writes one datagram plaintext (routing header with no
	// route flags, then the kind's fields) on the punched connection;
	// the framing is the punch code's. TCP paths only.
	writeTCP func(plain []byte) error
}

// setRemote records where a direct UDP path's peer is (also after the
// peer's NAT rebinds).
func (d *directPath) setRemote(ap netip.AddrPort) { d.dst.Store(&ap) }

// remote returns the direct UDP path's peer endpoint.
func (d *directPath) remote() netip.AddrPort {
	if a := d.dst.Load(); a != nil {
		return *a
	}
	return netip.AddrPort{}
}

// extensions are started by Connect, in order, once the UDP side is up
// (also when there is none: check p.udp != nil), before the readers run.
// Code in this package registers one from an init function. Each gets
// the peer and returns the function that stops it: Close calls those, in
// reverse order, after Done is closed and before Messages and Events
// close, so an extension's goroutines may deliver (p.deliverUDP, or a
// send on p.msgs that also selects on p.closing) until then.
var extensions []func(p *Peer) (stop func())

// udpSide is a peer's UDP socket and session with the hub.
type udpSide struct {
	conn    *net.UDPConn
	hubAddr netip.AddrPort
	local   netip.AddrPort // the socket's bound address

	hub   atomic.Pointer[hubSession]
	regCh chan struct{} // closed at the first REGISTERED
	regMu sync.Mutex
	regOK bool                           // guarded by regMu; an answer to the current candidates came
	obs   atomic.Pointer[netip.AddrPort] // the endpoint the hub saw, from REGISTERED
	cands []netip.AddrPort               // the keeper's: candidates last registered
	// localCands lists the candidates now: p.candidates, the machine's
	// interfaces (a test replaces it before the keeper's first look).
	localCands atomic.Pointer[func() []netip.AddrPort]

	smu   sync.Mutex // serializes sends: guards plain, out
	plain []byte
	out   []byte

	dmu      sync.RWMutex
	direct   map[string]*directPath           // guarded by dmu; peer → path
	byKey    map[uint32]*directPath           // guarded by dmu; pair key id → path
	handlers map[p2pwire.Kind]datagramHandler // guarded by dmu

	jumboID atomic.Uint32
	jmu     sync.Mutex  // one jumbo message is paced at a time
	reasm   reassembler // the reader's

	c    udpCounters
	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// hubSession is the peer's key with the hub's UDP port.
type hubSession struct {
	keyID uint32
	side  p2pseal.Side
}

// startUDP opens the peer's UDP socket for the session of WELCOME and
// starts its reader and its registration keeper.
func (p *Peer) startUDP(s *p2pwire.UDPSession) error {
	side, err := p2pseal.PeerSide(s.Secret[:], s.KeyID)
	if err != nil {
		return fmt.Errorf("p2p: UDP keys: %w", err)
	}
	hubUDP := p.hub.Address
	if p.cfg.HubUDPAddr != "" {
		hubUDP = p.cfg.HubUDPAddr
	}
	ra, err := net.ResolveUDPAddr("udp", hubUDP)
	if err != nil {
		return fmt.Errorf("p2p: hub UDP address %q: %w", hubUDP, err)
	}
	hubAddr := ra.AddrPort()
	hubAddr = netip.AddrPortFrom(hubAddr.Addr().Unmap(), hubAddr.Port())
	la, err := net.ResolveUDPAddr("udp", p.cfg.UDPAddr)
	if err != nil {
		return fmt.Errorf("p2p: UDP address %q: %w", p.cfg.UDPAddr, err)
	}
	uc, err := net.ListenUDP("udp", la)
	if err != nil {
		return fmt.Errorf("p2p: UDP socket: %w", err)
	}
	_ = uc.SetReadBuffer(p.cfg.UDPBuffer)
	_ = uc.SetWriteBuffer(p.cfg.UDPBuffer)
	u := &udpSide{
		conn: uc, hubAddr: hubAddr, local: uc.LocalAddr().(*net.UDPAddr).AddrPort(),
		regCh:    make(chan struct{}),
		plain:    make([]byte, 0, p2pwire.MaxOpenedSize),
		out:      make([]byte, 0, p2pwire.MaxDatagramSize),
		direct:   map[string]*directPath{},
		byKey:    map[uint32]*directPath{},
		handlers: map[p2pwire.Kind]datagramHandler{},
		stop:     make(chan struct{}),
	}
	u.hub.Store(&hubSession{keyID: s.KeyID, side: side})
	u.reasm.init(p.cfg)
	cands := p.candidates
	u.localCands.Store(&cands)
	p.udp = u
	u.wg.Add(2)
	go p.udpReader()
	go p.udpKeeper()
	return nil
}

// rekeyUDP takes the UDP session of a resumed WELCOME: a new key id gets
// new keys (the hub keeps a peer's session across resumes, so this is
// rare).
func (p *Peer) rekeyUDP(s *p2pwire.UDPSession) {
	u := p.udp
	if u == nil || s == nil || u.hub.Load().keyID == s.KeyID {
		return
	}
	side, err := p2pseal.PeerSide(s.Secret[:], s.KeyID)
	if err != nil {
		p.log.Warn("p2p: UDP keys of the resumed session refused", "err", err)
		return
	}
	u.hub.Store(&hubSession{keyID: s.KeyID, side: side})
	u.regMu.Lock()
	u.regOK = false
	u.regMu.Unlock()
}

// stopUDP stops the extensions and the UDP side and waits for their
// goroutines. It is idempotent.
func (p *Peer) stopUDP() {
	p.extOnce.Do(func() {
		for i := len(p.extStops) - 1; i >= 0; i-- {
			p.extStops[i]()
		}
	})
	u := p.udp
	if u == nil {
		return
	}
	u.once.Do(func() {
		close(u.stop)
		_ = u.conn.Close()
	})
	u.wg.Wait()
}

// ---- hooks for this package's UDP extensions (see doc.go, "Hooks") ----

// sendDatagram seals a routed datagram of kind (UDP_MESSAGE, RELIABLE,
// JUMBO, or a routed kind an extension defines) carrying rest (the
// kind's fields, at most p2pwire.MaxRoutedRest bytes) and sends it to
// peer to over the current path: the direct path when one is installed
// and up, else the hub. It returns the path taken. A direct send that
// fails falls back to the hub. It does not block beyond the socket write
// and allocates nothing.
func (p *Peer) sendDatagram(to string, kind p2pwire.Kind, rest []byte) (Path, error) {
	u := p.udp
	if u == nil {
		return PathHub, ErrNoUDP
	}
	if len(rest) > p2pwire.MaxRoutedRest {
		return PathHub, fmt.Errorf("p2p: %s datagram of %d bytes over %d: %w", kind, len(rest), p2pwire.MaxRoutedRest, ErrTooLarge)
	}
	if d := p.directPath(to); d != nil && d.up.Load() {
		if err := p.sendDirect(d, kind, rest); err == nil {
			return d.path, nil
		}
	}
	return PathHub, p.sendHub(kind, to, false, rest)
}

// broadcastDatagram sends a routed datagram of kind (one that may be
// broadcast: UDP_MESSAGE, JUMBO) to every other peer of the network,
// through the hub.
func (p *Peer) broadcastDatagram(kind p2pwire.Kind, rest []byte) error {
	if p.udp == nil {
		return ErrNoUDP
	}
	if len(rest) > p2pwire.MaxRoutedRest {
		return fmt.Errorf("p2p: %s datagram of %d bytes over %d: %w", kind, len(rest), p2pwire.MaxRoutedRest, ErrTooLarge)
	}
	return p.sendHub(kind, "", true, rest)
}

// sendHub seals kind to the hub: routing header with to (or broadcast),
// then rest.
func (p *Peer) sendHub(kind p2pwire.Kind, to string, broadcast bool, rest []byte) error {
	u := p.udp
	hs := u.hub.Load()
	u.smu.Lock()
	defer u.smu.Unlock()
	b := append(u.plain[:0], byte(kind))
	switch {
	case broadcast:
		b = append(b, p2pwire.FlagBroadcast)
	case kind.Routed():
		if len(to) == 0 || len(to) > p2pwire.MaxPeerIDLen {
			return fmt.Errorf("p2p: send %s: bad peer id %q", kind, to)
		}
		b = append(b, p2pwire.FlagTo, byte(len(to)))
		b = append(b, to...)
	default:
		b = append(b, 0)
	}
	b = append(b, rest...)
	u.plain = b
	return p.sealWriteLocked(hs.side.Seal, u.hubAddr, b)
}

// sendDirect sends kind with no routing fields on direct path d.
func (p *Peer) sendDirect(d *directPath, kind p2pwire.Kind, rest []byte) error {
	u := p.udp
	u.smu.Lock()
	defer u.smu.Unlock()
	b := append(u.plain[:0], byte(kind), 0)
	b = append(b, rest...)
	u.plain = b
	if d.path == PathDirectTCP {
		if d.writeTCP == nil {
			return errors.New("p2p: direct TCP path without a writer")
		}
		if err := d.writeTCP(b); err != nil {
			return err
		}
		u.c.sent.Add(1)
		return nil
	}
	return p.sealWriteLocked(d.side.Seal, d.remote(), b)
}

// sealTo seals plain (a whole plaintext: routing header and fields) with
// s and sends it to addr from the peer's UDP socket: for datagrams that
// are not routed sends to a peer (punch probes to a candidate).
func (p *Peer) sealTo(s *sealed.Sealer, addr netip.AddrPort, plain []byte) error {
	u := p.udp
	if u == nil {
		return ErrNoUDP
	}
	u.smu.Lock()
	defer u.smu.Unlock()
	return p.sealWriteLocked(s, addr, plain)
}

// sealWriteLocked seals plain with s into u.out and writes it to addr;
// u.smu is held.
func (p *Peer) sealWriteLocked(s *sealed.Sealer, addr netip.AddrPort, plain []byte) error {
	u := p.udp
	if len(plain) > p2pwire.MaxOpenedSize {
		return fmt.Errorf("p2p: datagram plaintext of %d bytes over %d: %w", len(plain), p2pwire.MaxOpenedSize, ErrTooLarge)
	}
	if !addr.IsValid() {
		return errors.New("p2p: datagram to no address")
	}
	d, err := s.Seal(u.out[:0], plain)
	if err != nil {
		return fmt.Errorf("p2p: seal datagram: %w", err)
	}
	u.out = d
	if _, err := u.conn.WriteToUDPAddrPort(d, addr); err != nil {
		select {
		case <-u.stop:
			return closedErr(p.Err())
		default:
		}
		return fmt.Errorf("p2p: send datagram to %s: %w", addr, err)
	}
	u.c.sent.Add(1)
	return nil
}

// handleDatagrams makes h the handler of received datagrams of kind,
// replacing any earlier one; nil removes it. UDP_MESSAGE, JUMBO,
// REGISTERED, PATH_CHALLENGE, PING and PONG are handled here and cannot
// be taken over.
func (p *Peer) handleDatagrams(kind p2pwire.Kind, h datagramHandler) {
	u := p.udp
	if u == nil {
		return
	}
	u.dmu.Lock()
	defer u.dmu.Unlock()
	if h == nil {
		delete(u.handlers, kind)
		return
	}
	u.handlers[kind] = h
}

// setDirectPath installs d as the direct path to d.peer (replacing any
// other) and, for a UDP path, registers its key id so that the reader
// opens the peer's datagrams with d.side.Open. Sends take it while d.up
// is true.
func (p *Peer) setDirectPath(d *directPath) {
	u := p.udp
	if u == nil {
		return
	}
	u.dmu.Lock()
	defer u.dmu.Unlock()
	if old := u.direct[d.peer]; old != nil && old.keyID != 0 {
		delete(u.byKey, old.keyID)
	}
	u.direct[d.peer] = d
	if d.path == PathDirectUDP && d.keyID != 0 {
		u.byKey[d.keyID] = d
	}
}

// clearDirectPath removes d if it is still the direct path to its peer;
// sends to the peer go through the hub again.
func (p *Peer) clearDirectPath(d *directPath) {
	u := p.udp
	if u == nil {
		return
	}
	u.dmu.Lock()
	defer u.dmu.Unlock()
	if u.direct[d.peer] == d {
		delete(u.direct, d.peer)
	}
	if u.byKey[d.keyID] == d {
		delete(u.byKey, d.keyID)
	}
}

// directPath returns the direct path to peer, nil when there is none.
func (p *Peer) directPath(peer string) *directPath {
	u := p.udp
	u.dmu.RLock()
	defer u.dmu.RUnlock()
	return u.direct[peer]
}

// udpConn returns the peer's UDP socket (nil without UDP). Write to it
// only through sealTo and sendDatagram (they serialize); reads are the
// reader's.
func (p *Peer) udpConn() *net.UDPConn {
	if p.udp == nil {
		return nil
	}
	return p.udp.conn
}

// udpLocal returns the address the UDP socket is bound to (its port is
// the one REGISTER announces with the candidates).
func (p *Peer) udpLocal() netip.AddrPort {
	if p.udp == nil {
		return netip.AddrPort{}
	}
	return p.udp.local
}

// ---- public API ----

// SendUDP sends env to peer to as an unreliable datagram: through the
// hub's UDP port, or straight to the peer when a direct path is up. An
// encoded envelope over 1,104 bytes goes as a jumbo message (up to
// MaxJumboSize bytes, in 1,024-byte chunks paced at Config.JumboRate;
// SendUDP returns when the last chunk is sent, or when ctx ends). Nothing
// is retransmitted: a nil error says the datagrams left, not that they
// arrived.
func (p *Peer) SendUDP(ctx context.Context, to string, env Envelope) error {
	return p.sendUDP(ctx, to, false, env)
}

// BroadcastUDP sends env to every other peer of the network through the
// hub, as SendUDP does to one.
func (p *Peer) BroadcastUDP(ctx context.Context, env Envelope) error {
	return p.sendUDP(ctx, "", true, env)
}

// MaxJumboSize is the largest envelope SendUDP and BroadcastUDP send, in
// bytes of its encoding: 16,256,000.
const MaxJumboSize = p2pwire.MaxJumboSize

func (p *Peer) sendUDP(ctx context.Context, to string, broadcast bool, env Envelope) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("p2p: send UDP: %w", err)
	}
	select {
	case <-p.closing:
		return closedErr(p.Err())
	default:
	}
	if p.udp == nil {
		return ErrNoUDP
	}
	e := p2pwire.Envelope{Header: env.Header, Pairs: env.Pairs, Payload: env.Payload}
	if !slices.IsSortedFunc(e.Pairs, comparePairs) {
		e.Pairs = slices.Clone(e.Pairs)
		slices.SortFunc(e.Pairs, comparePairs)
	}
	var small [p2pwire.MaxRoutedRest]byte
	b, err := e.AppendTo(small[:0])
	if err != nil {
		return fmt.Errorf("p2p: send UDP: %w", err)
	}
	if len(b) > p2pwire.MaxRoutedRest {
		return p.sendJumbo(ctx, to, broadcast, b)
	}
	if broadcast {
		return p.broadcastDatagram(p2pwire.KindUDPMessage, b)
	}
	_, err = p.sendDatagram(to, p2pwire.KindUDPMessage, b)
	return err
}

// Registered is closed once the hub answered REGISTER: UDP through the
// hub works. A nil channel (blocks for ever) without a UDP session.
func (p *Peer) Registered() <-chan struct{} {
	if p.udp == nil {
		return nil
	}
	return p.udp.regCh
}

// PublicEndpoint returns this peer's UDP endpoint as the hub saw it (its
// NAT's mapping), once registered.
func (p *Peer) PublicEndpoint() (netip.AddrPort, bool) {
	if p.udp == nil {
		return netip.AddrPort{}, false
	}
	if a := p.udp.obs.Load(); a != nil {
		return *a, true
	}
	return netip.AddrPort{}, false
}

// UDPStats returns the peer's UDP counters (zero without UDP).
func (p *Peer) UDPStats() UDPStats {
	u := p.udp
	if u == nil {
		return UDPStats{}
	}
	return UDPStats{
		Sent: u.c.sent.Load(), Received: u.c.received.Load(),
		DroppedUnauthenticated: u.c.dropUnauth.Load(), DroppedReplay: u.c.dropReplay.Load(),
		DroppedMalformed: u.c.dropMalformed.Load(), DroppedNoHandler: u.c.dropNoHandler.Load(),
		DroppedQueueFull: u.c.dropQueueFull.Load(), PathChallenges: u.c.pathChallenges.Load(),
		JumboSent: u.c.jumboSent.Load(), JumboReceived: u.c.jumboRecv.Load(),
		JumboTimedOut: u.c.jumboTimeout.Load(), JumboOverMem: u.c.jumboMem.Load(), JumboBad: u.c.jumboBad.Load(),
	}
}

// ---- registration ----

// udpKeeper registers with the hub: every Config.RegisterRetry until
// answered, again every Config.PingInterval (which also keeps NAT
// mappings open), and at once when the local addresses change.
func (p *Peer) udpKeeper() {
	u := p.udp
	defer u.wg.Done()
	t := time.NewTimer(0)
	defer t.Stop()
	var lastCheck time.Time
	var lastSent time.Time
	for {
		select {
		case <-u.stop:
			return
		case <-t.C:
		}
		now := time.Now()
		if lastCheck.IsZero() || now.Sub(lastCheck) >= p.cfg.AddrCheckInterval {
			lastCheck = now
			if c := (*u.localCands.Load())(); !slices.Equal(c, u.cands) {
				u.cands = c
				u.regMu.Lock()
				u.regOK = false
				u.regMu.Unlock()
			}
		}
		u.regMu.Lock()
		ok := u.regOK
		u.regMu.Unlock()
		if !ok || now.Sub(lastSent) >= p.cfg.PingInterval {
			lastSent = now
			m := p2pwire.Register{Candidates: u.cands}
			if b, err := m.AppendTo(nil); err == nil {
				_ = p.sendHub(p2pwire.KindRegister, "", false, b[2:])
			}
		}
		next := p.cfg.RegisterRetry
		if ok {
			next = min(p.cfg.AddrCheckInterval, p.cfg.PingInterval)
		}
		t.Reset(next)
	}
}

// candidates returns the UDP socket's local endpoints: its bound address,
// or every up interface's unicast addresses with its port (at most
// p2pwire.MaxCandidates, link-local IPv6 left out: it needs a zone).
func (p *Peer) candidates() []netip.AddrPort {
	u := p.udp
	port := u.local.Port()
	if a := u.local.Addr(); a.IsValid() && !a.IsUnspecified() {
		return []netip.AddrPort{netip.AddrPortFrom(a.Unmap(), port)}
	}
	var out []netip.AddrPort
	ifs, err := net.Interfaces()
	if err != nil {
		return nil
	}
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			pfx, err := netip.ParsePrefix(a.String())
			if err != nil {
				continue
			}
			ip := pfx.Addr().Unmap()
			if ip.IsLinkLocalUnicast() || ip.IsMulticast() || ip.IsUnspecified() {
				continue
			}
			if len(out) < p2pwire.MaxCandidates {
				out = append(out, netip.AddrPortFrom(ip, port))
			}
		}
	}
	slices.SortFunc(out, func(a, b netip.AddrPort) int { return a.Compare(b) })
	return slices.Compact(out)
}

// ---- receiving ----

// udpReader reads the UDP socket until it closes.
func (p *Peer) udpReader() {
	u := p.udp
	defer u.wg.Done()
	buf := make([]byte, p2pwire.MaxDatagramSize+1) // one more: a larger datagram is seen as too large
	plain := make([]byte, 0, p2pwire.MaxDatagramSize)
	for {
		_ = u.conn.SetReadDeadline(time.Now().Add(time.Second))
		n, src, err := u.conn.ReadFromUDPAddrPort(buf)
		now := time.Now()
		u.reasm.sweep(p, now)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			select {
			case <-u.stop:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // ICMP errors reported on the socket, and the like
		}
		p.openDatagram(buf[:n], netip.AddrPortFrom(src.Addr().Unmap(), src.Port()), plain, now)
	}
}

// openDatagram opens one datagram with the key its key id names and
// dispatches it.
func (p *Peer) openDatagram(d []byte, src netip.AddrPort, plain []byte, now time.Time) {
	u := p.udp
	h, _, _, err := p2pwire.ParseSealed(d)
	if err != nil {
		u.c.dropUnauth.Add(1)
		return
	}
	path, from := PathHub, ""
	var open *sealed.Opener
	if hs := u.hub.Load(); h.KeyID == hs.keyID {
		open = hs.side.Open
	} else {
		u.dmu.RLock()
		dp := u.byKey[h.KeyID]
		u.dmu.RUnlock()
		if dp == nil {
			u.c.dropUnauth.Add(1)
			return
		}
		open, path, from = dp.side.Open, PathDirectUDP, dp.peer
	}
	pt, _, err := open.Open(plain[:0], d)
	switch {
	case errors.Is(err, sealed.ErrReplay):
		u.c.dropReplay.Add(1)
		return
	case err != nil:
		u.c.dropUnauth.Add(1)
		return
	}
	p.dispatchDatagram(path, from, src, h.KeyID, pt, now)
}

// dispatchDatagram acts on one opened datagram plaintext: from the hub
// (path PathHub, from ""), or from peer from on a direct path. A direct
// TCP path's reader calls it too, with PathDirectTCP and no src.
func (p *Peer) dispatchDatagram(path Path, from string, src netip.AddrPort, keyID uint32, plain []byte, now time.Time) {
	u := p.udp
	rt, err := p2pwire.DecodeRouting(plain)
	if err != nil || !rt.Kind.OnDatagram() || rt.Kind.ToHubOnly() || path != PathHub && rt.Kind.FromHubOnly() {
		u.c.dropMalformed.Add(1) // not a datagram, or one that does not travel this way
		return
	}
	in := inDatagram{Kind: rt.Kind, Path: path, Src: src, KeyID: keyID, Rest: plain[rt.Size:], Broadcast: rt.Broadcast()}
	switch {
	case !rt.Kind.Routed():
		in.From = from
	case path == PathHub && rt.Flags&p2pwire.FlagFrom != 0:
		in.From = string(rt.From)
	case path != PathHub && rt.Direct():
		in.From = from
	default:
		u.c.dropMalformed.Add(1) // a routed datagram without the sender the path implies
		return
	}
	u.c.received.Add(1)
	switch rt.Kind {
	case p2pwire.KindRegistered:
		if path != PathHub {
			u.c.dropMalformed.Add(1)
			return
		}
		var m p2pwire.Registered
		if err := m.Unmarshal(plain); err != nil {
			u.c.dropMalformed.Add(1)
			return
		}
		u.obs.Store(&m.Observed)
		u.regMu.Lock()
		first := !u.regOK
		u.regOK = true
		u.regMu.Unlock()
		if first {
			select {
			case <-u.regCh:
			default:
				close(u.regCh)
			}
		}
		return
	case p2pwire.KindPing:
		var m p2pwire.Ping
		if m.Unmarshal(plain) != nil {
			u.c.dropMalformed.Add(1)
			return
		}
		pong, _ := (&p2pwire.Pong{Value: m.Value}).AppendTo(make([]byte, 0, 16))
		p.answerPing(path, from, src, keyID, pong)
		return
	case p2pwire.KindPong:
		return
	case p2pwire.KindPathChallenge:
		// The hub checks that this socket is where it sends this peer's
		// datagrams (docs/protocol/p2p.md §12.4): answer at once, from it.
		var m p2pwire.PathChallenge
		if m.Unmarshal(plain) != nil {
			u.c.dropMalformed.Add(1)
			return
		}
		u.c.pathChallenges.Add(1)
		var b [2 + p2pwire.PathDataSize]byte
		resp, _ := (&p2pwire.PathResponse{Data: m.Data}).AppendTo(b[:0])
		_ = p.sealTo(u.hub.Load().side.Seal, u.hubAddr, resp)
		return
	case p2pwire.KindUDPMessage:
		var e p2pwire.Envelope
		if e.Unmarshal(in.Rest) != nil {
			u.c.dropMalformed.Add(1)
			return
		}
		p.deliverUDP(&Message{From: in.From, Broadcast: in.Broadcast, UDP: true, Path: path, p: p,
			Envelope: Envelope{Header: e.Header, Pairs: e.Pairs, Payload: slices.Clone(e.Payload)}})
		return
	case p2pwire.KindJumbo:
		u.reasm.add(p, &in, now)
		return
	}
	u.dmu.RLock()
	h := u.handlers[rt.Kind]
	u.dmu.RUnlock()
	if h == nil {
		u.c.dropNoHandler.Add(1)
		return
	}
	h(&in)
}

// answerPing answers a PING on the path it came on.
func (p *Peer) answerPing(path Path, from string, src netip.AddrPort, keyID uint32, pong []byte) {
	u := p.udp
	switch path {
	case PathHub:
		hs := u.hub.Load()
		_ = p.sealTo(hs.side.Seal, u.hubAddr, pong)
	case PathDirectUDP:
		u.dmu.RLock()
		dp := u.byKey[keyID]
		u.dmu.RUnlock()
		if dp != nil {
			_ = p.sealTo(dp.side.Seal, src, pong)
		}
	case PathDirectTCP:
		if dp := p.directPath(from); dp != nil && dp.writeTCP != nil {
			_ = dp.writeTCP(pong)
		}
	}
}

// deliverUDP queues a message that came as datagrams, without waiting: a
// full Messages drops it (counted in UDPStats.DroppedQueueFull). Only
// goroutines that stop before Messages closes may call it: the UDP
// reader and the extensions' (see extensions).
func (p *Peer) deliverUDP(m *Message) bool {
	select {
	case <-p.closing:
		return false
	default:
	}
	select {
	case p.msgs <- m:
		return true
	default:
		if p.udp != nil {
			p.udp.c.dropQueueFull.Add(1)
		}
		return false
	}
}
