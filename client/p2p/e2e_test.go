package p2p_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/client/p2p"
	"github.com/switchboardgg/switchboard/client/session"
	"github.com/switchboardgg/switchboard/internal/teststack"
)

// deployment is control, a game node and a hub in this process
// (system.Start through teststack), on a real embedded NATS.
type deployment struct {
	t     *testing.T
	stack *teststack.Stack
	srv   *session.Caller // the server API, with the server key
}

func launch(t *testing.T) *deployment {
	t.Helper()
	st, err := teststack.Start(t.Context(), t.TempDir(), teststack.Config{Hub: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	srv, err := session.NewCaller(st.API, &session.Config{HTTPClient: st.HTTP})
	if err != nil {
		t.Fatal(err)
	}
	return &deployment{t: t, stack: st, srv: srv}
}

// login logs username in with an auth token minted by the backend.
func (d *deployment) login(username string) *session.Client {
	d.t.Helper()
	ctx := context.Background()
	auth, err := d.stack.Backend.CreateAuthToken(ctx, username, 0)
	if err != nil {
		d.t.Fatal(err)
	}
	sc, err := session.Login(ctx, d.stack.API, username, auth, &session.Config{HTTPClient: d.stack.HTTP})
	if err != nil {
		d.t.Fatal(err)
	}
	return sc
}

// join logs username in and joins network, retrying while the hub's
// first registry heartbeat is pending.
func (d *deployment) join(username string, req p2p.JoinRequest) (*p2p.Peer, error) {
	d.t.Helper()
	sc := d.login(username)
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, err := p2p.Join(context.Background(), sc, req, &p2p.Config{Logger: discard})
		if errors.Is(err, p2p.ErrHubUnavailable) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if p != nil {
			d.t.Cleanup(func() { _ = p.Close() })
		}
		return p, err
	}
}

// server calls the server API.
func (d *deployment) server(method, path string, body, out any) error {
	_, err := d.srv.Do(context.Background(), method, path, d.stack.ServerKey, body, out)
	return err
}

// waitPeers waits until p sees want other peers, draining its events.
func waitPeers(t *testing.T, p *p2p.Peer, want int) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for len(p.Peers()) != want {
		select {
		case _, ok := <-p.Events():
			if !ok {
				t.Fatalf("%s ended: %v", p.ID(), p.Err())
			}
		case <-timeout:
			t.Fatalf("%s sees %d peers, want %d", p.ID(), len(p.Peers()), want)
		}
	}
}

// meshRound has every peer broadcast once and answer one request from
// its neighbour, and checks that every peer got every broadcast.
func meshRound(t *testing.T, peers []*p2p.Peer) {
	t.Helper()
	ctx := context.Background()
	n := len(peers)
	var wg sync.WaitGroup
	got := make([]map[string]bool, n)
	errs := make(chan error, 2*n)
	for i, p := range peers {
		got[i] = map[string]bool{}
		wg.Go(func() {
			timeout := time.After(30 * time.Second)
			for len(got[i]) < n-1 {
				select {
				case m, ok := <-p.Messages():
					if !ok {
						errs <- fmt.Errorf("%s ended: %v", p.ID(), p.Err())
						return
					}
					if m.IsRequest() {
						_ = m.Respond(ctx, p2p.Envelope{Payload: append([]byte("re:"), m.Payload...)})
						continue
					}
					if !m.Broadcast || string(m.Payload) != "from "+m.From {
						errs <- fmt.Errorf("%s got %+v", p.ID(), m)
						return
					}
					got[i][m.From] = true
				case <-timeout:
					errs <- fmt.Errorf("%s got %d broadcasts of %d", p.ID(), len(got[i]), n-1)
					return
				}
			}
			// Keep answering requests until the round is over.
			for m := range p.Messages() {
				if m.IsRequest() {
					_ = m.Respond(ctx, p2p.Envelope{Payload: append([]byte("re:"), m.Payload...)})
				}
			}
		})
	}
	for _, p := range peers {
		if err := p.Broadcast(ctx, p2p.Envelope{Header: "hello", Payload: []byte("from " + p.ID())}); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range peers {
		to := peers[(i+1)%n]
		res, err := p.Request(ctx, to.ID(), p2p.Envelope{Payload: []byte(p.ID())})
		if err != nil || res.From != to.ID() || string(res.Payload) != "re:"+p.ID() {
			t.Fatalf("request %s → %s = %+v, %v", p.ID(), to.ID(), res, err)
		}
	}
	for _, p := range peers {
		_ = p.Close() // ends the answering loops
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Two peers and twenty peers on one network, through the API and the
// hub of one deployment: discovery, broadcast to all, request/response.
func TestE2EPeers(t *testing.T) {
	d := launch(t)
	for _, n := range []int{2, 20} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			network := fmt.Sprintf("mesh-%d", n)
			peers := make([]*p2p.Peer, n)
			for i := range peers {
				p, err := d.join(fmt.Sprintf("user%02d", i), p2p.JoinRequest{Network: network})
				if err != nil {
					t.Fatalf("join %d: %v", i, err)
				}
				peers[i] = p
			}
			for _, p := range peers {
				waitPeers(t, p, n-1)
			}
			var list api.P2PPeerList
			if err := d.server("GET", "/p2p/v1/networks/"+network+"/peers", nil, &list); err != nil || len(list.Peers) != n {
				t.Fatalf("server peer list = %+v, %v", list, err)
			}
			meshRound(t, peers)
		})
	}
}

// The server API's rules reach the hub: a join code, a kick, a ban.
func TestE2EServerAPI(t *testing.T) {
	d := launch(t)
	var created api.P2PNetwork
	if err := d.server("POST", "/p2p/v1/networks", &api.P2PCreateNetworkRequest{Network: "club", RequireJoinCode: true}, &created); err != nil {
		t.Fatal(err)
	}
	if _, err := d.join("carol", p2p.JoinRequest{Network: "club"}); !errors.Is(err, p2p.ErrJoinCodeRequired) {
		t.Fatalf("join without the code = %v", err)
	}
	alice, err := d.join("alice", p2p.JoinRequest{JoinCode: created.JoinCode})
	if err != nil {
		t.Fatal(err)
	}
	mallory, err := d.join("mallory", p2p.JoinRequest{Network: "club", JoinCode: created.JoinCode})
	if err != nil {
		t.Fatal(err)
	}
	waitPeers(t, alice, 1)
	if err := d.server("POST", "/p2p/v1/networks/club/peers/"+mallory.ID()+"/kick", nil, nil); err != nil {
		t.Fatal(err)
	}
	<-mallory.Done()
	if !errors.Is(mallory.Err(), p2p.ErrKicked) {
		t.Fatalf("mallory.Err = %v", mallory.Err())
	}
	waitPeers(t, alice, 0)
	mallory, err = d.join("mallory", p2p.JoinRequest{Network: "club", JoinCode: created.JoinCode})
	if err != nil {
		t.Fatal(err)
	}
	waitPeers(t, alice, 1)
	if err := d.server("POST", "/p2p/v1/networks/club/bans", &api.P2PBanRequest{Username: "mallory"}, nil); err != nil {
		t.Fatal(err)
	}
	<-mallory.Done()
	if !errors.Is(mallory.Err(), p2p.ErrKicked) {
		t.Fatalf("banned mallory.Err = %v", mallory.Err())
	}
	if _, err := d.join("mallory", p2p.JoinRequest{Network: "club", JoinCode: created.JoinCode}); !errors.Is(err, p2p.ErrBanned) {
		t.Fatalf("join after the ban = %v", err)
	}
	waitPeers(t, alice, 0)
	var nets api.P2PNetworkList
	if err := d.server(http.MethodGet, "/p2p/v1/networks", nil, &nets); err != nil || len(nets.Networks) != 1 || nets.Networks[0].Bans[0] != "mallory" {
		t.Fatalf("networks = %+v, %v", nets, err)
	}
}

// UDP through a whole deployment: the hub serves UDP on its TLS port's
// number, two peers register and exchange datagrams, and the server API
// shows each peer's UDP counters.
func TestE2EUDP(t *testing.T) {
	d := launch(t)
	ctx := context.Background()
	alice, err := d.join("alice", p2p.JoinRequest{Network: "udp"})
	if err != nil {
		t.Fatal(err)
	}
	bob, err := d.join("bob", p2p.JoinRequest{Network: "udp"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*p2p.Peer{alice, bob} {
		select {
		case <-p.Registered():
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: not registered", p.ID())
		}
	}
	if err := alice.SendUDP(ctx, bob.ID(), p2p.Envelope{Header: "hi", Payload: []byte("over udp")}); err != nil {
		t.Fatal(err)
	}
	for {
		m := nextMessage(t, bob)
		if m.UDP {
			if m.From != alice.ID() || string(m.Payload) != "over udp" {
				t.Fatalf("bob got %+v", m)
			}
			break
		}
	}
	var list api.P2PPeerList
	if err := d.server("GET", "/p2p/v1/networks/udp/peers", nil, &list); err != nil || len(list.Peers) != 2 {
		t.Fatalf("server peer list = %+v, %v", list, err)
	}
	for _, p := range list.Peers {
		u := p.UDP
		if u == nil || u.Endpoint == "" || u.DatagramsIn == 0 || u.DatagramsOut == 0 || u.BytesIn == 0 {
			t.Fatalf("%s: UDP counters %+v", p.PeerID, u)
		}
	}
}
