package system

import (
	"net/http"

	"github.com/switchboardgg/switchboard/control"
)

// adminServer returns the admin listener's http.Server around the
// handler of internal/admin (metrics and health open, pprof behind the
// admin key). Profiles stream for up to their ?seconds=, so there is no
// write timeout.
func adminServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: control.DefaultReadHeaderTimeout,
		ReadTimeout:       control.DefaultReadTimeout,
		IdleTimeout:       control.DefaultIdleTimeout,
		MaxHeaderBytes:    control.DefaultMaxHeaderBytes,
	}
}
