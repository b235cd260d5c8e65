package relay

import (
	"slices"
	"testing"
	"time"
)

// TestRankRegions: the fastest reachable region comes first (Allocate
// takes it), unreachable ones last in the API's order.
func TestRankRegions(t *testing.T) {
	rs := []RegionRTT{
		{Region: "down-1", Endpoints: 1},
		{Region: "far", RTT: 80 * time.Millisecond, Endpoints: 2, Answered: 1},
		{Region: "down-2", Endpoints: 3},
		{Region: "near", RTT: 9 * time.Millisecond, Endpoints: 1, Answered: 1},
		{Region: "mid", RTT: 30 * time.Millisecond, Endpoints: 1, Answered: 1},
	}
	rankRegions(rs)
	var got []string
	for _, r := range rs {
		got = append(got, r.Region)
	}
	if want := []string{"near", "mid", "far", "down-1", "down-2"}; !slices.Equal(got, want) {
		t.Fatalf("ranked %v, want %v", got, want)
	}
}
