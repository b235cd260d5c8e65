package bench_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/switchboardgg/switchboard/bench"
)

// TestFailuresByReason: failures add up by stage and cause, whatever the
// bot's name, the most frequent first, within a bounded number of reasons.
func TestFailuresByReason(t *testing.T) {
	var f bench.Failures
	e429 := errors.New("http 429 rate_limited")
	for i := range 5 {
		f.Add(fmt.Errorf("bot: %w", &bench.StageError{Username: fmt.Sprintf("bot-%d", i), Stage: bench.StageLogin, Err: e429}))
	}
	f.Add(&bench.StageError{Username: "bot-9", Stage: bench.StageTicket, Err: errors.New("http 404 not_found")})
	want := []bench.ReasonCount{
		{Reason: "logging in: http 429 rate_limited", Count: 5},
		{Reason: "getting a join ticket: http 404 not_found", Count: 1},
	}
	if got := f.Counts(); !slices.Equal(got, want) {
		t.Errorf("Counts() = %v, want %v", got, want)
	}
	var sb strings.Builder
	bench.WriteCounts(&sb, f.Counts())
	if got := sb.String(); got != "  5 × logging in: http 429 rate_limited\n  1 × getting a join ticket: http 404 not_found\n" {
		t.Errorf("WriteCounts wrote %q", got)
	}
	for i := range 100 {
		f.Add(fmt.Errorf("cause %d", i))
	}
	if got := len(f.Counts()); got > 33 {
		t.Errorf("%d reasons kept, want at most 33", got)
	}
	if got := f.Total(); got != 106 {
		t.Errorf("Total() = %d, want 106", got)
	}
}
