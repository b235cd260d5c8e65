package p2p

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/internal/impair"
	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// side is one peer's channel layer on a real UDP socket, standing in for
// the datagram layer: each datagram is a direct RELIABLE body (no
// sealing, which the datagram layer adds).
type side struct {
	id     string // this side's peer id
	other  string // the other side's
	conn   *net.UDPConn
	ch     *channels
	remote atomic.Pointer[netip.AddrPort] // learnt from reads when nil
	wg     sync.WaitGroup
}

func newSide(t testing.TB, id, other string, cfg ReliableConfig) *side {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadBuffer(4 << 20)
	_ = conn.SetWriteBuffer(4 << 20)
	s := &side{id: id, other: other, conn: conn}
	var sbuf []byte
	var smu sync.Mutex
	s.ch = newChannels(cfg, slog.New(slog.DiscardHandler), func(to string, body []byte) {
		if to != s.other {
			t.Errorf("%s: segment for %q", s.id, to)
			return
		}
		if len(body) > p2pwire.MaxRoutedRest {
			t.Errorf("%s: RELIABLE body of %d bytes, over %d", s.id, len(body), p2pwire.MaxRoutedRest)
			return
		}
		smu.Lock()
		defer smu.Unlock()
		// A direct routing header (kind, flags 0), then the body.
		sbuf = append(append(sbuf[:0], byte(p2pwire.KindReliable), 0), body...)
		if r := s.remote.Load(); r != nil {
			_, _ = s.conn.WriteToUDPAddrPort(sbuf, *r)
		}
	})
	s.ch.start()
	s.wg.Go(func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			if s.remote.Load() == nil {
				s.remote.Store(&from)
			}
			var m p2pwire.Reliable
			if err := m.Unmarshal(buf[:n]); err != nil {
				t.Errorf("%s: RELIABLE: %v", s.id, err)
				continue
			}
			s.ch.input(s.other, m.Channel, m.Segment)
		}
	})
	t.Cleanup(func() {
		s.ch.close()
		_ = conn.Close()
		s.wg.Wait()
	})
	return s
}

// acked reports whether every message s sent was acknowledged.
func (s *side) acked() bool {
	s.ch.mu.Lock()
	defer s.ch.mu.Unlock()
	for _, c := range s.ch.convs {
		if c.kc.Pending() > 0 {
			return false
		}
	}
	return true
}

// pair is two sides through an impairing proxy: a → proxy → b.
type pair struct {
	a, b  *side
	proxy *impair.Proxy
}

func newPair(t testing.TB, faults impair.Faults, acfg, bcfg ReliableConfig) *pair {
	t.Helper()
	b := newSide(t, "bob~1", "alice~1", bcfg)
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	px, err := impair.New(impair.Config{Target: b.conn.LocalAddr().String(), Up: faults, Down: faults, Seed: 11,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { defer close(served); _ = px.Serve(pc) }()
	t.Cleanup(func() { _ = px.Close(); <-served })
	a := newSide(t, "alice~1", "bob~1", acfg)
	to := pc.LocalAddr().(*net.UDPAddr).AddrPort()
	a.remote.Store(&to)
	return &pair{a: a, b: b, proxy: px}
}

// waitFor polls cond; the deadline only guards against a hang.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// recv reads the next reliable message of s.
func recv(t testing.TB, s *side) *ReliableMessage {
	t.Helper()
	select {
	case m, ok := <-s.ch.out:
		if !ok {
			t.Fatal("out closed")
		}
		return m
	case <-time.After(2 * time.Minute):
		t.Fatal("no reliable message")
	}
	return nil
}

func seqEnv(n uint32, payload []byte) Envelope {
	b := binary.BigEndian.AppendUint32(nil, n)
	return Envelope{Header: "seq", Payload: append(b, payload...)}
}

// TestBulkDoesNotHoldUpOtherChannels sends 2 MB on one channel under 10 %
// loss each way while small numbered messages go on another: they arrive
// in order, and many of them before the bulk transfer completes. The
// small sender keeps up to 4 in flight and sends the next only when one
// arrived, so a channel held up behind the bulk one would deliver at
// most 4 before the transfer ends.
func TestBulkDoesNotHoldUpOtherChannels(t *testing.T) {
	for _, tc := range []struct{ bulk, other Channel }{{Ch1, Realtime}, {Ch1, Ch2}, {Ch2, Ch1}} {
		t.Run(tc.bulk.String()+"+"+tc.other.String(), func(t *testing.T) {
			p := newPair(t, impair.Faults{Loss: 0.10}, ReliableConfig{}, ReliableConfig{})
			const total = 2 << 20
			const chunk = 32 << 10
			data := make([]byte, total)
			for i := range data {
				data[i] = byte(i * 7 / 13)
			}
			ctx := context.Background()
			// The first datagram teaches b where a is.
			if err := p.a.ch.sendReliable(ctx, "bob~1", tc.other, seqEnv(0, nil)); err != nil {
				t.Fatal(err)
			}
			if m := recv(t, p.b); m.Channel != tc.other {
				t.Fatalf("got channel %s, want %s", m.Channel, tc.other)
			}

			credit := make(chan struct{}, 4)
			for range 4 {
				credit <- struct{}{}
			}
			stop := make(chan struct{})
			var sent atomic.Uint32
			var wg sync.WaitGroup
			wg.Go(func() { // the small messages
				for n := uint32(1); ; n++ {
					select {
					case <-credit:
					case <-stop:
						return
					}
					if err := p.a.ch.sendReliable(ctx, "bob~1", tc.other, seqEnv(n, []byte("tick"))); err != nil {
						t.Errorf("small send %d: %v", n, err)
						return
					}
					sent.Store(n)
				}
			})
			bulkErr := make(chan error, 1)
			go func() {
				for off := 0; off < total; off += chunk {
					if err := p.a.ch.sendReliable(ctx, "bob~1", tc.bulk, Envelope{Header: "file", Payload: data[off : off+chunk]}); err != nil {
						bulkErr <- err
						return
					}
				}
				bulkErr <- nil
			}()

			got := 0
			var sum bytes.Buffer
			var next uint32 = 1
			during := 0
			for got < total {
				m := recv(t, p.b)
				switch m.Channel {
				case tc.bulk:
					if m.Header != "file" {
						t.Fatalf("bulk channel: got header %q", m.Header)
					}
					got += len(m.Payload)
					sum.Write(m.Payload)
				case tc.other:
					if n := binary.BigEndian.Uint32(m.Payload); n != next {
						t.Fatalf("%s: got message %d, want %d", tc.other, n, next)
					}
					next++
					during++
					credit <- struct{}{}
				default:
					t.Fatalf("message on %s", m.Channel)
				}
			}
			close(stop)
			wg.Wait()
			if err := <-bulkErr; err != nil {
				t.Fatal(err)
			}
			if sha256.Sum256(sum.Bytes()) != sha256.Sum256(data) {
				t.Fatal("the bulk transfer arrived altered")
			}
			// The rest of the small messages still arrive, in order.
			for last := sent.Load(); next <= last; next++ {
				m := recv(t, p.b)
				if n := binary.BigEndian.Uint32(m.Payload); m.Channel != tc.other || n != next {
					t.Fatalf("after the transfer: got %s %d, want %s %d", m.Channel, n, tc.other, next)
				}
			}
			st := p.proxy.Stats()
			t.Logf("%s messages delivered during the transfer: %d; proxy lost %d up, %d down", tc.other, during, st.Up.Lost, st.Down.Lost)
			if during < 20 {
				t.Errorf("only %d %s messages arrived while %s carried 2 MB: held up behind it", during, tc.other, tc.bulk)
			}
			if st.Up.Lost == 0 || st.Down.Lost == 0 {
				t.Errorf("the proxy lost nothing (%+v): the test did not test loss", st)
			}
		})
	}
}

func TestReliableLimits(t *testing.T) {
	p := newPair(t, impair.Faults{}, ReliableConfig{MaxMessage: 4096, MaxConversations: 2}, ReliableConfig{})
	ctx := context.Background()
	if err := p.a.ch.sendReliable(ctx, "bob~1", Channel(4), Envelope{Payload: []byte("x")}); !errors.Is(err, ErrBadChannel) {
		t.Errorf("channel 4: got %v, want ErrBadChannel", err)
	}
	if err := p.a.ch.sendReliable(ctx, "bob~1", Channel(0), Envelope{Payload: []byte("x")}); !errors.Is(err, ErrBadChannel) {
		t.Errorf("channel 0: got %v, want ErrBadChannel", err)
	}
	// An empty payload with no header encodes to 1 byte: the envelope's
	// flags. 4,096 bytes of envelope pass, 4,097 do not.
	if err := p.a.ch.sendReliable(ctx, "bob~1", Ch1, Envelope{Payload: make([]byte, 4095)}); err != nil {
		t.Errorf("4,096-byte envelope: %v", err)
	}
	if err := p.a.ch.sendReliable(ctx, "bob~1", Ch1, Envelope{Payload: make([]byte, 4096)}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("4,097-byte envelope: got %v, want ErrTooLarge", err)
	}
	if err := p.a.ch.sendReliable(ctx, "bob~1", Ch2, Envelope{Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if err := p.a.ch.sendReliable(ctx, "bob~1", Realtime, Envelope{Payload: []byte("x")}); !errors.Is(err, ErrTooManyConversations) {
		t.Errorf("third conversation of 2: got %v, want ErrTooManyConversations", err)
	}
	if got := (ReliableConfig{MaxMessage: 1 << 30}).resolve().MaxMessage; got != maxReliableMessage {
		t.Errorf("MaxMessage of 1 GiB resolves to %d, want %d", got, maxReliableMessage)
	}
}

// TestSendQueueFull: with the path black-holed, exactly BulkSendQueue
// one-segment messages queue; the next send waits until its ctx ends,
// or until the path heals; then everything arrives in order.
func TestSendQueueFull(t *testing.T) {
	p := newPair(t, impair.Faults{}, ReliableConfig{}, ReliableConfig{})
	ctx := context.Background()
	if err := p.a.ch.sendReliable(ctx, "bob~1", Ch1, seqEnv(0, nil)); err != nil {
		t.Fatal(err)
	}
	recv(t, p.b)
	waitFor(t, "the first message acknowledged", p.a.acked)
	p.proxy.SetBlackout(impair.Up, true)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	one := make([]byte, ReliableMTU-24-1-4-2-3) // flags, seq, header "seq": one segment
	queued := 0
	for {
		err := p.a.ch.sendReliable(cancelled, "bob~1", Ch1, seqEnv(uint32(queued+1), one))
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("full queue: got %v, want context.Canceled", err)
			}
			break
		}
		queued++
		if queued > 10*BulkSendQueue {
			t.Fatal("the send queue never filled")
		}
	}
	if queued != BulkSendQueue {
		t.Errorf("queued %d one-segment messages, want %d", queued, BulkSendQueue)
	}
	blocked := make(chan error, 1)
	go func() { blocked <- p.a.ch.sendReliable(ctx, "bob~1", Ch1, seqEnv(uint32(queued+1), one)) }()
	p.proxy.SetBlackout(impair.Up, false)
	for n := 1; n <= queued+1; n++ {
		m := recv(t, p.b)
		if got := binary.BigEndian.Uint32(m.Payload); got != uint32(n) {
			t.Fatalf("got message %d, want %d", got, n)
		}
	}
	if err := <-blocked; err != nil {
		t.Fatalf("the waiting send: %v", err)
	}
}

// TestIdleReapAndRestart: a closes its conversation as idle while b keeps
// its own; a's next send starts the next incarnation, which b follows,
// and both directions work again without loss.
func TestIdleReapAndRestart(t *testing.T) {
	p := newPair(t, impair.Faults{}, ReliableConfig{IdleTimeout: 200 * time.Millisecond}, ReliableConfig{IdleTimeout: time.Hour})
	ctx := context.Background()
	exchange := func(n uint32) {
		t.Helper()
		if err := p.a.ch.sendReliable(ctx, "bob~1", Ch1, seqEnv(n, nil)); err != nil {
			t.Fatal(err)
		}
		if m := recv(t, p.b); binary.BigEndian.Uint32(m.Payload) != n {
			t.Fatalf("b got %d, want %d", binary.BigEndian.Uint32(m.Payload), n)
		}
		if err := p.b.ch.sendReliable(ctx, "alice~1", Ch1, seqEnv(n+100, nil)); err != nil {
			t.Fatal(err)
		}
		if m := recv(t, p.a); binary.BigEndian.Uint32(m.Payload) != n+100 {
			t.Fatalf("a got %d, want %d", binary.BigEndian.Uint32(m.Payload), n+100)
		}
	}
	exchange(1)
	waitFor(t, "a to reap its conversation", func() bool { return p.a.ch.stats().Conversations == 0 })
	if st := p.a.ch.stats(); st.Reaped != 1 {
		t.Errorf("a: %+v, want 1 reaped", st)
	}
	if st := p.b.ch.stats(); st.Conversations != 1 {
		t.Errorf("b: %+v, want its conversation open", st)
	}
	exchange(2)
	exchange(3)
	if st := p.b.ch.stats(); st.Restarted != 1 || st.Lost != 0 || st.Conversations != 1 {
		t.Errorf("b: %+v, want 1 restarted, 0 lost, 1 open", st)
	}
	// Segments of the old incarnation are dropped.
	before := p.a.ch.stats().Dropped
	p.a.ch.input("bob~1", Ch1, make([]byte, 4))
	old := make([]byte, 24)
	binary.LittleEndian.PutUint32(old, uint32(Ch1)|1<<8)
	p.a.ch.input("bob~1", Ch1, old)
	if got := p.a.ch.stats().Dropped; got != before+2 {
		t.Errorf("dropped %d, want %d: a short segment and one of incarnation 1", got, before+2)
	}
}

// TestPeerLeftDeliversWhatArrived: messages that arrived before the
// sender left are still delivered; the conversations are then closed.
func TestPeerLeftDeliversWhatArrived(t *testing.T) {
	// b's queue holds one message: the rest waits in its conversations.
	p := newPair(t, impair.Faults{}, ReliableConfig{}, ReliableConfig{QueueLen: 1})
	ctx := context.Background()
	for n := uint32(1); n <= 5; n++ {
		if err := p.a.ch.sendReliable(ctx, "bob~1", Ch1, seqEnv(n, nil)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.a.ch.sendReliable(ctx, "bob~1", Realtime, seqEnv(9, nil)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a's messages acknowledged", p.a.acked)
	// b's application has read none of it yet.
	p.b.ch.peerLeft("alice~1")
	if st := p.b.ch.stats(); st.Conversations != 0 || st.Closed != 2 {
		t.Errorf("b: %+v, want 0 open, 2 closed", st)
	}
	var ch1 []uint32
	for range 6 {
		m := recv(t, p.b)
		if m.Channel == Ch1 {
			ch1 = append(ch1, binary.BigEndian.Uint32(m.Payload))
		}
	}
	if len(ch1) != 5 || ch1[0] != 1 || ch1[4] != 5 {
		t.Errorf("Ch1 after the leave: got %v, want 1..5", ch1)
	}
	waitFor(t, "retired conversations closed", func() bool { return p.b.ch.loop.Conversations() == 0 })
}

// TestInputAllocatesNothing: a segment for an open conversation (here an
// acknowledgement) is handled without allocating.
func TestInputAllocatesNothing(t *testing.T) {
	l := newChannels(ReliableConfig{}, slog.New(slog.DiscardHandler), func(string, []byte) {})
	defer l.close()
	if err := l.sendReliable(context.Background(), "bob~1", Ch1, Envelope{Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	ack := make([]byte, 24) // conv, cmd, frg, wnd, ts, sn, una, len
	binary.LittleEndian.PutUint32(ack[0:], uint32(Ch1)|1<<8)
	ack[4] = 82 // IKCP_CMD_ACK
	binary.LittleEndian.PutUint16(ack[6:], 256)
	binary.LittleEndian.PutUint32(ack[12:], 7) // a segment never sent: nothing changes
	if n := testing.AllocsPerRun(1000, func() { l.input("bob~1", Ch1, ack) }); n != 0 {
		t.Errorf("input allocates %v times per segment", n)
	}
	if d := l.stats().Dropped; d != 0 {
		t.Errorf("the acknowledgement was dropped (%d)", d)
	}
}

// TestRestartKeepsUnreadOrder: b's application has not read a's
// messages when a starts a new incarnation (it closed its side as idle):
// b delivers the old incarnation's messages first, then the new ones,
// in order.
func TestRestartKeepsUnreadOrder(t *testing.T) {
	p := newPair(t, impair.Faults{}, ReliableConfig{IdleTimeout: 200 * time.Millisecond}, ReliableConfig{QueueLen: 1, IdleTimeout: time.Hour})
	ctx := context.Background()
	for n := uint32(1); n <= 5; n++ {
		if err := p.a.ch.sendReliable(ctx, "bob~1", Ch1, seqEnv(n, nil)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "a's messages acknowledged", p.a.acked)
	waitFor(t, "a to close its conversation", func() bool { return p.a.ch.stats().Conversations == 0 })
	for n := uint32(6); n <= 8; n++ {
		if err := p.a.ch.sendReliable(ctx, "bob~1", Ch1, seqEnv(n, nil)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "b to follow the new incarnation", func() bool { return p.b.ch.stats().Restarted == 1 })
	for n := uint32(1); n <= 8; n++ {
		if m := recv(t, p.b); binary.BigEndian.Uint32(m.Payload) != n {
			t.Fatalf("got %d, want %d", binary.BigEndian.Uint32(m.Payload), n)
		}
	}
	if st := p.b.ch.stats(); st.Lost != 0 || st.Conversations != 1 {
		t.Errorf("b: %+v, want nothing lost, 1 open", st)
	}
}

// TestReliableDefaults checks the documented defaults and KCP settings
// (docs/protocol/p2p.md §13, docs/sdk/p2p-go.md).
func TestReliableDefaults(t *testing.T) {
	c := ReliableConfig{}.resolve()
	if c.MaxMessage != 64<<10 || c.IdleTimeout != 2*time.Minute || c.QueueLen != 32 || c.MaxConversations != 768 {
		t.Errorf("defaults %+v", c)
	}
	bulk, rt := c.convConfig(Ch1), c.convConfig(Realtime)
	if c.convConfig(Ch2) != bulk {
		t.Errorf("Ch2 %+v differs from Ch1 %+v", c.convConfig(Ch2), bulk)
	}
	if bulk.MTU != 1103 || bulk.SendWindow != 256 || bulk.RecvWindow != 256 || bulk.SendQueue != 512 || bulk.NoDelay || bulk.Interval != 20*time.Millisecond {
		t.Errorf("Ch1 %+v", bulk)
	}
	if rt.MTU != 1103 || rt.SendWindow != 128 || rt.RecvWindow != 128 || rt.SendQueue != 256 || !rt.NoDelay || rt.Interval != 10*time.Millisecond {
		t.Errorf("Realtime %+v", rt)
	}
	if maxReliableMessage != 138112 {
		t.Errorf("the largest message is %d, the docs say 138,112", maxReliableMessage)
	}
}

// TestWaitingSendFailsWhenPeerLeaves: a send waiting for room to a peer
// that leaves fails with ErrUnknownPeer, and no conversation is left.
func TestWaitingSendFailsWhenPeerLeaves(t *testing.T) {
	p := newPair(t, impair.Faults{}, ReliableConfig{}, ReliableConfig{})
	var gone atomic.Bool
	p.a.ch.known = func(string) bool { return !gone.Load() }
	ctx := context.Background()
	p.proxy.SetBlackout(impair.Up, true)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for i := 0; ; i++ {
		err := p.a.ch.sendReliable(cancelled, "bob~1", Ch1, Envelope{Payload: make([]byte, 1000)})
		if errors.Is(err, context.Canceled) {
			break // the queue is full
		}
		if err != nil || i > 10*BulkSendQueue {
			t.Fatalf("filling the queue: %v after %d", err, i)
		}
	}
	waiting := make(chan error, 1)
	go func() { waiting <- p.a.ch.sendReliable(ctx, "bob~1", Ch1, Envelope{Payload: []byte("x")}) }()
	gone.Store(true)
	p.a.ch.peerLeft("bob~1")
	if err := <-waiting; !errors.Is(err, ErrUnknownPeer) {
		t.Fatalf("the waiting send: got %v, want ErrUnknownPeer", err)
	}
	if n := p.a.ch.stats().Conversations; n != 0 {
		t.Errorf("%d conversations open after the peer left", n)
	}
}

// TestRestartRaceResends plays the one race of §13 on purpose: b sends
// on a conversation a quarter of the idle timeout quiet while a, which
// has not heard it (the b→a direction is black-holed), opens the next
// incarnation after half the timeout of silence. b follows a, sends the
// message again on the new incarnation, and a gets it: nothing is lost.
// The idle times are set by hand (the timeout is an hour), not waited
// for.
func TestRestartRaceResends(t *testing.T) {
	cfg := ReliableConfig{IdleTimeout: time.Hour}
	p := newPair(t, impair.Faults{}, cfg, cfg)
	ctx := context.Background()
	if err := p.a.ch.sendReliable(ctx, "bob~1", Ch1, seqEnv(1, nil)); err != nil {
		t.Fatal(err)
	}
	recv(t, p.b)
	if err := p.b.ch.sendReliable(ctx, "alice~1", Ch1, seqEnv(2, nil)); err != nil {
		t.Fatal(err)
	}
	recv(t, p.a)
	waitFor(t, "both acknowledged", func() bool { return p.a.acked() && p.b.acked() })

	quiet := func(s *side, d time.Duration) {
		s.ch.mu.Lock()
		defer s.ch.mu.Unlock()
		s.ch.convs[convKey{peer: s.other, ch: Ch1}].active.Store(time.Now().Add(-d).UnixNano())
	}
	p.proxy.SetBlackout(impair.Down, true) // b → a
	quiet(p.b, 20*time.Minute)             // past a quarter: b's next message is at risk
	if err := p.b.ch.sendReliable(ctx, "alice~1", Ch1, seqEnv(3, nil)); err != nil {
		t.Fatal(err)
	}
	quiet(p.a, 40*time.Minute) // past half: a's next send opens incarnation 2
	if err := p.a.ch.sendReliable(ctx, "bob~1", Ch1, seqEnv(4, nil)); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, p.b); binary.BigEndian.Uint32(m.Payload) != 4 {
		t.Fatalf("b got %d, want 4", binary.BigEndian.Uint32(m.Payload))
	}
	p.proxy.SetBlackout(impair.Down, false)
	if m := recv(t, p.a); binary.BigEndian.Uint32(m.Payload) != 3 {
		t.Fatalf("a got %d, want 3", binary.BigEndian.Uint32(m.Payload))
	}
	if st := p.b.ch.stats(); st.Restarted != 1 || st.Resent != 1 || st.Lost != 0 {
		t.Errorf("b: %+v, want 1 restarted, 1 resent, 0 lost", st)
	}
	waitFor(t, "the copies forgotten", func() bool {
		p.b.ch.mu.Lock()
		c := p.b.ch.convs[convKey{peer: "alice~1", ch: Ch1}]
		p.b.ch.mu.Unlock()
		return c != nil && !c.risky.Load()
	})
}

// TestReceiverDropsOverItsMaxMessage: a message over the receiver's
// MaxMessage (the sender allows more) is dropped and counted; the next
// one arrives.
func TestReceiverDropsOverItsMaxMessage(t *testing.T) {
	p := newPair(t, impair.Faults{}, ReliableConfig{MaxMessage: 8192}, ReliableConfig{MaxMessage: 4096})
	ctx := context.Background()
	if err := p.a.ch.sendReliable(ctx, "bob~1", Ch1, seqEnv(1, make([]byte, 5000))); err != nil {
		t.Fatal(err)
	}
	if err := p.a.ch.sendReliable(ctx, "bob~1", Ch1, seqEnv(2, nil)); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, p.b); binary.BigEndian.Uint32(m.Payload) != 2 {
		t.Fatalf("got %d, want 2", binary.BigEndian.Uint32(m.Payload))
	}
	if d := p.b.ch.stats().Dropped; d != 1 {
		t.Errorf("dropped %d, want 1", d)
	}
}
