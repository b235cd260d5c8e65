package e2e_test

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/backbone"
	"github.com/switchboardgg/switchboard/internal/certs"
	"github.com/switchboardgg/switchboard/internal/natstest"
	"github.com/switchboardgg/switchboard/protocol/p2pwire"
	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/system"
	"github.com/switchboardgg/switchboard/tokens"
)

// TestServeHubAsSeparateProcess runs `serve hub` on a NATS server the test
// started, seals tickets under the deployment's signing key as the p2p API
// does, and has twenty peers join over TLS (pinning the fingerprint of the
// ready file), see each other, and broadcast; stopping the hub tells every
// peer shutting_down.
func TestServeHubAsSeparateProcess(t *testing.T) {
	nats, conn := natstest.Start(t, backbone.Config{})
	creds := nats.Embedded.CredentialsFile()
	hub := start(t, "serve", "hub", "--nats-url", nats.URL(), "--nats-creds", creds, "--hub", "127.0.0.1:0",
		"--node-id", "e2e-hub-1", "--data-dir", t.TempDir())
	if hub.ready.Hub == "" || hub.ready.HubID != "e2e-hub-1" || hub.ready.HubSHA256 == "" || hub.ready.API != "" {
		t.Fatalf("ready %+v", hub.ready)
	}
	ctx := testContext(t, 60*time.Second)
	db, err := store.Open(ctx, conn, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := db.GetRoleNode(ctx, store.RoleHub, "e2e-hub-1"); err != nil || n.Addresses["tls"] != hub.ready.Hub {
		t.Fatalf("registry: %+v, %v", n, err)
	}
	key, err := db.SigningKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := system.HubKeyring(key)
	if err != nil {
		t.Fatal(err)
	}

	const n = 20
	peers := make([]*e2ePeer, n)
	for i := range peers {
		now := time.Now()
		user := fmt.Sprintf("p%02d", i)
		ticket, err := keys.Seal(tokens.HubTicket{Username: user, Network: "lobby", PeerID: user + "~" + tokens.NewName(6),
			HubID: "e2e-hub-1", Issued: now, Expires: now.Add(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		peers[i] = dialHub(t, hub.ready.Hub, hub.ready.HubSHA256, ticket)
	}
	// Every peer converges on the other nineteen.
	for i, p := range peers {
		var want []p2pwire.PeerID
		for j, q := range peers {
			if j != i {
				want = append(want, q.id)
			}
		}
		slices.Sort(want)
		for !slices.Equal(p.sorted(), want) {
			p.next(t)
		}
	}
	peers[0].write(t, &p2pwire.Msg{Route: p2pwire.Route{Broadcast: true}, Envelope: p2pwire.Envelope{Header: "hi", Payload: []byte("all")}})
	for _, p := range peers[1:] {
		for {
			m := p.next(t)
			if msg, ok := m.(*p2pwire.Msg); ok {
				if msg.From != peers[0].id || !msg.Broadcast || string(msg.Payload) != "all" {
					t.Fatalf("%s got %+v", p.id, msg)
				}
				break
			}
		}
	}
	hub.stop(10 * time.Second)
	for _, p := range peers {
		for {
			m := p.next(t)
			if e, ok := m.(*p2pwire.Error); ok {
				if e.Code != p2pwire.CodeShuttingDown || !e.Closing {
					t.Fatalf("%s got %s", p.id, e.Code)
				}
				break
			}
		}
	}
}

// e2ePeer is a peer speaking p2pwire, keeping its view of the peer set.
type e2ePeer struct {
	c   *tls.Conn
	br  *bufio.Reader
	id  p2pwire.PeerID
	set map[p2pwire.PeerID]bool
}

func dialHub(t *testing.T, addr, fingerprint, ticket string) *e2ePeer {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{MinVersion: tls.VersionTLS13, InsecureSkipVerify: true, // pinned:
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if certs.Fingerprint(raw[0]) != fingerprint {
				return errors.New("fingerprint mismatch")
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	p := &e2ePeer{c: c, br: bufio.NewReader(c), set: map[p2pwire.PeerID]bool{}}
	p.write(t, &p2pwire.Hello{Ticket: []byte(ticket)})
	w, ok := p.next(t).(*p2pwire.Welcome)
	if !ok {
		t.Fatal("no WELCOME")
	}
	p.id = w.PeerID
	return p
}

func (p *e2ePeer) write(t *testing.T, m p2pwire.Message) {
	t.Helper()
	b, err := p2pwire.AppendMessageFrame(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.c.Write(b); err != nil {
		t.Fatal(err)
	}
}

// next reads a message, applying peer sets and events.
func (p *e2ePeer) next(t *testing.T) p2pwire.Message {
	t.Helper()
	_ = p.c.SetReadDeadline(time.Now().Add(20 * time.Second))
	body, err := p2pwire.ReadFrame(p.br, nil, p2pwire.MaxFrameSize)
	if err != nil {
		t.Fatalf("%s: %v", p.id, err)
	}
	m, err := p2pwire.Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	switch m := m.(type) {
	case *p2pwire.PeerSet:
		clear(p.set)
		for _, id := range m.Peers {
			p.set[id] = true
		}
	case *p2pwire.PeerEvents:
		for _, e := range m.Events {
			p.set[e.Peer] = e.Op == p2pwire.PeerJoined
			if !p.set[e.Peer] {
				delete(p.set, e.Peer)
			}
		}
	}
	return m
}

func (p *e2ePeer) sorted() []p2pwire.PeerID {
	var ids []p2pwire.PeerID
	for id := range p.set {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
