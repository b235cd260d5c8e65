package relay_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/client/relay"
	"github.com/switchboardgg/switchboard/client/session"
	"github.com/switchboardgg/switchboard/protocol/relaywire"
)

var serverSentinels = []error{
	relay.ErrInvalidProtocolVersion, relay.ErrTimedOut, relay.ErrUnauthorized, relay.ErrClientMismatch,
	relay.ErrAllocationIDNotFound, relay.ErrNotConnected, relay.ErrSelfConnect, relay.ErrUnknownCode,
}

// TestServerErrorSentinels: every ERROR code matches its sentinel and no
// other; codes 1 and 4 are fatal.
func TestServerErrorSentinels(t *testing.T) {
	for code := 0; code <= 8; code++ {
		e := &relay.ServerError{Code: relaywire.ErrorCode(code)}
		want := serverSentinels[min(code, 7)]
		for _, s := range serverSentinels {
			if got := errors.Is(e, s); got != (s == want) {
				t.Errorf("code %d is %v: %v, want %v", code, s, got, s == want)
			}
		}
		if e.Fatal() != (code == 1 || code == 4) {
			t.Errorf("code %d fatal: %v", code, e.Fatal())
		}
	}
}

var problemSentinels = map[int]error{
	api.RelayCodeInvalidRequest: relay.ErrInvalidRequest, api.RelayCodeRegionNotFound: relay.ErrRegionNotFound,
	api.RelayCodeAllocationNotFound: relay.ErrAllocationNotFound, api.RelayCodeJoinCodeNotFound: relay.ErrJoinCodeNotFound,
	api.RelayCodeNoSuitableRelay: relay.ErrNoSuitableRelay, api.RelayCodeInvalidArgument: relay.ErrInvalidArgument,
	api.RelayCodeUnauthorized: relay.ErrUnauthenticated, api.RelayCodeForbidden: relay.ErrForbidden,
	api.RelayCodeEntityNotFound: relay.ErrEntityNotFound, api.RelayCodeMethodNotAllowed: relay.ErrMethodNotAllowed,
	api.RelayCodeRateLimited: relay.ErrRateLimited, api.RelayCodeQuotaExceeded: relay.ErrQuotaExceeded,
	api.RelayCodeInternal: relay.ErrInternal, api.RelayCodeServiceUnavailable: relay.ErrServiceUnavailable,
	api.RelayCodeJoinCodeTaken: relay.ErrJoinCodeTaken, api.RelayCodeJoinCodeMigrating: relay.ErrJoinCodeMigrating,
	api.RelayCodeJoinCodeNotHeld: relay.ErrJoinCodeNotHeld,
}

// TestProblemSentinels: a problem-JSON answer of every relay API code
// matches that code's sentinel and no other.
func TestProblemSentinels(t *testing.T) {
	for code, want := range problemSentinels {
		body := fmt.Appendf(nil, `{"status": 400, "title": "x", "detail": "what happened", "type": "t", "code": %d}`, code)
		e := session.ParseAPIError(400, body)
		if e.ProblemCode != code || e.Message != "what happened" {
			t.Errorf("code %d parsed as %+v", code, e)
		}
		for c, s := range problemSentinels {
			if got := errors.Is(e, s); got != (c == code) {
				t.Errorf("code %d is %v: %v", code, s, got)
			}
		}
		if !errors.Is(e, want) {
			t.Errorf("code %d does not match %v", code, want)
		}
		if name := relay.ProblemName(code); "relay: "+name != want.Error() {
			t.Errorf("ProblemName(%d) = %q, want the sentinel's %q", code, name, want)
		}
	}
}

func TestProblemNameUnknown(t *testing.T) {
	if got := relay.ProblemName(15999); got != "error 15999" {
		t.Fatalf("ProblemName(15999) = %q", got)
	}
}

// TestErrorPaths: each failure a caller meets, against a real relay
// node and control plane, gives its typed error.
func TestErrorPaths(t *testing.T) {
	s := startStack(t)
	ctx := ctxT(t)
	alice := s.client(t, "alice", nil)
	bob := s.client(t, "bob", nil)
	wsBob := s.client(t, "bob", &relay.Config{Transport: relay.TransportWebSocket})
	newHost := func(t *testing.T, max int) *relay.Conn {
		t.Helper()
		h, err := alice.Host(ctx, relay.AllocateRequest{MaxConnections: max})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		return h
	}
	tests := []struct {
		name string
		run  func(t *testing.T) error
		want []error
	}{
		{"join an unknown code", func(t *testing.T) error {
			_, err := bob.Join(ctx, "BBBBBB")
			return err
		}, []error{relay.ErrJoinCodeNotFound, session.ErrNotFound}},
		{"allocate in an unknown region", func(t *testing.T) error {
			_, err := alice.Allocate(ctx, relay.AllocateRequest{MaxConnections: 1, Region: "nowhere"})
			return err
		}, []error{relay.ErrRegionNotFound}},
		{"allocate zero connections", func(t *testing.T) error {
			_, err := alice.Allocate(ctx, relay.AllocateRequest{MaxConnections: 0, Region: "local"})
			return err
		}, []error{relay.ErrInvalidRequest}},
		{"join code of another's allocation", func(t *testing.T) error {
			a, err := alice.Allocate(ctx, relay.AllocateRequest{MaxConnections: 1})
			if err != nil {
				t.Fatal(err)
			}
			_, err = bob.CreateJoinCode(ctx, a)
			return err
		}, []error{relay.ErrAllocationNotFound}},
		{"invalid access token", func(t *testing.T) error {
			sc, err := session.New(s.API, session.Session{AccessToken: "at1.bogus"}, &session.Config{HTTPClient: s.hc, Logger: discard})
			if err != nil {
				t.Fatal(err)
			}
			_, err = relay.New(sc, nil).Regions(ctx)
			return err
		}, []error{relay.ErrUnauthenticated, session.ErrUnauthenticated}},
		{"no such endpoint", func(t *testing.T) error {
			sc, err := session.New(s.API, session.Session{AccessToken: "x"}, &session.Config{HTTPClient: s.hc, Logger: discard})
			if err != nil {
				t.Fatal(err)
			}
			_, err = sc.Do(ctx, http.MethodGet, "/relay/v1/nope", nil, nil)
			return err
		}, []error{relay.ErrEntityNotFound}},
		{"host full", func(t *testing.T) error {
			h := newHost(t, 1)
			p, err := bob.Join(ctx, h.JoinCode())
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			_, err = wsBob.Join(ctx, h.JoinCode())
			return err
		}, []error{relay.ErrRejected}},
		{"connect to oneself", func(t *testing.T) error {
			a, err := alice.Allocate(ctx, relay.AllocateRequest{MaxConnections: 1})
			if err != nil {
				t.Fatal(err)
			}
			a.HostConnectionData = a.ConnectionData
			_, err = alice.Dial(ctx, a)
			return err
		}, []error{relay.ErrSelfConnect, (*relay.ServerError)(nil)}},
		{"connect to another host", func(t *testing.T) error {
			h1, h2 := newHost(t, 2), newHost(t, 2)
			a, err := bob.JoinAllocation(ctx, h1.JoinCode())
			if err != nil {
				t.Fatal(err)
			}
			other := h2.Allocation()
			a.HostConnectionData = other.ConnectionData
			_, err = bob.Dial(ctx, a)
			return err
		}, []error{relay.ErrUnauthorized}},
		{"bind a released allocation", func(t *testing.T) error {
			h := newHost(t, 1)
			a := h.Allocation()
			h.Close()
			_, err := alice.Dial(ctx, &a)
			return err
		}, []error{relay.ErrAllocationIDNotFound}},
		{"the host leaves", func(t *testing.T) error {
			h := newHost(t, 1)
			p, err := bob.Join(ctx, h.JoinCode())
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			h.Close()
			<-p.Done()
			return p.Err()
		}, []error{relay.ErrHostGone}},
		{"the host disconnects the peer", func(t *testing.T) error {
			h := newHost(t, 1)
			p, err := bob.Join(ctx, h.JoinCode())
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			waitEvent(t, h, relay.EventPeerConnected)
			if err := h.Disconnect(ctx, p.ID()); err != nil {
				t.Fatal(err)
			}
			<-p.Done()
			if len(h.Peers()) != 0 {
				t.Errorf("host's peers after Disconnect: %v", h.Peers())
			}
			return p.Err()
		}, []error{relay.ErrHostGone}},
		{"the join code dies with its host", func(t *testing.T) error {
			h := newHost(t, 1)
			h.Close()
			var err error
			for range 100 { // the relay node reports the release to the store
				if _, err = bob.JoinAllocation(ctx, h.JoinCode()); err != nil {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			return err
		}, []error{relay.ErrJoinCodeNotFound}},
		{"a relay to a stranger", func(t *testing.T) error {
			h := newHost(t, 1)
			stranger := relay.AllocationID{1, 2, 3}
			relay.AddPeer(h, stranger)
			if err := h.Send(ctx, stranger, []byte("x")); err != nil {
				t.Fatal(err)
			}
			return waitEvent(t, h, relay.EventError).Err
		}, []error{relay.ErrNotConnected}},
		{"no relay node answers", func(t *testing.T) error {
			a, err := alice.Allocate(ctx, relay.AllocateRequest{MaxConnections: 1})
			if err != nil {
				t.Fatal(err)
			}
			a.Endpoints = []api.RelayServerEndpoint{deadUDP(t)}
			_, err = s.client(t, "carol", &relay.Config{BindTimeout: 300 * time.Millisecond}).Dial(ctx, a)
			return err
		}, []error{relay.ErrBindTimeout}},
		{"no endpoint of the transport", func(t *testing.T) error {
			a, err := alice.Allocate(ctx, relay.AllocateRequest{MaxConnections: 1})
			if err != nil {
				t.Fatal(err)
			}
			a.Endpoints = a.Endpoints[:1] // udp only
			_, err = wsBob.Dial(ctx, a)
			return err
		}, []error{relay.ErrNoEndpoint}},
		{"send too much", func(t *testing.T) error {
			h := newHost(t, 1)
			return h.Send(ctx, h.ID(), make([]byte, relay.DefaultMaxPayload+1))
		}, []error{relay.ErrTooLarge}},
		{"send to a peer not connected", func(t *testing.T) error {
			return newHost(t, 1).Send(ctx, relay.AllocationID{9}, []byte("x"))
		}, []error{relay.ErrUnknownPeer}},
		{"send after close", func(t *testing.T) error {
			h := newHost(t, 1)
			h.Close()
			if !errors.Is(h.Err(), relay.ErrClosed) {
				t.Fatalf("Err after Close: %v", h.Err())
			}
			return h.Send(ctx, h.ID(), []byte("x"))
		}, []error{relay.ErrClosed}},
		{"recv after close", func(t *testing.T) error {
			h := newHost(t, 1)
			h.Close()
			_, _, err := h.Recv(ctx, make([]byte, 10))
			return err
		}, []error{relay.ErrClosed}},
		{"unknown transport", func(t *testing.T) error {
			_, err := relay.ParseTransport("carrier-pigeon")
			if err == nil {
				return nil
			}
			_, err = s.client(t, "dave", &relay.Config{Transport: "carrier-pigeon"}).Host(ctx, relay.AllocateRequest{MaxConnections: 1})
			return err
		}, []error{relay.ErrUnknownTransport}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run(t)
			if err == nil {
				t.Fatalf("no error, want %v", tc.want)
			}
			for _, w := range tc.want {
				if se, ok := w.(*relay.ServerError); ok && se == nil {
					if !errors.As(err, &se) {
						t.Errorf("got %v, want a *relay.ServerError", err)
					}
					continue
				}
				if !errors.Is(err, w) {
					t.Errorf("got %v, want %v", err, w)
				}
			}
		})
	}
}

// deadUDP returns a UDP endpoint nobody listens on.
func deadUDP(t *testing.T) api.RelayServerEndpoint {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(pc.LocalAddr().String())
	pc.Close()
	p, _ := strconv.Atoi(port)
	return api.RelayServerEndpoint{ConnectionType: "udp", Network: "udp", Host: host, Port: p}
}

// TestTimedOut: an allocation silent past the relay node's idle timeout
// (10 s) is released and told so (ERROR 1); the Conn ends with
// ErrTimedOut and the host sees the peer leave. The host, kept alive by
// its PINGs, lives on.
func TestTimedOut(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the relay's 10 s idle timeout")
	}
	s := startStack(t)
	ctx := ctxT(t)
	host, err := s.client(t, "alice", nil).Host(ctx, relay.AllocateRequest{MaxConnections: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	quiet := &relay.Config{KeepAlive: time.Hour, DeadAfter: time.Hour}
	peer, err := s.client(t, "bob", quiet).Join(ctx, host.JoinCode())
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	waitEvent(t, host, relay.EventPeerConnected)
	// The relay node releases the silent joiner and tells the host.
	if ev := waitEvent(t, host, relay.EventPeerDisconnected); ev.Peer != peer.ID() {
		t.Fatalf("host: %s left", ev.Peer)
	}
	<-peer.Done()
	if err := peer.Err(); !errors.Is(err, relay.ErrTimedOut) {
		t.Fatalf("joiner ended with %v, want ErrTimedOut", err)
	}
	if err := peer.Send(context.Background(), host.ID(), []byte("still there?")); !errors.Is(err, relay.ErrClosed) {
		t.Fatalf("send after the timeout: %v, want ErrClosed", err)
	}
	// The host, as silent but for its keep-alive PINGs, outlived the same
	// 10 s: a new peer joins and talks to it.
	if err := host.Err(); err != nil {
		t.Fatalf("host ended: %v", err)
	}
	again, err := s.client(t, "carol", nil).Join(ctx, host.JoinCode())
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	flows(t, again, host, host.ID())
}
