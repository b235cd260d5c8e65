package relay_test

import (
	"testing"

	"github.com/switchboardgg/switchboard/client/relay"
)

// TestMeasureRegions: the relay node's QoS responder answers the probes;
// the region has a measured RTT, and an allocation without a region goes
// there.
func TestMeasureRegions(t *testing.T) {
	s := startStack(t)
	ctx := ctxT(t)
	rc := s.client(t, "alice", nil)
	servers, err := rc.QoSServers(ctx)
	if err != nil || len(servers) != 1 || servers[0].Region != "local" || len(servers[0].Endpoints) != 1 {
		t.Fatalf("qos servers %+v, %v", servers, err)
	}
	rtts, err := rc.MeasureRegions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rtts) != 1 || rtts[0].Region != "local" || !rtts[0].Reachable() || rtts[0].RTT <= 0 || rtts[0].Answered != 1 || rtts[0].Endpoints != 1 {
		t.Fatalf("measured %+v", rtts)
	}
	regions, err := rc.Regions(ctx)
	if err != nil || len(regions) != 1 || regions[0].ID != "local" {
		t.Fatalf("regions %+v, %v", regions, err)
	}
	a, err := rc.Allocate(ctx, relay.AllocateRequest{MaxConnections: 1})
	if err != nil || a.Region != "local" {
		t.Fatalf("allocation %v, %v", a, err)
	}
}
