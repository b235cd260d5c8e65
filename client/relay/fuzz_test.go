package relay

import (
	"log/slog"
	"testing"

	"github.com/switchboardgg/switchboard/protocol/relaywire"
)

// fuzzConn is a Conn with no carrier or goroutines, for feeding its
// reader's handler directly.
func fuzzConn(host bool) *Conn {
	cfg := (&Config{Logger: slog.New(slog.DiscardHandler), QueueLen: 4, EventQueueLen: 4, MaxPeers: 8}).resolve()
	c := &Conn{
		cfg: cfg, log: cfg.Logger, alloc: Allocation{ID: AllocationID{0xAA}},
		bound: make(chan struct{}, 1), connected: make(chan error, 1), mismatch: make(chan struct{}, 1),
		broken: make(chan *carrierRef, 1), in: make(chan inbound, cfg.QueueLen), free: make(chan []byte, cfg.QueueLen),
		events: make(chan Event, cfg.EventQueueLen), done: make(chan struct{}), peers: map[AllocationID]struct{}{},
	}
	if !host {
		c.alloc.HostConnectionData = []byte{1}
	}
	c.car.Store(&carrierRef{c: nopCarrier{}})
	return c
}

type nopCarrier struct{}

func (nopCarrier) send([]byte) error        { return nil }
func (nopCarrier) recv([]byte) (int, error) { select {} }
func (nopCarrier) close() error             { return nil }

// FuzzHandle feeds arbitrary messages from "the relay node" to a host's
// and a joiner's handler: nothing panics, the peer set and the queues
// stay within their bounds, and only a RELAY to this Conn is queued.
func FuzzHandle(f *testing.F) {
	me := AllocationID{0xAA}
	peer := AllocationID{0xBB}
	for _, m := range []relaywire.Message{
		&relaywire.Relay{From: peer, To: me, Data: []byte("hi")},
		&relaywire.Accepted{From: peer, To: me}, &relaywire.Rejected{From: peer, To: me},
		&relaywire.Disconnect{From: peer, To: me}, &relaywire.Error{AllocationID: me, Code: relaywire.CodeClientMismatch},
		&relaywire.Error{AllocationID: me, Code: relaywire.CodeNotFound}, &relaywire.Error{AllocationID: me, Code: 9},
		&relaywire.PeerEvent{Event: relaywire.PeerConnected, Peer: peer}, &relaywire.PeerEvent{Event: relaywire.PeerDisconnected, Peer: peer},
		&relaywire.PeerEvent{Event: relaywire.PeerSubscribed, Peer: me}, &relaywire.BindReceived{}, &relaywire.Ping{From: me},
	} {
		b, err := m.AppendTo(nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, host := range []bool{true, false} {
			c := fuzzConn(host)
			var rm relaywire.Relay
			for range 3 { // repeated, as retransmissions and re-subscriptions are
				c.handle(b, &rm)
			}
			if len(c.peers) > c.cfg.MaxPeers || len(c.in) > c.cfg.QueueLen {
				t.Fatalf("peers %d, queue %d", len(c.peers), len(c.in))
			}
			if len(c.in) > 0 {
				var m relaywire.Relay
				if m.Unmarshal(b) != nil || m.To != me || len(m.Data) > c.cfg.MaxPayload {
					t.Fatalf("% x queued", b)
				}
			}
		}
	})
}
