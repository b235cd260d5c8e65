package p2p_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/client/p2p"
	"github.com/switchboardgg/switchboard/internal/impair"
)

// nextReliable returns p's next reliable message.
func nextReliable(t *testing.T, p *p2p.Peer) *p2p.ReliableMessage {
	t.Helper()
	select {
	case m, ok := <-p.Reliable():
		if !ok {
			t.Fatalf("%s: Reliable closed: %v", p.ID(), p.Err())
		}
		return m
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s: no reliable message", p.ID())
	}
	return nil
}

// waitKnows waits until p sees peer in its network.
func waitKnows(t *testing.T, p *p2p.Peer, peer string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Contains(p.Peers(), peer) {
		if time.Now().After(deadline) {
			t.Fatalf("%s does not see %s", p.ID(), peer)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func numbered(n uint32) p2p.Envelope {
	return p2p.Envelope{Header: "n", Payload: binary.BigEndian.AppendUint32(nil, n)}
}

// TestReliableThroughHubUnderLoss: through the hub, with 10 % of the
// datagrams between alice and the hub lost each way, alice sends 2 MB on
// Ch1 while numbered Realtime messages keep going. Bob gets the file
// intact and the Realtime messages in order, many of them while the file
// is still incomplete: alice keeps at most 4 in flight and sends the
// next only when bob got one, so Realtime held up behind Ch1 would
// deliver at most 4 before the file ends.
func TestReliableThroughHubUnderLoss(t *testing.T) {
	th := startHub(t, nil)
	ctx := context.Background()
	px, front := impairHub(t, th)
	alice := th.connectUDP("alice", "lobby", func(c *p2p.Config) { c.HubUDPAddr = front })
	bob := th.connectUDP("bob", "lobby", nil)
	waitKnows(t, alice, bob.ID())
	waitKnows(t, bob, alice.ID())
	for _, d := range []impair.Direction{impair.Up, impair.Down} {
		if err := px.SetFaults(d, impair.Faults{Loss: 0.10}); err != nil {
			t.Fatal(err)
		}
	}

	const total = 2 << 20
	const chunk = 32 << 10
	file := make([]byte, total)
	for i := range file {
		file[i] = byte(i*31 + i>>11)
	}
	credit := make(chan struct{}, 4)
	for range 4 {
		credit <- struct{}{}
	}
	stop := make(chan struct{})
	var sent atomic.Uint32
	var wg sync.WaitGroup
	wg.Go(func() {
		for n := uint32(1); ; n++ {
			select {
			case <-credit:
			case <-stop:
				return
			}
			if err := alice.SendReliable(ctx, bob.ID(), p2p.Realtime, numbered(n)); err != nil {
				t.Errorf("realtime %d: %v", n, err)
				return
			}
			sent.Store(n)
		}
	})
	fileErr := make(chan error, 1)
	go func() {
		for off := 0; off < total; off += chunk {
			if err := alice.SendReliable(ctx, bob.ID(), p2p.Ch1, p2p.Envelope{Header: "file", Payload: file[off : off+chunk]}); err != nil {
				fileErr <- err
				return
			}
		}
		fileErr <- nil
	}()

	var got bytes.Buffer
	next, during := uint32(1), 0
	for got.Len() < total {
		m := nextReliable(t, bob)
		if m.From != alice.ID() {
			t.Fatalf("from %q", m.From)
		}
		switch m.Channel {
		case p2p.Ch1:
			got.Write(m.Payload)
		case p2p.Realtime:
			if n := binary.BigEndian.Uint32(m.Payload); n != next {
				t.Fatalf("realtime: got %d, want %d", n, next)
			}
			next++
			during++
			credit <- struct{}{}
		default:
			t.Fatalf("a message on %s", m.Channel)
		}
	}
	close(stop)
	wg.Wait()
	if err := <-fileErr; err != nil {
		t.Fatal(err)
	}
	if sha256.Sum256(got.Bytes()) != sha256.Sum256(file) {
		t.Fatal("the file arrived altered")
	}
	for last := sent.Load(); next <= last; next++ {
		if m := nextReliable(t, bob); m.Channel != p2p.Realtime || binary.BigEndian.Uint32(m.Payload) != next {
			t.Fatalf("after the file: got %s %x, want realtime %d", m.Channel, m.Payload, next)
		}
	}
	st := px.Stats()
	t.Logf("realtime messages during the 2 MB: %d; lost by the proxy: %d up, %d down; alice %+v; bob %+v",
		during, st.Up.Lost, st.Down.Lost, alice.ReliableStats(), bob.ReliableStats())
	if during < 20 {
		t.Errorf("only %d Realtime messages arrived while Ch1 carried 2 MB", during)
	}
	if st.Up.Lost == 0 || st.Down.Lost == 0 {
		t.Errorf("the proxy lost nothing (%+v): loss was not tested", st)
	}
	if s := alice.ReliableStats(); s.Conversations != 2 || s.Lost != 0 {
		t.Errorf("alice's reliable stats %+v, want 2 conversations, none lost", s)
	}
}

// TestReliableDirectThenHub: reliable messages take the direct path while
// it is up; when it goes down mid-stream they continue through the hub,
// and every message arrives once, in order.
func TestReliableDirectThenHub(t *testing.T) {
	th := startHub(t, nil)
	ctx := context.Background()
	alice := th.connectUDP("alice", "lobby", nil)
	bob := th.connectUDP("bob", "lobby", nil)
	waitKnows(t, alice, bob.ID())
	secret := bytes.Repeat([]byte{5}, 32)
	downA, _, err := alice.InstallDirectUDP(bob.ID(), 77, secret, bob.UDPLocal())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := bob.InstallDirectUDP(alice.ID(), 77, secret, alice.UDPLocal()); err != nil {
		t.Fatal(err)
	}
	hub0, _ := th.h.PeerUDP("lobby", alice.ID())
	const n = 400
	payload := make([]byte, 3000) // 3 segments each
	for i := uint32(1); i <= n/2; i++ {
		if err := alice.SendReliable(ctx, bob.ID(), p2p.Ch2, p2p.Envelope{Header: "n", Payload: binary.BigEndian.AppendUint32(payload[:0:0], i)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := uint32(1); i <= n/2; i++ {
		if m := nextReliable(t, bob); m.Channel != p2p.Ch2 || binary.BigEndian.Uint32(m.Payload) != i {
			t.Fatalf("direct: got %s %x, want ch2 %d", m.Channel, m.Payload[:4], i)
		}
	}
	hub1, _ := th.h.PeerUDP("lobby", alice.ID())
	if d := hub1.DatagramsIn - hub0.DatagramsIn; d > 1 { // at most a REGISTER refresh
		t.Errorf("the hub saw %d datagrams from alice while the direct path was up", d)
	}
	downA()
	for i := uint32(n/2 + 1); i <= n; i++ {
		if err := alice.SendReliable(ctx, bob.ID(), p2p.Ch2, p2p.Envelope{Header: "n", Payload: append(binary.BigEndian.AppendUint32(nil, i), payload...)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := uint32(n/2 + 1); i <= n; i++ {
		if m := nextReliable(t, bob); m.Channel != p2p.Ch2 || binary.BigEndian.Uint32(m.Payload) != i {
			t.Fatalf("through the hub: got %s %x, want ch2 %d", m.Channel, m.Payload[:4], i)
		}
	}
	hub2, _ := th.h.PeerUDP("lobby", alice.ID())
	if hub2.DatagramsIn-hub1.DatagramsIn < n/2 {
		t.Errorf("the hub saw %d datagrams from alice after the direct path went down, want at least %d", hub2.DatagramsIn-hub1.DatagramsIn, n/2)
	}
}

// TestReliableLeaveAndErrors: what alice sent before leaving is
// delivered, bob's conversations with her close; sends to unknown peers,
// without UDP, on no channel and after Close fail clearly.
func TestReliableLeaveAndErrors(t *testing.T) {
	th := startHub(t, nil)
	ctx := context.Background()
	alice := th.connectUDP("alice", "lobby", nil)
	bob := th.connectUDP("bob", "lobby", nil)
	waitKnows(t, alice, bob.ID())
	for i := uint32(1); i <= 10; i++ {
		if err := alice.SendReliable(ctx, bob.ID(), p2p.Ch1, numbered(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := alice.SendReliable(ctx, "nobody~x", p2p.Ch1, numbered(1)); !errors.Is(err, p2p.ErrUnknownPeer) {
		t.Errorf("to an unknown peer: got %v, want ErrUnknownPeer", err)
	}
	if err := alice.SendReliable(ctx, bob.ID(), p2p.Channel(9), numbered(1)); !errors.Is(err, p2p.ErrBadChannel) {
		t.Errorf("channel 9: got %v, want ErrBadChannel", err)
	}
	if err := alice.SendReliable(ctx, bob.ID(), p2p.Ch1, p2p.Envelope{Payload: make([]byte, p2p.DefaultReliableMaxMessage)}); !errors.Is(err, p2p.ErrTooLarge) {
		t.Errorf("over MaxMessage: got %v, want ErrTooLarge", err)
	}
	for i := uint32(1); i <= 10; i++ {
		if m := nextReliable(t, bob); binary.BigEndian.Uint32(m.Payload) != i {
			t.Fatalf("got %x, want %d", m.Payload, i)
		}
	}
	_ = alice.Close()
	if err := alice.SendReliable(ctx, bob.ID(), p2p.Ch1, numbered(11)); !errors.Is(err, p2p.ErrClosed) {
		t.Errorf("after Close: got %v, want ErrClosed", err)
	}
	if _, ok := <-alice.Reliable(); ok {
		t.Error("alice's Reliable still open after Close")
	}
	deadline := time.Now().Add(10 * time.Second)
	for s := bob.ReliableStats(); s.Conversations != 0 || s.Closed != 1; s = bob.ReliableStats() {
		if time.Now().After(deadline) {
			t.Fatalf("bob's conversations with alice after she left: %+v", s)
		}
		time.Sleep(5 * time.Millisecond)
	}

	carol := th.connectUDP("carol", "lobby", nil)
	dave, err := p2p.Connect(ctx, th.ticket("dave", "lobby"), &p2p.Config{Logger: discard, DisableUDP: true})
	if err != nil {
		t.Fatal(err)
	}
	defer dave.Close()
	waitKnows(t, dave, carol.ID())
	if err := dave.SendReliable(ctx, carol.ID(), p2p.Ch1, numbered(1)); !errors.Is(err, p2p.ErrNoUDP) {
		t.Errorf("without UDP: got %v, want ErrNoUDP", err)
	}
	if _, ok := <-dave.Reliable(); ok {
		t.Error("Reliable without UDP delivered something")
	}
}
