package p2p_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/client/p2p"
)

// joinWith is deployment.join with a config of the test's.
func (d *deployment) joinWith(username, network string, cfg p2p.Config) *p2p.Peer {
	d.t.Helper()
	sc := d.login(username)
	cfg.Logger = discard
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, err := p2p.Join(context.Background(), sc, p2p.JoinRequest{Network: network}, &cfg)
		if errors.Is(err, p2p.ErrHubUnavailable) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if err != nil {
			d.t.Fatal(err)
		}
		d.t.Cleanup(func() { _ = p.Close() })
		return p
	}
}

// waitPath reads p's events until one says the path to peer is now want.
func waitPath(t *testing.T, p *p2p.Peer, peer string, want p2p.Path) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-p.Events():
			if !ok {
				t.Fatalf("%s ended: %v", p.ID(), p.Err())
			}
			if ev.Type == p2p.EventPath && ev.Peer == peer {
				if ev.Path != want {
					t.Fatalf("%s: path to %s is %s, want %s", p.ID(), peer, ev.Path, want)
				}
				return
			}
		case <-timeout:
			t.Fatalf("%s: no path event to %s", p.ID(), peer)
		}
	}
}

// recv returns p's next message.
func recv(t *testing.T, p *p2p.Peer) *p2p.Message {
	t.Helper()
	select {
	case m, ok := <-p.Messages():
		if !ok {
			t.Fatalf("%s ended: %v", p.ID(), p.Err())
		}
		return m
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no message", p.ID())
	}
	return nil
}

// punchPair joins two peers on one network and waits for their UDP
// registration.
func punchPair(t *testing.T, cfg p2p.Config) (*p2p.Peer, *p2p.Peer) {
	d := launch(t)
	a := d.joinWith("alice", "punch", cfg)
	b := d.joinWith("bob", "punch", cfg)
	waitPeers(t, a, 1)
	waitPeers(t, b, 1)
	for _, p := range []*p2p.Peer{a, b} {
		select {
		case <-p.Registered():
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no UDP registration", p.ID())
		}
	}
	return a, b
}

// TestPunchUDPAndTCP punches on one machine (the candidates and public
// endpoints are loopback ones): UDP, then TCP; every send takes the
// direct path once it is up, and the messages say which way they came.
func TestPunchUDPAndTCP(t *testing.T) {
	a, b := punchPair(t, p2p.Config{})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if p := a.PathTo(b.ID()); p != p2p.PathHub {
		t.Fatalf("path before the punch: %s", p)
	}
	if err := a.Punch(ctx, b.ID(), p2p.PunchUDP); err != nil {
		t.Fatal(err)
	}
	waitPath(t, a, b.ID(), p2p.PathDirectUDP)
	waitPath(t, b, a.ID(), p2p.PathDirectUDP)
	if err := a.SendUDP(ctx, b.ID(), p2p.Envelope{Header: "h", Payload: []byte("direct")}); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, b); string(m.Payload) != "direct" || m.From != a.ID() || m.Path != p2p.PathDirectUDP {
		t.Fatalf("b got %q from %s over %s", m.Payload, m.From, m.Path)
	}
	if err := b.SendUDP(ctx, a.ID(), p2p.Envelope{Payload: []byte("back")}); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, a); string(m.Payload) != "back" || m.Path != p2p.PathDirectUDP {
		t.Fatalf("a got %q over %s", m.Payload, m.Path)
	}
	// TLS messages still go through the hub on a UDP path.
	if err := a.Send(ctx, b.ID(), p2p.Envelope{Payload: []byte("tls")}); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, b); string(m.Payload) != "tls" || m.Path != p2p.PathHub {
		t.Fatalf("b got %q over %s", m.Payload, m.Path)
	}

	// TCP, asked by the other side: it replaces the UDP path.
	if err := b.Punch(ctx, a.ID(), p2p.PunchTCP); err != nil {
		t.Fatal(err)
	}
	waitPath(t, b, a.ID(), p2p.PathDirectTCP)
	waitPath(t, a, b.ID(), p2p.PathDirectTCP)
	if err := a.Send(ctx, b.ID(), p2p.Envelope{Header: "x", Payload: []byte("over tcp")}); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, b); string(m.Payload) != "over tcp" || m.Header != "x" || m.From != a.ID() || m.Path != p2p.PathDirectTCP {
		t.Fatalf("b got %q from %s over %s", m.Payload, m.From, m.Path)
	}
	done := make(chan error, 1)
	go func() {
		m := recv(t, b)
		done <- m.Respond(ctx, p2p.Envelope{Payload: append([]byte("re:"), m.Payload...)})
	}()
	r, err := a.Request(ctx, b.ID(), p2p.Envelope{Payload: []byte("q")})
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Payload) != "re:q" || r.Path != p2p.PathDirectTCP {
		t.Fatalf("answer %q over %s", r.Payload, r.Path)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := a.SendUDP(ctx, b.ID(), p2p.Envelope{Payload: []byte("udp on tcp")}); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, b); string(m.Payload) != "udp on tcp" || !m.UDP || m.Path != p2p.PathDirectTCP {
		t.Fatalf("b got %q over %s", m.Payload, m.Path)
	}
}

// TestDirectPathDiesFallsBack: when one side goes away, the other's
// keep-alives go unanswered and its path goes back to the hub.
func TestDirectPathDiesFallsBack(t *testing.T) {
	cfg := p2p.Config{KeepAlive: 100 * time.Millisecond, DirectTimeout: 500 * time.Millisecond}
	for _, tr := range []p2p.Transport{p2p.PunchUDP, p2p.PunchTCP} {
		t.Run(tr.String(), func(t *testing.T) {
			a, b := punchPair(t, cfg)
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			if err := a.Punch(ctx, b.ID(), tr); err != nil {
				t.Fatal(err)
			}
			want := p2p.PathDirectUDP
			if tr == p2p.PunchTCP {
				want = p2p.PathDirectTCP
			}
			waitPath(t, a, b.ID(), want)
			waitPath(t, b, a.ID(), want)
			// b drops the path without a word: a's path dies, and a's
			// sends go through the hub again.
			b.BreakDirect(a.ID())
			waitPath(t, a, b.ID(), p2p.PathHub)
			if p := a.PathTo(b.ID()); p != p2p.PathHub {
				t.Fatalf("path after the fallback: %s", p)
			}
			if err := a.SendUDP(ctx, b.ID(), p2p.Envelope{Payload: []byte("via hub")}); err != nil {
				t.Fatal(err)
			}
			if m := recv(t, b); string(m.Payload) != "via hub" || m.Path != p2p.PathHub {
				t.Fatalf("b got %q over %s", m.Payload, m.Path)
			}
		})
	}
}

// TestPunchRefusedAndTimeout: a peer that is not there is refused by the
// hub at once, and a punch to a peer that never answers fails at the
// caller's deadline.
func TestPunchRefusedAndTimeout(t *testing.T) {
	a, b := punchPair(t, p2p.Config{})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := a.Punch(ctx, "nobody~x", p2p.PunchUDP); !errors.Is(err, p2p.ErrUnknownPeer) {
		t.Fatalf("punch to nobody: %v", err)
	}
	// b ignores offers (as a peer without punching would): the punch
	// fails with the caller's timeout, not another.
	b.IgnorePunches()
	short, cancel2 := context.WithTimeout(ctx, 700*time.Millisecond)
	defer cancel2()
	start := time.Now()
	err := a.Punch(short, b.ID(), p2p.PunchUDP)
	if !errors.Is(err, p2p.ErrPunchFailed) {
		t.Fatalf("punch to a silent peer: %v", err)
	}
	if el := time.Since(start); el < 600*time.Millisecond || el > 10*time.Second {
		t.Errorf("failed after %v, want about the caller's 700 ms", el)
	}
	if p := a.PathTo(b.ID()); p != p2p.PathHub {
		t.Fatalf("path after a failed punch: %s", p)
	}
}
