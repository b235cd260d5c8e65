package system

import (
	"net/http"
	"time"
)

// adminServer returns the admin listener's http.Server around the
// handler of internal/admin (metrics and health open, pprof behind the
// admin key). Profiles stream for up to their ?seconds=, so there is no
// write timeout.
func adminServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    16 << 10,
	}
}
