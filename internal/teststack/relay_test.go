package teststack_test

import (
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/internal/kcploop"
	"github.com/switchboardgg/switchboard/internal/teststack"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction(kcploop.KCPSchedulerGoroutine)) // kcp-go starts it at init (system imports node/udp)
}

// TestRelay: with Config.Relay the stack runs a relay node, and the relay
// REST API allocates on it without credentials.
func TestRelay(t *testing.T) {
	s, err := teststack.Start(t.Context(), t.TempDir(), teststack.Config{Relay: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.HTTP.Post(s.API+"/relay/v1/allocate", "application/json", strings.NewReader(`{"maxConnections":2,"region":"local"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out api.RelayResponse[api.RelayAllocationData]
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != 201 {
		t.Fatalf("allocate: %d %v", res.StatusCode, err)
	}
	ep := out.Data.Allocation.ServerEndpoints[0]
	if got := net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port)); got != s.RelayUDP || s.RelayWS == "" {
		t.Fatalf("allocation on %s, stack relay %s / %s", got, s.RelayUDP, s.RelayWS)
	}
}
