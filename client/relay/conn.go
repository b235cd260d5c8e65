package relay

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/protocol/relaywire"
)

// AllocationID is the id of an allocation: a peer's address on the relay.
type AllocationID = relaywire.AllocationID

// EventType says what an [Event] reports.
type EventType int

// The event types.
const (
	// EventPeerConnected: Peer connected (to a host: a joiner; to a
	// joiner: its host, once, when the connection is accepted).
	EventPeerConnected EventType = iota + 1
	// EventPeerDisconnected: Peer left or was disconnected. For a joiner
	// the peer is the host, and the Conn ends with ErrHostGone.
	EventPeerDisconnected
	// EventRebound: the Conn re-bound its allocation (after an address
	// change, a new socket or a lost carrier); Err says why.
	EventRebound
	// EventError: a non-fatal ERROR from the relay node (a
	// [*ServerError], such as ErrNotConnected for a RELAY to a peer that
	// has left).
	EventError
)

var eventNames = [...]string{EventPeerConnected: "peer_connected", EventPeerDisconnected: "peer_disconnected", EventRebound: "rebound", EventError: "error"}

func (t EventType) String() string {
	if int(t) < len(eventNames) && eventNames[t] != "" {
		return eventNames[t]
	}
	return fmt.Sprintf("EventType(%d)", int(t))
}

// Event is something that happened to a [Conn].
type Event struct {
	Type EventType
	Peer AllocationID // EventPeerConnected, EventPeerDisconnected
	Err  error        // EventRebound (the cause), EventError
}

// Stats are a Conn's counters.
type Stats struct {
	Sent, Received uint64 // RELAY messages
	// Dropped counts received messages dropped because Recv's queue was
	// full or they were larger than Config.MaxPayload.
	Dropped       uint64
	EventsDropped uint64 // events dropped because Events was full
	Rebinds       uint64 // binds after the first
}

// Conn is an allocation bound on its relay node: a host that peers
// connect to, or a joiner connected to its host. It sends and receives
// RELAY messages by peer allocation id, keeps the allocation alive, and
// re-binds by itself after an address change. It is safe for concurrent
// use.
type Conn struct {
	// immutable after Dial
	cfg       Config
	log       *slog.Logger
	alloc     Allocation
	transport Transport
	ep        api.RelayServerEndpoint
	dial      dialFunc
	subscribe bool // a host: asks for peer events

	car      atomic.Pointer[carrierRef] // the current carrier
	lastRecv atomic.Int64               // time of the last message from the relay, Unix ns

	// signals from the readers to the goroutine that binds or connects;
	// capacity 1, sent without blocking
	bound     chan struct{} // BIND_RECEIVED
	connected chan error    // ACCEPTED (nil), REJECTED, ERROR 2/6
	mismatch  chan struct{} // ERROR 3: bind again with a larger nonce
	broken    chan *carrierRef
	rebindReq chan chan error

	in     chan inbound  // received messages for Recv
	free   chan []byte   // spent buffers of in
	nbuf   atomic.Int32  // buffers made for in
	events chan Event    // closed when the Conn has ended
	done   chan struct{} // closed by end
	ended  chan struct{} // closed when every goroutine returned
	wg     sync.WaitGroup

	sendMu  sync.Mutex // serializes writes to the carrier
	sendBuf []byte     // guarded by sendMu

	closeOnce sync.Once

	mu         sync.Mutex // guards the fields below
	nonce      uint16     // the last nonce the node accepted
	peers      map[AllocationID]struct{}
	subAcked   bool  // the node acknowledged PEERS_SUBSCRIBE
	subTries   int   // PEERS_SUBSCRIBEs sent since the last (re-)bind
	err        error // why the Conn ended; set once by end
	stats      Stats
	connecting bool         // a joiner waits for ACCEPTED: ERROR 5 means "retry"
	host       AllocationID // a joiner's host, from ACCEPTED; zero for a host
}

type carrierRef struct{ c carrier }

type inbound struct {
	from AllocationID
	b    []byte
}

// Dial binds a [Conn] to allocation a on its relay node over
// Config.Transport (BIND, retransmitted until BIND_RECEIVED) and, for a
// joiner's allocation, connects it to the host (CONNECT_REQUEST until
// ACCEPTED). It fails with ErrBindTimeout when the node does not answer,
// ErrRejected when the host is full, a [*ServerError] (matching
// ErrAllocationIDNotFound, ErrTimedOut, ErrUnauthorized, …) when the node
// refuses, or ErrNoEndpoint.
func (c *Client) Dial(ctx context.Context, a *Allocation) (*Conn, error) {
	ep, info, err := endpointFor(c.cfg.Transport, a.Endpoints)
	if err != nil {
		return nil, err
	}
	conn := &Conn{
		cfg: c.cfg, alloc: *a, transport: c.cfg.Transport, ep: ep, dial: info.dial,
		bound: make(chan struct{}, 1), connected: make(chan error, 1), mismatch: make(chan struct{}, 1),
		broken: make(chan *carrierRef, 1), rebindReq: make(chan chan error),
		in: make(chan inbound, c.cfg.QueueLen), free: make(chan []byte, c.cfg.QueueLen),
		events: make(chan Event, c.cfg.EventQueueLen), done: make(chan struct{}), ended: make(chan struct{}),
		peers: map[AllocationID]struct{}{}, nonce: 1,
	}
	conn.log = c.cfg.Logger.With("allocation", a.ID.String(), "transport", string(conn.transport))
	conn.sendBuf = make([]byte, 0, relaywire.RelayHeaderSize+c.cfg.MaxPayload)
	// A joiner learns its host's id from ACCEPTED (from = host): the
	// host's blob is sealed for the relay. A host asks for peer events.
	conn.subscribe = a.IsHost() && !c.cfg.noPeerEvents
	conn.lastRecv.Store(time.Now().UnixNano())
	car, err := conn.dialCarrier(ctx)
	if err != nil {
		return nil, err
	}
	conn.wg.Add(1) // the keeper, started below or released on failure
	conn.startReader(car)
	go func() { conn.wg.Wait(); close(conn.events); close(conn.ended) }()

	if err := conn.bind(ctx, conn.nonce); err != nil {
		conn.wg.Done()
		conn.end(err)
		conn.closeCarrier()
		<-conn.ended
		return nil, err
	}
	if !a.IsHost() {
		if err := conn.connect(ctx); err != nil {
			conn.wg.Done()
			conn.sendClose()
			conn.end(err)
			conn.closeCarrier()
			<-conn.ended
			return nil, err
		}
	}
	go conn.keeper()
	return conn, nil
}

func (c *Conn) dialCarrier(ctx context.Context) (carrier, error) {
	dctx, cancel := context.WithTimeout(ctx, c.cfg.DialTimeout)
	defer cancel()
	return c.dial(dctx, c.ep, &c.alloc, &c.cfg)
}

// startReader makes car the current carrier and starts its reader.
func (c *Conn) startReader(car carrier) {
	ref := &carrierRef{c: car}
	c.car.Store(ref)
	c.wg.Add(1)
	go c.readLoop(ref)
}

// ID returns the Conn's own allocation id, its address for peers.
func (c *Conn) ID() AllocationID { return c.alloc.ID }

// IsHost reports whether the Conn is a host.
func (c *Conn) IsHost() bool { return c.alloc.IsHost() }

// HostID returns the host's allocation id: a joiner's peer; the Conn's own
// for a host.
func (c *Conn) HostID() AllocationID {
	if c.IsHost() {
		return c.alloc.ID
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.host
}

// JoinCode returns the join code of the allocation, when known (a host's
// made by [Client.Host] or [Client.CreateJoinCode], a joiner's).
func (c *Conn) JoinCode() string { return c.alloc.JoinCode }

// Region returns the relay node's region.
func (c *Conn) Region() string { return c.alloc.Region }

// Transport returns the carrier the Conn uses.
func (c *Conn) Transport() Transport { return c.transport }

// Endpoint returns the relay node's endpoint the Conn uses.
func (c *Conn) Endpoint() api.RelayServerEndpoint { return c.ep }

// Allocation returns a copy of the Conn's allocation (with its key).
func (c *Conn) Allocation() Allocation { return c.alloc }

// Peers returns the peers the Conn is connected to: a host's joiners (as
// far as it knows: from peer events, or from their first message on a
// relay without them), a joiner's host.
func (c *Conn) Peers() []AllocationID {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]AllocationID, 0, len(c.peers))
	for p := range c.peers {
		out = append(out, p)
	}
	return out
}

// Events returns the Conn's events. The channel is closed when the Conn
// has ended and its goroutines returned. When it is full, events are
// dropped (counted in Stats); Peers stays exact.
func (c *Conn) Events() <-chan Event { return c.events }

// Done is closed when the Conn ends: Close, or a fatal error ([Conn.Err]).
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err returns why the Conn ended: nil while it runs, ErrClosed after
// Close, else the cause (a [*ServerError] such as ErrTimedOut or
// ErrAllocationIDNotFound, ErrHostGone, or the error that made re-binding
// fail).
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Stats returns the Conn's counters.
func (c *Conn) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// end ends the Conn with err, once.
func (c *Conn) end(err error) {
	c.mu.Lock()
	first := c.err == nil
	if first {
		c.err = err
	}
	c.mu.Unlock()
	if first {
		close(c.done)
		if !errors.Is(err, ErrClosed) {
			c.log.Info("relay: connection ended", "err", err)
		}
	}
}

func (c *Conn) closeCarrier() {
	if r := c.car.Load(); r != nil {
		_ = r.c.close()
	}
}

// Close releases the allocation (CLOSE to the relay node, best effort: a
// host's peers are disconnected and its join code dies), closes the
// carrier and waits for the Conn's goroutines. It is idempotent and
// returns nil.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		select {
		case <-c.done:
		default:
			c.sendClose()
		}
		c.end(ErrClosed)
		c.closeCarrier()
	})
	<-c.ended
	return nil
}

func (c *Conn) sendClose() {
	m := relaywire.Close{HasAllocationID: true, AllocationID: c.alloc.ID}
	_ = c.write(&m)
}

// write encodes m and sends it on the current carrier.
func (c *Conn) write(m relaywire.Message) error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	b, err := m.AppendTo(c.sendBuf[:0])
	if err != nil {
		return err
	}
	return c.writeLocked(b)
}

func (c *Conn) writeLocked(b []byte) error {
	r := c.car.Load()
	if err := r.c.send(b); err != nil {
		select {
		case c.broken <- r:
		default:
		}
		return err
	}
	return nil
}

// Send sends data to peer to (a RELAY message). A joiner sends to its
// host, a host to a connected peer; else it fails with ErrUnknownPeer.
// Data over Config.MaxPayload fails with ErrTooLarge. Delivery is
// best effort, as UDP. After the Conn ended it fails with ErrClosed.
func (c *Conn) Send(ctx context.Context, to AllocationID, data []byte) error {
	if len(data) > c.cfg.MaxPayload {
		return fmt.Errorf("relay: send %d bytes (max %d): %w", len(data), c.cfg.MaxPayload, ErrTooLarge)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	_, ok := c.peers[to]
	ended := c.err != nil
	c.mu.Unlock()
	if ended {
		return ErrClosed
	}
	if !ok {
		return fmt.Errorf("relay: send to %s: %w", to, ErrUnknownPeer)
	}
	c.sendMu.Lock()
	b := append(c.sendBuf[:0], relaywire.Signature0, relaywire.Signature1, relaywire.Version, byte(relaywire.TypeRelay))
	b = append(b, c.alloc.ID[:]...)
	b = append(b, to[:]...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(data)))
	b = append(b, data...)
	err := c.writeLocked(b)
	c.sendMu.Unlock()
	if err != nil {
		return fmt.Errorf("relay: send: %w", err)
	}
	c.mu.Lock()
	c.stats.Sent++
	c.mu.Unlock()
	return nil
}

// Recv waits for the next message from a peer, copies its payload into
// buf and returns its length and sender. A payload longer than buf fails
// with io.ErrShortBuffer (the message is lost); a buf of Config.MaxPayload
// bytes always fits. After the Conn ended (and the queue is empty) it
// fails with ErrClosed.
func (c *Conn) Recv(ctx context.Context, buf []byte) (int, AllocationID, error) {
	var m inbound
	select {
	case m = <-c.in:
	default:
		select {
		case m = <-c.in:
		case <-c.done:
			return 0, AllocationID{}, ErrClosed
		case <-ctx.Done():
			return 0, AllocationID{}, ctx.Err()
		}
	}
	n := copy(buf, m.b)
	short := n < len(m.b)
	select {
	case c.free <- m.b[:cap(m.b)]:
	default:
	}
	if short {
		return 0, m.from, fmt.Errorf("relay: recv: %d-byte message into %d bytes: %w", len(m.b), len(buf), io.ErrShortBuffer)
	}
	return n, m.from, nil
}

// Disconnect ends the connection with peer (DISCONNECT): a host frees the
// peer's slot (the joiner's allocation lives on, but it is disconnected),
// a joiner leaves its host. It fails with ErrUnknownPeer.
func (c *Conn) Disconnect(ctx context.Context, peer AllocationID) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	_, ok := c.peers[peer]
	delete(c.peers, peer)
	c.mu.Unlock()
	if !ok {
		return fmt.Errorf("relay: disconnect %s: %w", peer, ErrUnknownPeer)
	}
	return c.write(&relaywire.Disconnect{From: c.alloc.ID, To: peer})
}

// Rebind opens a new carrier (a new UDP socket: a new source port) and
// binds the allocation there with a larger nonce, as after a network
// change. Peers keep their connection. The Conn does this by itself when
// the relay node reports another address (ERROR 3), when the carrier
// breaks and when the node is silent for Config.DeadAfter.
func (c *Conn) Rebind(ctx context.Context) error {
	reply := make(chan error, 1)
	select {
	case c.rebindReq <- reply:
	case <-c.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// emit queues ev, or drops it when Events is full.
func (c *Conn) emit(ev Event) {
	select {
	case c.events <- ev:
	default:
		c.mu.Lock()
		c.stats.EventsDropped++
		c.mu.Unlock()
	}
}

// addPeer adds p to the peer set and reports whether it is new.
func (c *Conn) addPeer(p AllocationID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.peers[p]; ok || len(c.peers) >= c.cfg.MaxPeers {
		return false
	}
	c.peers[p] = struct{}{}
	return true
}

func (c *Conn) removePeer(p AllocationID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.peers[p]
	delete(c.peers, p)
	return ok
}

// isClosed reports whether err comes from a closed carrier.
func isClosed(err error) bool { return errors.Is(err, net.ErrClosed) }
