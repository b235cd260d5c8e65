package p2p_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/client/p2p"
	"github.com/switchboardgg/switchboard/internal/certs"
	"github.com/switchboardgg/switchboard/internal/kcploop"
	hub "github.com/switchboardgg/switchboard/p2p"
	"github.com/switchboardgg/switchboard/tokens"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction(kcploop.KCPSchedulerGoroutine)) // kcp-go starts it at init (teststack links node/udp)
}

var discard = slog.New(slog.DiscardHandler)

const hubID = "hub-1"

// testHub is a real hub on 127.0.0.1 with a self-signed certificate.
type testHub struct {
	t           testing.TB
	h           *hub.Hub
	addr        string
	fingerprint string
	certFile    string
	keys        *tokens.HubKeyring
}

func startHub(t testing.TB, tweak func(*hub.Config)) *testHub {
	t.Helper()
	certFile, keyFile, _, err := certs.SelfSigned(certs.SelfSignedConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	st, err := certs.Load(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := tokens.NewHubKeyring(tokens.HubKey{ID: 1, Secret: bytes.Repeat([]byte{9}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	cfg := hub.Config{ID: hubID, Keyring: keys, TLS: st.TLSConfig(), Logger: discard}
	if tweak != nil {
		tweak(&cfg)
	}
	h, err := hub.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pc, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(ln.Addr().(*net.TCPAddr).AddrPort()))
	if err != nil {
		_ = ln.Close()
		t.Fatal(err)
	}
	served := make(chan error, 2)
	go func() { served <- h.Serve(ln) }()
	go func() { served <- h.ServeUDP(pc) }()
	t.Cleanup(func() {
		_ = h.Close()
		<-served
		<-served
	})
	return &testHub{t: t, h: h, addr: ln.Addr().String(), fingerprint: st.Fingerprint(), certFile: certFile, keys: keys}
}

// ticket is what the API would answer a join of user to network.
func (th *testHub) ticket(user, network string) *api.P2PJoinResponse {
	th.t.Helper()
	now := time.Now()
	id := user + "~" + tokens.Random(6)
	tk, err := th.keys.Seal(tokens.HubTicket{Username: user, Network: network, PeerID: id, HubID: hubID, Issued: now, Expires: now.Add(time.Minute)})
	if err != nil {
		th.t.Fatal(err)
	}
	return &api.P2PJoinResponse{Network: network, PeerID: id, Ticket: tk,
		Hub: api.P2PHub{NodeID: hubID, Address: th.addr, CertSHA256: th.fingerprint}}
}

func (th *testHub) connect(user, network string) *p2p.Peer {
	th.t.Helper()
	p, err := p2p.Connect(context.Background(), th.ticket(user, network), &p2p.Config{Logger: discard})
	if err != nil {
		th.t.Fatalf("connect %s: %v", user, err)
	}
	th.t.Cleanup(func() { _ = p.Close() })
	return p
}

// nextEvent waits for an event other than errors, or fails.
func nextEvent(t *testing.T, p *p2p.Peer) p2p.Event {
	t.Helper()
	select {
	case ev, ok := <-p.Events():
		if !ok {
			t.Fatalf("%s: events closed: %v", p.ID(), p.Err())
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no event", p.ID())
	}
	return p2p.Event{}
}

func nextMessage(t *testing.T, p *p2p.Peer) *p2p.Message {
	t.Helper()
	select {
	case m, ok := <-p.Messages():
		if !ok {
			t.Fatalf("%s: messages closed: %v", p.ID(), p.Err())
		}
		return m
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no message", p.ID())
	}
	return nil
}

// Two peers: discovery, messages, broadcast, request/response, an
// unknown peer, a timeout, a leave, and calls after Close.
func TestTwoPeers(t *testing.T) {
	th := startHub(t, nil)
	ctx := context.Background()
	alice := th.connect("alice", "lobby")
	if !strings.HasPrefix(alice.ID(), "alice~") || alice.Network() != "lobby" {
		t.Fatalf("alice = %s on %s", alice.ID(), alice.Network())
	}
	bob := th.connect("bob", "lobby")
	if ev := nextEvent(t, alice); ev.Type != p2p.EventPeerJoined || ev.Peer != bob.ID() {
		t.Fatalf("alice's event = %+v", ev)
	}
	if ev := nextEvent(t, bob); ev.Type != p2p.EventPeerJoined || ev.Peer != alice.ID() {
		t.Fatalf("bob's event = %+v", ev)
	}
	if got := bob.Peers(); !slices.Equal(got, []string{alice.ID()}) {
		t.Fatalf("bob's peers = %v", got)
	}

	env := p2p.Envelope{Header: "chat", Pairs: []p2p.Pair{{Key: "z", Value: "1"}, {Key: "a", Value: "2"}}, Payload: []byte("hello")}
	if err := alice.Send(ctx, bob.ID(), env); err != nil {
		t.Fatal(err)
	}
	m := nextMessage(t, bob)
	if m.From != alice.ID() || m.Broadcast || m.IsRequest() || m.Header != "chat" || string(m.Payload) != "hello" ||
		len(m.Pairs) != 2 || m.Pairs[0].Key != "a" {
		t.Fatalf("bob got %+v", m)
	}
	if err := bob.Broadcast(ctx, p2p.Envelope{Payload: []byte("all")}); err != nil {
		t.Fatal(err)
	}
	if m := nextMessage(t, alice); m.From != bob.ID() || !m.Broadcast || string(m.Payload) != "all" {
		t.Fatalf("alice got %+v", m)
	}

	// Request/response: bob answers with the payload upper-cased.
	go func() {
		for m := range bob.Messages() {
			if m.IsRequest() && string(m.Payload) != "ignore" {
				_ = m.Respond(ctx, p2p.Envelope{Payload: bytes.ToUpper(m.Payload)})
			}
		}
	}()
	res, err := alice.Request(ctx, bob.ID(), p2p.Envelope{Payload: []byte("ping")})
	if err != nil || res.From != bob.ID() || string(res.Payload) != "PING" {
		t.Fatalf("request = %+v, %v", res, err)
	}
	_, err = alice.Request(ctx, "nobody~xyz", p2p.Envelope{Payload: []byte("x")})
	var he *p2p.HubError
	if !errors.Is(err, p2p.ErrUnknownPeer) || !errors.As(err, &he) || he.Peer != "nobody~xyz" {
		t.Fatalf("request to an unknown peer = %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = alice.Request(short, bob.ID(), p2p.Envelope{Payload: []byte("ignore")})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("unanswered request = %v", err)
	}
	// A message to an unknown peer comes back as an event.
	if err := alice.Send(ctx, "nobody~xyz", p2p.Envelope{Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, alice); ev.Type != p2p.EventError || !errors.Is(ev.Err, p2p.ErrUnknownPeer) || ev.Peer != "nobody~xyz" {
		t.Fatalf("event = %+v", ev)
	}

	if err := bob.Close(); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, alice); ev.Type != p2p.EventPeerLeft || ev.Peer != bob.ID() {
		t.Fatalf("alice's event after bob's close = %+v", ev)
	}
	if !errors.Is(bob.Err(), p2p.ErrClosed) {
		t.Fatalf("bob.Err = %v", bob.Err())
	}
	if err := bob.Send(ctx, alice.ID(), env); !errors.Is(err, p2p.ErrClosed) {
		t.Fatalf("send after close = %v", err)
	}
	if _, err := bob.Request(ctx, alice.ID(), env); !errors.Is(err, p2p.ErrClosed) {
		t.Fatalf("request after close = %v", err)
	}
	if len(alice.Peers()) != 0 {
		t.Fatalf("alice's peers = %v", alice.Peers())
	}
}

// Networks scope discovery and messages.
func TestNetworksAreSeparate(t *testing.T) {
	th := startHub(t, nil)
	a := th.connect("alice", "one")
	b := th.connect("bob", "two")
	if err := a.Send(context.Background(), b.ID(), p2p.Envelope{Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, a); ev.Type != p2p.EventError || !errors.Is(ev.Err, p2p.ErrUnknownPeer) {
		t.Fatalf("event = %+v", ev)
	}
	if len(a.Peers()) != 0 || len(b.Peers()) != 0 {
		t.Fatalf("peers across networks: %v %v", a.Peers(), b.Peers())
	}
}

// A kick ends the connection with ErrKicked; the others see a leave.
func TestKicked(t *testing.T) {
	th := startHub(t, nil)
	a := th.connect("alice", "n")
	b := th.connect("bob", "n")
	nextEvent(t, a)
	if !th.h.Kick("n", b.ID()) {
		t.Fatal("Kick = false")
	}
	select {
	case <-b.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("bob not closed")
	}
	if !errors.Is(b.Err(), p2p.ErrKicked) {
		t.Fatalf("bob.Err = %v", b.Err())
	}
	for range b.Messages() { // closed by the reader
	}
	if ev := nextEvent(t, a); ev.Type != p2p.EventPeerLeft || ev.Peer != b.ID() {
		t.Fatalf("alice's event = %+v", ev)
	}
}

// The certificate is pinned; a ticket of another hub is refused.
func TestConnectRefused(t *testing.T) {
	th := startHub(t, nil)
	ctx := context.Background()
	jr := th.ticket("alice", "n")
	jr.Hub.CertSHA256 = strings.Repeat("00", 32)
	if p, err := p2p.Connect(ctx, jr, nil); err == nil || !strings.Contains(err.Error(), "fingerprint") {
		if p != nil {
			_ = p.Close()
		}
		t.Fatalf("connect with a wrong fingerprint = %v", err)
	}
	jr = th.ticket("alice", "n")
	jr.Hub.CertSHA256 = ""
	if _, err := p2p.Connect(ctx, jr, nil); err == nil {
		t.Fatal("connect with no fingerprint and no CA succeeded")
	}
	jr = th.ticket("alice", "n")
	jr.Ticket = "hbt1.AAAA"
	if _, err := p2p.Connect(ctx, jr, nil); !errors.Is(err, p2p.ErrUnauthorized) {
		t.Fatalf("connect with a forged ticket = %v", err)
	}
}

// With Config.RootCAs the certificate is verified by its chain and host
// name, and no fingerprint is needed; a pool without the hub's CA fails.
func TestRootCAs(t *testing.T) {
	th := startHub(t, nil)
	pem, err := os.ReadFile(th.certFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("no certificate in the PEM")
	}
	jr := th.ticket("alice", "n")
	jr.Hub.CertSHA256 = ""
	p, err := p2p.Connect(context.Background(), jr, &p2p.Config{RootCAs: pool})
	if err != nil {
		t.Fatalf("connect with the CA: %v", err)
	}
	_ = p.Close()
	if _, err := p2p.Connect(context.Background(), th.ticket("bob", "n"), &p2p.Config{RootCAs: x509.NewCertPool()}); err == nil {
		t.Fatal("connect with an empty pool succeeded")
	}
}

// A full network refuses the next peer with ErrNetworkFull.
func TestNetworkFull(t *testing.T) {
	th := startHub(t, func(c *hub.Config) { c.MaxPeersPerNetwork = 1 })
	th.connect("alice", "n")
	_, err := p2p.Connect(context.Background(), th.ticket("bob", "n"), nil)
	if !errors.Is(err, p2p.ErrNetworkFull) {
		t.Fatalf("second peer = %v", err)
	}
}

// A lost connection is resumed with the same peer id: the others see no
// leave, and messages flow again, both ways.
func TestResume(t *testing.T) {
	th := startHub(t, nil)
	ctx := context.Background()
	a := th.connect("alice", "n")
	b := th.connect("bob", "n")
	nextEvent(t, a)
	nextEvent(t, b)
	id := b.ID()
	b.BreakConnection()
	if ev := nextEvent(t, b); ev.Type != p2p.EventDisconnected || ev.Err == nil {
		t.Fatalf("bob's event = %+v", ev)
	}
	if ev := nextEvent(t, b); ev.Type != p2p.EventResumed {
		t.Fatalf("bob's event = %+v", ev)
	}
	if b.ID() != id || !slices.Equal(b.Peers(), []string{a.ID()}) {
		t.Fatalf("after resume: %s, peers %v", b.ID(), b.Peers())
	}
	if err := a.Send(ctx, id, p2p.Envelope{Payload: []byte("still there?")}); err != nil {
		t.Fatal(err)
	}
	if m := nextMessage(t, b); string(m.Payload) != "still there?" {
		t.Fatalf("bob got %+v", m)
	}
	if err := b.Send(ctx, a.ID(), p2p.Envelope{Payload: []byte("yes")}); err != nil {
		t.Fatal(err)
	}
	if m := nextMessage(t, a); string(m.Payload) != "yes" || m.From != id {
		t.Fatalf("alice got %+v", m)
	}
	select {
	case ev := <-a.Events():
		t.Fatalf("alice saw %+v during bob's resume", ev)
	default:
	}
}

// Without a resume window, a lost connection ends the peer, and the
// others see it leave.
func TestNoResume(t *testing.T) {
	th := startHub(t, func(c *hub.Config) { c.ResumeWindow = -1 })
	a := th.connect("alice", "n")
	b := th.connect("bob", "n")
	nextEvent(t, a)
	b.BreakConnection()
	<-b.Done()
	if b.Err() == nil || errors.Is(b.Err(), p2p.ErrClosed) {
		t.Fatalf("bob.Err = %v", b.Err())
	}
	if ev := nextEvent(t, a); ev.Type != p2p.EventPeerLeft || ev.Peer != b.ID() {
		t.Fatalf("alice's event = %+v", ev)
	}
}
