package teststack_test

import (
	"context"
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pion/dtls/v3"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/internal/teststack"
	"github.com/switchboardgg/switchboard/protocol/relaywire"
)

// TestRelayDTLS: the REST API lists the node's DTLS endpoint in Unity's
// shape, and a DTLS client with what the REST API handed out (the 16-byte
// id as identity, the key as PSK) binds its allocation.
func TestRelayDTLS(t *testing.T) {
	s, err := teststack.Start(t.Context(), t.TempDir(), teststack.Config{Relay: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.HTTP.Post(s.API+"/relay/v1/allocate", "application/json", strings.NewReader(`{"maxConnections":2}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out api.RelayResponse[api.RelayAllocationData]
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != 201 {
		t.Fatalf("allocate: %d %v", res.StatusCode, err)
	}
	a := out.Data.Allocation
	var ep *api.RelayServerEndpoint
	for i := range a.ServerEndpoints {
		if a.ServerEndpoints[i].ConnectionType == "dtls" {
			ep = &a.ServerEndpoints[i]
		}
	}
	if ep == nil || ep.Network != "udp" || !ep.Secure || ep.Reliable {
		t.Fatalf("serverEndpoints %+v: want a dtls endpoint, network udp, secure", a.ServerEndpoints)
	}
	addr := net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port))
	if addr != s.RelayDTLS {
		t.Fatalf("dtls endpoint %s, stack's DTLS listener %s", addr, s.RelayDTLS)
	}

	ra, _ := net.ResolveUDPAddr("udp", addr)
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	conn, err := dtls.ClientWithOptions(pc, ra,
		dtls.WithPSK(func([]byte) ([]byte, error) { return a.Key, nil }),
		dtls.WithPSKIdentityHint(a.AllocationIDBytes),
		dtls.WithCipherSuites(dtls.TLS_PSK_WITH_AES_128_GCM_SHA256))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := conn.HandshakeContext(ctx); err != nil {
		t.Fatalf("handshake with the REST API's id and key: %v", err)
	}
	key := relaywire.Key(a.Key)
	bind, err := relaywire.NewBind(0, a.ConnectionData, &key)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := bind.AppendTo(nil)
	if _, err := conn.Write(b); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 1500)
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	if typ, err := relaywire.Peek(buf[:n]); err != nil || typ != relaywire.TypeBindReceived {
		t.Fatalf("got % x (%v), want BIND_RECEIVED", buf[:n], err)
	}
}
