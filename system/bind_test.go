package system_test

import (
	"net"
	"strings"
	"testing"

	"github.com/switchboardgg/switchboard/backbone"
	"github.com/switchboardgg/switchboard/internal/natstest"
	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/system"
)

// TestBadAPIAddrRegistersNoNode: an API address in use fails Start before
// any role starts, so the game node never registers. It used to be
// registered, then deleted when Start failed.
func TestBadAPIAddrRegistersNoNode(t *testing.T) {
	nats, bb := natstest.Start(t, backbone.Config{})
	if _, err := store.Open(t.Context(), bb, store.Config{Logger: discard}); err != nil {
		t.Fatal(err)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cfg := testConfig(t.TempDir())
	cfg.NATS = system.NATSConfig{URL: nats.URL(), CredentialsFile: nats.Embedded.CredentialsFile()}
	cfg.API.Addr = taken.Addr().String()
	cfg.Node.ID = "node-bind"
	s, err := system.Start(t.Context(), cfg)
	if err == nil {
		s.Close()
		t.Fatal("Start succeeded with the API address in use")
	}
	if !strings.Contains(err.Error(), "api listener") {
		t.Errorf("Start: %v, want the api listener's error", err)
	}
	st, err := bb.JetStream().Stream(t.Context(), "KV_"+store.DefaultPrefix+"_nodes")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.LastSeq != 0 {
		t.Fatalf("the node registry was written %d times; want never", info.State.LastSeq)
	}
}
