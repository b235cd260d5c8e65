package p2p

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/client/session"
	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// JoinPath is the API path of the join call.
const JoinPath = "/p2p/v1/join"

// JoinRequest names the network to join: by name, by join code, or both.
type JoinRequest struct {
	Network  string
	JoinCode string
}

// Pair is one key/value pair of an envelope; keys are 1–64 bytes, values
// up to 1,024. The client sorts them before sending.
type Pair = p2pwire.Pair

// Envelope is what one peer sends another: an optional header (a short
// label, up to 1,024 bytes), optional key/value pairs (up to 32), and an
// opaque payload. The hub reads none of it.
type Envelope struct {
	Header  string
	Pairs   []Pair
	Payload []byte
}

// Message is a message or a request from another peer. Its fields are the
// receiver's to keep.
type Message struct {
	// From is the sender's peer id, stamped by the hub.
	From string
	// Broadcast says the sender sent it to every peer of the network.
	Broadcast bool
	// UDP says it came as datagrams (SendUDP, BroadcastUDP): unreliable,
	// and never a request.
	UDP bool
	// Path is the way it came: PathHub, or a direct path after a punch.
	Path Path
	Envelope

	id uint64 // a request's message id; 0 for a message
	p  *Peer
}

// IsRequest reports whether the sender waits for a [Message.Respond].
func (m *Message) IsRequest() bool { return m.id != 0 }

// Respond answers a request with env. It fails for a message that is not
// a request, and with ErrClosed after the connection ended.
func (m *Message) Respond(ctx context.Context, env Envelope) error {
	if m.id == 0 || m.p == nil {
		return errors.New("p2p: respond: not a request")
	}
	return m.p.send(ctx, p2pwire.KindResponse, m.From, false, m.id, env)
}

// EventType says what an [Event] is about.
type EventType int

// The event types.
const (
	// EventPeerJoined: Peer joined the network (or was there when this
	// peer joined).
	EventPeerJoined EventType = iota + 1
	// EventPeerLeft: Peer left the network.
	EventPeerLeft
	// EventError: the hub refused a message this peer sent (Err is a
	// *HubError: unknown_peer, rate_limited, quota_exceeded, too_large);
	// the connection stays open.
	EventError
	// EventDisconnected: the connection to the hub was lost (Err says
	// why); the client is resuming the session. Sends fail with
	// ErrDisconnected until EventResumed.
	EventDisconnected
	// EventResumed: the session continues on a new connection with the
	// same peer id; the other peers saw no leave.
	EventResumed
	// EventPath: sends to Peer now take Path: a direct path a punch
	// confirmed (PathDirectUDP, PathDirectTCP), or the hub again when the
	// direct path died (its keep-alives went unanswered).
	EventPath
)

// String returns "joined", "left", "error", "disconnected", "resumed" or
// "path".
func (t EventType) String() string {
	switch t {
	case EventPeerJoined:
		return "joined"
	case EventPeerLeft:
		return "left"
	case EventError:
		return "error"
	case EventDisconnected:
		return "disconnected"
	case EventResumed:
		return "resumed"
	case EventPath:
		return "path"
	}
	return fmt.Sprintf("event %d", int(t))
}

// Event is a change of the peer set, or an error about a sent message.
type Event struct {
	Type EventType
	Peer string // EventPeerJoined, EventPeerLeft, EventPath; the destination of an EventError when known
	Err  error  // EventError
	Path Path   // EventPath: the path sends to Peer take from now on
}

// Peer is this client's connection to a network through its hub. Its
// methods are safe for concurrent use.
type Peer struct {
	// immutable after Connect
	cfg      Config
	log      *slog.Logger
	tls      *tls.Config
	id       string
	network  string
	hub      api.P2PHub
	maxFrame int // the hub's max_frame_size
	msgs     chan *Message
	events   chan Event
	closing  chan struct{} // closed once, by end
	wg       sync.WaitGroup

	wmu  sync.Mutex // serializes writes
	wbuf []byte     // guarded by wmu

	nextID atomic.Uint64

	// the reader's: the resume credentials of the session
	resumeToken  []byte
	resumeWindow time.Duration

	cmu   sync.Mutex
	conn  net.Conn // guarded by cmu; nil while reconnecting
	ended bool     // guarded by cmu; set by end

	mu      sync.Mutex
	peers   map[string]struct{} // guarded by mu
	version uint64              // guarded by mu; of the peer set held
	pending map[uint64]pending  // guarded by mu; requests in flight
	err     error               // guarded by mu; why the connection ended

	endOnce sync.Once

	// the UDP side (udp.go): nil without a UDP session
	udp      *udpSide
	extStops []func() // of the extensions, in start order
	extOnce  sync.Once
	punch    *puncher // hole punching (punch.go); nil without UDP

	rel *channels // the reliable channels (reliable_peer.go); set before the readers run, nil without UDP
}

// response is the outcome of a request: the answer or the hub's error.
type response struct {
	msg *Message
	err error
}

// Join asks the API for a hub ticket for the network (POST /p2p/v1/join,
// with the login session of sc) and connects to the network's hub with
// it. Errors of the API call are *session.APIError (matching
// ErrJoinCodeRequired, ErrBanned, ErrNotAllowed, ErrHubUnavailable, …);
// those of the hub are *HubError.
func Join(ctx context.Context, sc *session.Client, req JoinRequest, cfg *Config) (*Peer, error) {
	var jr api.P2PJoinResponse
	if _, err := sc.Do(ctx, http.MethodPost, JoinPath, &api.P2PJoinRequest{Network: req.Network, JoinCode: req.JoinCode}, &jr); err != nil {
		return nil, fmt.Errorf("p2p: join: %w", err)
	}
	return Connect(ctx, &jr, cfg)
}

// Connect connects to the hub of a join answer with its ticket: TLS 1.3
// (the certificate pinned to jr.Hub.CertSHA256 unless cfg.RootCAs is
// set), HELLO, WELCOME. It returns once the hub admitted the peer; the
// peer set arrives as events.
func Connect(ctx context.Context, jr *api.P2PJoinResponse, cfg *Config) (*Peer, error) {
	c := cfg.resolve()
	tcfg, err := tlsConfig(jr.Hub, c)
	if err != nil {
		return nil, err
	}
	p := &Peer{
		cfg: c, log: c.Logger.With("component", "p2p"), tls: tcfg, hub: jr.Hub,
		msgs:    make(chan *Message, c.QueueLen),
		events:  make(chan Event, c.QueueLen),
		closing: make(chan struct{}),
		peers:   make(map[string]struct{}),
		pending: make(map[uint64]pending),
	}
	conn, br, w, err := p.dial(ctx, &p2pwire.Hello{Ticket: []byte(jr.Ticket)})
	if err != nil {
		return nil, err
	}
	p.conn = conn
	p.id, p.network, p.maxFrame = string(w.PeerID), w.Network, int(w.MaxFrameSize)
	p.resumeToken, p.resumeWindow = w.ResumeToken, time.Duration(w.ResumeWindowMS)*time.Millisecond
	if w.UDP != nil && !c.DisableUDP {
		if err := p.startUDP(w.UDP); err != nil {
			_ = conn.Close()
			return nil, err
		}
	}
	for _, start := range extensions {
		p.extStops = append(p.extStops, start(p))
	}
	p.wg.Add(2)
	go p.run(br)
	go p.pingLoop()
	return p, nil
}

// dial connects to the hub, does TLS, sends hello and reads WELCOME.
func (p *Peer) dial(ctx context.Context, hello *p2pwire.Hello) (net.Conn, *bufio.Reader, *p2pwire.Welcome, error) {
	dctx, cancel := context.WithTimeout(ctx, p.cfg.DialTimeout)
	defer cancel()
	raw, err := (&net.Dialer{}).DialContext(dctx, "tcp", p.hub.Address)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("p2p: dial hub %s: %w", p.hub.NodeID, err)
	}
	conn := tls.Client(raw, p.tls)
	if err := conn.HandshakeContext(dctx); err != nil {
		_ = raw.Close()
		return nil, nil, nil, fmt.Errorf("p2p: TLS with hub %s: %w", p.hub.NodeID, err)
	}
	br := bufio.NewReaderSize(conn, 64<<10)
	w, err := p.handshake(ctx, conn, br, hello)
	if err != nil {
		_ = conn.Close()
		return nil, nil, nil, err
	}
	return conn, br, w, nil
}

// tlsConfig verifies the hub with cfg.RootCAs, or pins its certificate.
func tlsConfig(hub api.P2PHub, c Config) (*tls.Config, error) {
	host, _, err := net.SplitHostPort(hub.Address)
	if err != nil {
		return nil, fmt.Errorf("p2p: hub address %q: %w", hub.Address, err)
	}
	t := &tls.Config{MinVersion: tls.VersionTLS13, ServerName: host, NextProtos: []string{"switchboard-p2p/1"}}
	if c.RootCAs != nil {
		t.RootCAs = c.RootCAs
		return t, nil
	}
	want := normalizeFingerprint(hub.CertSHA256)
	if len(want) != 2*sha256.Size {
		return nil, fmt.Errorf("p2p: hub %s has no certificate fingerprint to pin, and Config.RootCAs is nil", hub.NodeID)
	}
	// The chain is not verified by a CA: the leaf's fingerprint is.
	t.InsecureSkipVerify = true
	t.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("p2p: the hub sent no certificate")
		}
		sum := sha256.Sum256(cs.PeerCertificates[0].Raw)
		if hex.EncodeToString(sum[:]) != want {
			return errors.New("p2p: the hub's certificate does not have the fingerprint the API gave")
		}
		return nil
	}
	return t, nil
}

// normalizeFingerprint turns "AB:CD:…" or "abcd…" into lower-case hex.
func normalizeFingerprint(s string) string {
	return strings.ToLower(strings.ReplaceAll(s, ":", ""))
}

// handshake sends HELLO and reads WELCOME.
func (p *Peer) handshake(ctx context.Context, conn net.Conn, br *bufio.Reader, hello *p2pwire.Hello) (*p2pwire.Welcome, error) {
	deadline := time.Now().Add(p.cfg.HandshakeTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = conn.SetDeadline(deadline)
	defer func() { _ = conn.SetDeadline(time.Time{}) }()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	frame, err := p2pwire.AppendMessageFrame(nil, hello)
	if err != nil {
		return nil, fmt.Errorf("p2p: HELLO: %w", err)
	}
	if _, err := conn.Write(frame); err != nil {
		return nil, p.ctxErr(ctx, fmt.Errorf("p2p: send HELLO: %w", err))
	}
	body, err := p2pwire.ReadFrame(br, nil, p.cfg.MaxFrameSize)
	if err != nil {
		return nil, p.ctxErr(ctx, fmt.Errorf("p2p: read WELCOME: %w", err))
	}
	m, err := p2pwire.Decode(body)
	if err != nil {
		return nil, &ProtocolError{Err: err}
	}
	switch m := m.(type) {
	case *p2pwire.Welcome:
		return m, nil
	case *p2pwire.Error:
		return nil, hubError(m)
	}
	return nil, &ProtocolError{Err: fmt.Errorf("%s before WELCOME", m.Kind())}
}

// ctxErr returns ctx's error when it ended, else err.
func (p *Peer) ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("p2p: %w", ctx.Err())
	}
	return err
}

// ID returns this connection's peer id, "<username>~<random>".
func (p *Peer) ID() string { return p.id }

// Network returns the network's name.
func (p *Peer) Network() string { return p.network }

// Hub returns the hub the peer is connected to.
func (p *Peer) Hub() api.P2PHub { return p.hub }

// Peers returns the other peers of the network as this client knows them
// now, sorted.
func (p *Peer) Peers() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.peers))
	for id := range p.peers {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// Messages delivers the messages and requests of other peers. It is
// closed when the connection ends. Drain it: when it is full the reader
// waits, the hub's queue for this peer fills, and the hub drops the peer
// as a slow consumer.
func (p *Peer) Messages() <-chan *Message { return p.msgs }

// Events delivers peers joining and leaving, and errors about sent
// messages. It is closed when the connection ends. Drain it, as Messages.
func (p *Peer) Events() <-chan Event { return p.events }

// Done is closed when the connection ends; [Peer.Err] then says why.
func (p *Peer) Done() <-chan struct{} { return p.closing }

// Err returns nil while the connection is open, and then why it ended:
// ErrClosed after Close, a *HubError the hub closed it with (ErrKicked,
// ErrShuttingDown, …), or the network error.
func (p *Peer) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Send sends env to peer to. A nil error means the hub has it to
// forward; the hub's refusal (an unknown peer, a rate limit) arrives as
// an EventError.
func (p *Peer) Send(ctx context.Context, to string, env Envelope) error {
	return p.send(ctx, p2pwire.KindMessage, to, false, 0, env)
}

// Broadcast sends env to every other peer of the network.
func (p *Peer) Broadcast(ctx context.Context, env Envelope) error {
	return p.send(ctx, p2pwire.KindMessage, "", true, 0, env)
}

// Request sends env to peer to as a request and waits for the answer, for
// ctx, or Config.RequestTimeout when ctx has no deadline. The hub's
// refusal fails it at once with a *HubError (errors.Is ErrUnknownPeer,
// …); on timeout the error matches context.DeadlineExceeded, and a late
// answer is dropped.
func (p *Peer) Request(ctx context.Context, to string, env Envelope) (*Message, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.cfg.RequestTimeout)
		defer cancel()
	}
	id := p.nextID.Add(1)
	ch := make(chan *response, 1)
	p.mu.Lock()
	switch {
	case p.err != nil:
		err := p.err
		p.mu.Unlock()
		return nil, closedErr(err)
	case len(p.pending) >= p.cfg.MaxPendingRequests:
		p.mu.Unlock()
		return nil, fmt.Errorf("p2p: request: %d requests in flight already", len(p.pending))
	}
	p.pending[id] = pending{ch: ch, to: to}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.pending, id)
		p.mu.Unlock()
	}()
	if err := p.send(ctx, p2pwire.KindRequest, to, false, id, env); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		return r.msg, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("p2p: request to %s: %w", to, ctx.Err())
	case <-p.closing:
		return nil, closedErr(p.Err())
	}
}

// closedErr is the error of a call on an ended connection.
func closedErr(cause error) error {
	if cause == nil || errors.Is(cause, ErrClosed) {
		return ErrClosed
	}
	return fmt.Errorf("%w: %w", ErrClosed, cause)
}

// send encodes and writes one routed message.
func (p *Peer) send(ctx context.Context, kind p2pwire.Kind, to string, broadcast bool, id uint64, env Envelope) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("p2p: send: %w", err)
	}
	e := p2pwire.Envelope{MessageID: id, Header: env.Header, Pairs: env.Pairs, Payload: env.Payload}
	if !slices.IsSortedFunc(e.Pairs, comparePairs) {
		e.Pairs = slices.Clone(e.Pairs)
		slices.SortFunc(e.Pairs, comparePairs)
	}
	if !broadcast && p.sendDirectStream(kind, to, &e) {
		return nil // on the punched TCP connection (tcppunch.go)
	}
	rt := p2pwire.Route{To: p2pwire.PeerID(to), Broadcast: broadcast}
	var m p2pwire.Message
	switch kind {
	case p2pwire.KindRequest:
		m = &p2pwire.Request{Route: rt, Envelope: e}
	case p2pwire.KindResponse:
		m = &p2pwire.Response{Route: rt, Envelope: e}
	default:
		m = &p2pwire.Msg{Route: rt, Envelope: e}
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	frame, err := p2pwire.AppendMessageFrame(p.wbuf[:0], m)
	if err != nil {
		return fmt.Errorf("p2p: send %s: %w", kind, err)
	}
	if p.maxFrame > 0 && len(frame)-p2pwire.FrameHeaderSize > p.maxFrame {
		return fmt.Errorf("p2p: send %s: %d bytes over the hub's maximum of %d: %w", kind, len(frame)-p2pwire.FrameHeaderSize, p.maxFrame, ErrTooLarge)
	}
	if cap(frame) <= 64<<10 {
		p.wbuf = frame
	}
	return p.writeLocked(frame)
}

func comparePairs(a, b Pair) int { return strings.Compare(a.Key, b.Key) }

// writeFrame writes a control message.
func (p *Peer) writeFrame(m p2pwire.Message) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	frame, err := p2pwire.AppendMessageFrame(p.wbuf[:0], m)
	if err != nil {
		return err
	}
	return p.writeLocked(frame)
}

// writeLocked writes one frame under wmu. A failed write closes the
// socket (a partial frame cannot be taken back): the reader then resumes
// the session on a new one, or ends the connection.
func (p *Peer) writeLocked(frame []byte) error {
	select {
	case <-p.closing:
		return closedErr(p.Err())
	default:
	}
	conn := p.curConn()
	if conn == nil {
		return ErrDisconnected
	}
	_ = conn.SetWriteDeadline(time.Now().Add(p.cfg.WriteTimeout))
	if _, err := conn.Write(frame); err != nil {
		_ = conn.Close()
		select {
		case <-p.closing:
			return closedErr(p.Err())
		default:
		}
		return fmt.Errorf("%w: %w", ErrDisconnected, err)
	}
	return nil
}

// curConn returns the connection, nil while reconnecting.
func (p *Peer) curConn() net.Conn {
	p.cmu.Lock()
	defer p.cmu.Unlock()
	return p.conn
}

// setConn makes c the connection (nil: reconnecting). After end it closes
// c instead and reports false.
func (p *Peer) setConn(c net.Conn) bool {
	p.cmu.Lock()
	defer p.cmu.Unlock()
	if p.ended {
		if c != nil {
			_ = c.Close()
		}
		return false
	}
	p.conn = c
	return true
}

// Close says GOODBYE to the hub (the other peers see this one leave at
// once), closes the connection and waits for the client's goroutines. It
// is idempotent and returns nil.
func (p *Peer) Close() error {
	select {
	case <-p.closing:
	default:
		p.wmu.Lock()
		if conn := p.curConn(); conn != nil {
			if frame, err := p2pwire.AppendMessageFrame(nil, &p2pwire.Goodbye{}); err == nil {
				_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
				_, _ = conn.Write(frame)
			}
		}
		p.wmu.Unlock()
	}
	p.end(ErrClosed)
	p.wg.Wait()
	return nil
}

// end records why the connection ended (the first cause wins), wakes
// every waiter and closes the socket.
func (p *Peer) end(cause error) {
	p.endOnce.Do(func() {
		p.mu.Lock()
		p.err = cause
		p.mu.Unlock()
		close(p.closing)
		p.cmu.Lock()
		p.ended = true
		if p.conn != nil {
			_ = p.conn.Close()
		}
		p.cmu.Unlock()
	})
}

// pingLoop pings the hub every Config.PingInterval.
func (p *Peer) pingLoop() {
	defer p.wg.Done()
	t := time.NewTicker(p.cfg.PingInterval)
	defer t.Stop()
	var n uint64
	for {
		select {
		case <-p.closing:
			return
		case <-t.C:
			n++
			_ = p.writeFrame(&p2pwire.Ping{Value: n}) // a failure is the reader's to handle
		}
	}
}
