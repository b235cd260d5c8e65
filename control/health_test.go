package control

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/switchboardgg/switchboard/backbone"
)

// TestHealthzStoreUnwritable: with the NATS connection up but the store
// refusing writes (a full disk), /healthz answers 503, and 200 again once
// writes are accepted.
func TestHealthzStoreUnwritable(t *testing.T) {
	var unwritable atomic.Bool
	e := newEnv(t, func(c *Config) {
		c.Health = func(context.Context) error {
			if unwritable.Load() {
				return backbone.ErrUnwritable
			}
			return nil
		}
	})
	want(t, e.do("GET", "/healthz", "", nil), http.StatusOK)
	unwritable.Store(true)
	r := e.do("GET", "/healthz", "", nil)
	want(t, r, http.StatusServiceUnavailable, "unavailable")
	unwritable.Store(false)
	want(t, e.do("GET", "/healthz", "", nil), http.StatusOK)
}
