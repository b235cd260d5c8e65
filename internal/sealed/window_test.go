package sealed

import (
	"math/rand/v2"
	"testing"
)

// The bitmap window agrees with a plain model: accept seq iff it was
// never accepted and top-seq < WindowSize.
func TestWindowMatchesModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var w window
	seen := map[uint64]bool{}
	var top uint64
	any := false
	for i := range 200000 {
		var seq uint64
		switch r.IntN(4) {
		case 0: // far ahead
			seq = top + uint64(r.IntN(3000))
		case 1: // around the lower edge
			seq = top - min(top, uint64(WindowSize-3+r.IntN(6)))
		default: // inside the window
			seq = top - min(top, uint64(r.IntN(WindowSize+64)))
		}
		want := !seen[seq] && (!any || seq > top || top-seq < WindowSize)
		if got := w.accept(seq); got != want {
			t.Fatalf("step %d: accept(%d) with top %d: got %v, want %v", i, seq, top, got, want)
		}
		if want {
			seen[seq] = true
			if seq > top || !any {
				top = seq
			}
			any = true
		}
	}
}
