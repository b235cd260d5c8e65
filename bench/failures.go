package bench

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
)

// Stages of a bot's life, the Stage of a [StageError].
const (
	StageAuthToken = "minting an auth token"
	StageTicket    = "getting a join ticket"
	StageLogin     = "logging in"
	StageConnect   = "connecting to the room"
	StageReady     = "sending READY"
	StagePlay      = "playing"
)

// StageError is how a bot failed: the stage it was in and the cause, an
// error of the SDK. Its Error names the bot; [Reason] does not, so that the
// failures of many bots add up.
type StageError struct {
	Username string
	Stage    string // one of the Stage constants
	Err      error
}

func (e *StageError) Error() string {
	return fmt.Sprintf("bench: bot %s %s: %v", e.Username, e.Stage, e.Err)
}

// Unwrap returns the cause.
func (e *StageError) Unwrap() error { return e.Err }

// Reason returns err as people read it in a count of failures: the stage
// and the cause of a [StageError] ("logging in: …"), without the bot's name;
// any other error's text.
func Reason(err error) string {
	var se *StageError
	if errors.As(err, &se) {
		return se.Stage + ": " + se.Err.Error()
	}
	return err.Error()
}

// maxReasons bounds the distinct reasons a [Failures] keeps; the rest are
// counted under otherReason.
const maxReasons = 32

const otherReason = "other reasons"

// Failures counts failed bots by [Reason]. The zero value is ready; it is
// safe for concurrent use.
type Failures struct {
	mu sync.Mutex
	n  map[string]int64 // guarded by mu; at most maxReasons+1 keys
}

// Add counts err.
func (f *Failures) Add(err error) {
	r := Reason(err)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == nil {
		f.n = make(map[string]int64)
	}
	if _, ok := f.n[r]; !ok && len(f.n) >= maxReasons {
		r = otherReason
	}
	f.n[r]++
}

// ReasonCount is a reason and how many bots failed for it.
type ReasonCount struct {
	Reason string
	Count  int64
}

// Counts returns the reasons counted, the most frequent first.
func (f *Failures) Counts() []ReasonCount {
	f.mu.Lock()
	out := make([]ReasonCount, 0, len(f.n))
	for r, n := range f.n {
		out = append(out, ReasonCount{r, n})
	}
	f.mu.Unlock()
	slices.SortFunc(out, func(a, b ReasonCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Reason, b.Reason))
	})
	return out
}

// Total returns the number of failures counted.
func (f *Failures) Total() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var n int64
	for _, c := range f.n {
		n += c
	}
	return n
}

// WriteCounts writes one line per reason, "  N × reason", the most frequent
// first, and nothing when there were no failures.
func WriteCounts(w io.Writer, counts []ReasonCount) {
	for _, c := range counts {
		fmt.Fprintf(w, "  %d × %s\n", c.Count, c.Reason)
	}
}
