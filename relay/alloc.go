package relay

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/switchboardgg/switchboard/protocol/relaywire"
)

// carrier sends relay messages to the clients it serves: a UDP socket
// (many clients, told apart by address), one WebSocket connection or one
// DTLS connection.
// Implementations are pointers, so an endpoint is comparable.
type carrier interface {
	// send sends one message to ap (ignored by a WebSocket connection);
	// it never blocks and reports whether the message left or was queued.
	send(ap netip.AddrPort, b []byte) bool
	// kind names the carrier in stats: "udp", "ws" or "dtls".
	kind() string
}

// endpoint is where a client is: a carrier and, for UDP, its address.
type endpoint struct {
	c  carrier
	ap netip.AddrPort
}

// allocation is one bound allocation. The data model is the allocation,
// not a socket: ep may be a UDP address or a WebSocket connection and
// change between them on a re-bind.
type allocation struct {
	// immutable after creation
	id       relaywire.AllocationID
	host     relaywire.AllocationID // a joiner's host; zero for a host
	isHost   bool
	key      relaywire.Key
	maxPeers int
	idle     time.Duration // 0: the server's
	expires  time.Time
	created  time.Time
	bw       *rate.Limiter // its own lock: only this allocation's senders take it

	// written under mu, read anywhere
	ep       atomic.Pointer[endpoint]
	lastSeen atomic.Int64 // Unix nanoseconds of the last message to or from it
	npeers   atomic.Int32
	// subscribed: the host sent PEERS_SUBSCRIBE; it gets PEER_EVENTs.
	// Set under mu, so that no event of a change made under mu is lost
	// between the list the ack sends and the first event.
	subscribed atomic.Bool
	subRate    *rate.Limiter // PEERS_SUBSCRIBE per second; its own lock; nil for a joiner

	packetsIn, bytesIn, packetsOut, bytesOut atomic.Uint64

	mu       sync.Mutex // guards below; lock order: a host's before a joiner's
	nonce    uint16
	peers    map[relaywire.AllocationID]*allocation // a host's joiners, or a joiner's host
	released bool
}

func (a *allocation) touch(now time.Time) { a.lastSeen.Store(now.UnixNano()) }

// bound reports whether ep is the allocation's bound endpoint.
func (a *allocation) bound(ep endpoint) bool {
	cur := a.ep.Load()
	return cur != nil && *cur == ep
}

// ttl is the allocation's idle timeout now.
func (a *allocation) ttl(c *Config) time.Duration {
	idle := c.IdleTimeout
	if a.idle > 0 {
		idle = a.idle
	}
	if a.isHost && a.npeers.Load() == 0 {
		return max(idle, c.HostAloneTimeout)
	}
	return idle
}

// peer returns the peer with id, or nil.
func (a *allocation) peer(id relaywire.AllocationID) *allocation {
	a.mu.Lock()
	p := a.peers[id]
	a.mu.Unlock()
	return p
}

// AllocationStats are one allocation's counters, as [Server.Allocation]
// returns them.
type AllocationStats struct {
	// Host reports whether it is a host's allocation.
	Host bool
	// Carrier is "udp", "ws" or "dtls".
	Carrier string
	// Peers is the number of connected peers.
	Peers int
	// Created is when it was first bound.
	Created time.Time
	// PacketsIn, BytesIn count the RELAY messages it sent that were
	// forwarded; PacketsOut, BytesOut the ones forwarded to it.
	PacketsIn, BytesIn, PacketsOut, BytesOut uint64
}

// sourceTable rate-limits messages by source address without allocating:
// a fixed table of token buckets indexed by a hash of the address (two
// sources sharing a bucket share their budget). It is owned by one
// goroutine.
type sourceTable struct {
	rate, burst float64
	b           []bucket
}

type bucket struct {
	tokens float64
	last   int64
}

func newSourceTable(n int, c *Config) *sourceTable {
	return &sourceTable{rate: float64(c.SourceRate), burst: float64(c.SourceBurst), b: make([]bucket, n)}
}

func (t *sourceTable) allow(ap netip.AddrPort, now int64) bool {
	h := uint64(14695981039346656037)
	a := ap.Addr().As16()
	for _, x := range a {
		h = (h ^ uint64(x)) * 1099511628211
	}
	h = (h ^ uint64(ap.Port())) * 1099511628211
	b := &t.b[h%uint64(len(t.b))]
	if b.last == 0 {
		b.tokens = t.burst
	} else if d := now - b.last; d > 0 {
		b.tokens = min(t.burst, b.tokens+float64(d)*t.rate/1e9)
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
