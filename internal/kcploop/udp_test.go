package kcploop_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/internal/impair"
	"github.com/switchboardgg/switchboard/internal/kcploop"
)

// peer is one side of the test: a UDP socket, its own Loop, a read loop
// that routes datagrams to conversations by id, and what each
// conversation received.
type peer struct {
	conn   *net.UDPConn
	loop   *kcploop.Loop
	remote atomic.Pointer[netip.AddrPort] // where to send; learnt from reads when nil
	convs  map[uint32]*kcploop.Conv       // set before the read loop starts

	mu     sync.Mutex
	got    map[uint32][]byte // conv id → bytes received, in order
	paused map[uint32]bool
	wg     sync.WaitGroup
}

func newPeer(t testing.TB, l *kcploop.Loop) *peer {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	// Room for a whole window of bursts on both sides.
	conn.SetReadBuffer(4 << 20)
	conn.SetWriteBuffer(4 << 20)
	return &peer{conn: conn, loop: l, convs: map[uint32]*kcploop.Conv{},
		got: map[uint32][]byte{}, paused: map[uint32]bool{}}
}

func (p *peer) output(_ *kcploop.Conv, b []byte) {
	if to := p.remote.Load(); to != nil {
		p.conn.WriteToUDPAddrPort(b, *to)
	}
}

func (p *peer) open(t testing.TB, id uint32, cfg kcploop.ConvConfig) *kcploop.Conv {
	t.Helper()
	c, err := p.loop.Open(id, cfg, p.output)
	if err != nil {
		t.Fatal(err)
	}
	p.convs[id] = c
	return c
}

func (p *peer) start(t testing.TB, learn bool) {
	p.wg.Go(func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := p.conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			if learn {
				p.remote.Store(&from)
			}
			id, ok := kcploop.ConvID(buf[:n])
			c := p.convs[id]
			if !ok || c == nil {
				continue
			}
			if err := c.Input(buf[:n]); err != nil && !errors.Is(err, kcploop.ErrClosed) {
				t.Errorf("input: %v", err)
			}
			p.drain(c)
		}
	})
	t.Cleanup(func() { p.conn.Close(); p.wg.Wait() })
}

// drain reads every waiting message of c unless c is paused.
func (p *peer) drain(c *kcploop.Conv) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused[c.ID()] {
		return
	}
	buf := make([]byte, c.Config().MaxMessage)
	for {
		n, err := c.Recv(buf)
		if err != nil {
			return
		}
		p.got[c.ID()] = append(p.got[c.ID()], buf[:n]...)
	}
}

func (p *peer) received(id uint32) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.got[id])
}

func (p *peer) setPaused(id uint32, on bool) {
	p.mu.Lock()
	p.paused[id] = on
	p.mu.Unlock()
	if !on {
		p.drain(p.convs[id])
	}
}

// waitFor polls cond until it holds; the deadline only guards against a
// hang, it asserts nothing about speed.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sendAll sends data on c in messages of up to chunk bytes, waiting while
// the send queue is full; it reports each full queue on full.
func sendAll(ctx context.Context, c *kcploop.Conv, data []byte, chunk int, full func()) error {
	for len(data) > 0 {
		n := min(chunk, len(data))
		err := c.Send(data[:n])
		switch {
		case errors.Is(err, kcploop.ErrSendQueueFull):
			full()
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(2 * time.Millisecond):
			}
			continue
		case err != nil:
			return err
		}
		data = data[n:]
	}
	return nil
}

// Two conversations share one pair of sockets through a proxy with 10 %
// loss and reordering both ways. Conversation 1 carries 2 MB to a
// receiver that first stops reading: its sender fills its queue and is
// refused, and meanwhile every message of conversation 2 (no-delay)
// arrives, in order. Then the reader resumes and the 2 MB arrive intact
// and in order.
func TestTwoConversationsUnderLoss(t *testing.T) {
	const size = 2 << 20
	la, lb := runLoop(t), runLoop(t)
	a, b := newPeer(t, la), newPeer(t, lb)
	faults := impair.Faults{Loss: 0.1, Reorder: 0.1, ReorderDelay: 15 * time.Millisecond}
	proxy, err := impair.New(impair.Config{Target: b.conn.LocalAddr().String(), Seed: 11,
		Up: faults, Down: faults, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	front, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- proxy.Serve(front) }()
	defer func() { proxy.Close(); <-served }()
	to := front.LocalAddr().(*net.UDPAddr).AddrPort()
	a.remote.Store(&to)

	bulk := kcploop.ConvConfig{}
	rt := kcploop.ConvConfig{NoDelay: true}
	a1, a2 := a.open(t, 1, bulk), a.open(t, 2, rt)
	b.open(t, 1, bulk)
	b.open(t, 2, rt)
	a.start(t, false)
	b.start(t, true)

	data := make([]byte, size)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	b.setPaused(1, true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var refused atomic.Int64
	sent := make(chan error, 1)
	go func() {
		sent <- sendAll(ctx, a1, data, 16<<10, func() {
			refused.Add(1)
			if p := a1.Pending(); p > a1.Config().SendQueue {
				t.Errorf("%d segments pending, over SendQueue %d", p, a1.Config().SendQueue)
			}
		})
	}()
	waitFor(t, "conversation 1's send queue to fill", func() bool { return refused.Load() > 0 })

	// Conversation 1 is stuck behind a reader that does not read;
	// conversation 2 must not be.
	const n2 = 100
	var want2 []byte
	for i := range n2 {
		msg := []byte{byte(i), byte(i >> 8), 'r', 't'}
		want2 = append(want2, msg...)
		for {
			err := a2.Send(msg)
			if errors.Is(err, kcploop.ErrSendQueueFull) {
				time.Sleep(time.Millisecond)
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	waitFor(t, "conversation 2's messages", func() bool { return b.received(2) >= len(want2) })
	b.mu.Lock()
	got2 := bytes.Clone(b.got[2])
	b.mu.Unlock()
	if !bytes.Equal(got2, want2) {
		t.Fatalf("conversation 2: got %x, want %x", got2, want2)
	}
	if got1 := b.received(1); got1 != 0 {
		t.Fatalf("conversation 1 delivered %d bytes while paused", got1)
	}

	b.setPaused(1, false)
	waitFor(t, "the 2 MB transfer", func() bool { return b.received(1) >= size })
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	got1 := b.got[1]
	b.mu.Unlock()
	if !bytes.Equal(got1, data) {
		t.Fatalf("conversation 1: %d bytes arrived, not the %d sent in order", len(got1), len(data))
	}
	s := proxy.Stats()
	if s.Up.Lost == 0 || s.Down.Lost == 0 || s.Up.Reordered == 0 {
		t.Fatalf("the proxy impaired nothing: %+v", s)
	}
	t.Logf("proxy: %+v; sender refused %d times", s, refused.Load())
}

// BenchmarkTransfer moves 2 MB over loopback UDP on one conversation,
// without impairment: the loop's throughput, wheel and all.
func BenchmarkTransfer(b *testing.B) {
	const size = 2 << 20
	data := make([]byte, size)
	b.SetBytes(size)
	for b.Loop() {
		la, lb := runLoop(b), runLoop(b)
		x, y := newPeer(b, la), newPeer(b, lb)
		to := y.conn.LocalAddr().(*net.UDPAddr).AddrPort()
		x.remote.Store(&to)
		c := x.open(b, 1, kcploop.ConvConfig{})
		y.open(b, 1, kcploop.ConvConfig{})
		x.start(b, false)
		y.start(b, true)
		if err := sendAll(context.Background(), c, data, 16<<10, func() {}); err != nil {
			b.Fatal(err)
		}
		waitFor(b, "the transfer", func() bool { return y.received(1) >= size })
	}
}

// The client's address changes mid-transfer (NAT rebinding through the
// proxy); the server follows the address of the latest datagram and the
// conversation goes on, because KCP state is keyed by conversation, not
// by address.
func TestRebindMidTransfer(t *testing.T) {
	const size = 512 << 10
	a, b := newPeer(t, runLoop(t)), newPeer(t, runLoop(t))
	proxy, err := impair.New(impair.Config{Target: b.conn.LocalAddr().String(), Logger: quiet,
		Up: impair.Faults{Loss: 0.05}, Down: impair.Faults{Loss: 0.05}})
	if err != nil {
		t.Fatal(err)
	}
	front, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- proxy.Serve(front) }()
	defer func() { proxy.Close(); <-served }()
	to := front.LocalAddr().(*net.UDPAddr).AddrPort()
	a.remote.Store(&to)
	c := a.open(t, 9, kcploop.ConvConfig{})
	b.open(t, 9, kcploop.ConvConfig{})
	a.start(t, false)
	b.start(t, true)

	data := bytes.Repeat([]byte("rebind"), size/6)
	half := len(data) / 2
	if err := sendAll(context.Background(), c, data[:half], 8<<10, func() {}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first half", func() bool { return b.received(9) >= half })
	before := *b.remote.Load()
	if err := proxy.Rebind(); err != nil {
		t.Fatal(err)
	}
	if err := sendAll(context.Background(), c, data[half:], 8<<10, func() {}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the second half", func() bool { return b.received(9) >= len(data) })
	if after := *b.remote.Load(); after == before {
		t.Fatalf("the server still sees the client at %v", before)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !bytes.Equal(b.got[9], data) {
		t.Fatalf("got %d bytes, not the %d sent", len(b.got[9]), len(data))
	}
	if s := proxy.Stats(); s.Rebinds != 1 {
		t.Fatalf("stats %+v", s)
	}
}
