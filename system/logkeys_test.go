package system_test

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
)

// dupHandler records every logger (With) and log record whose
// attributes, with those of the loggers it came from, name one key twice (e.g. component=control …
// component=backbone), which log processors read as one or the other.
type dupHandler struct {
	attrs []string // keys given to With, in order
	mu    *sync.Mutex
	dups  *[]string
}

func (h dupHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h dupHandler) Handle(_ context.Context, r slog.Record) error {
	keys := slices.Clone(h.attrs)
	r.Attrs(func(a slog.Attr) bool { keys = append(keys, a.Key); return true })
	seen := map[string]bool{}
	for _, k := range keys {
		if seen[k] {
			h.mu.Lock()
			*h.dups = append(*h.dups, r.Message+": "+k)
			h.mu.Unlock()
		}
		seen[k] = true
	}
	return nil
}

func (h dupHandler) WithAttrs(as []slog.Attr) slog.Handler {
	h.attrs = slices.Clone(h.attrs)
	for _, a := range as {
		// Checked here too: most loggers log only when something fails.
		if slices.Contains(h.attrs, a.Key) {
			h.mu.Lock()
			*h.dups = append(*h.dups, "With: "+a.Key)
			h.mu.Unlock()
		}
		h.attrs = append(h.attrs, a.Key)
	}
	return h
}

func (h dupHandler) WithGroup(string) slog.Handler { return h }

// TestLogKeysOnce: no log line of a whole system, start to close, names
// an attribute twice: system gives each role's logger "component", and
// the packages below it add "subsystem", not a second "component".
func TestLogKeysOnce(t *testing.T) {
	var mu sync.Mutex
	var dups []string
	cfg := testConfig(t.TempDir())
	cfg.Logger = slog.New(dupHandler{mu: &mu, dups: &dups})
	s := start(t, cfg)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, d := range dups {
		t.Errorf("got a key twice in %q", d)
	}
}
