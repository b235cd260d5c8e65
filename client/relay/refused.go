package relay

import (
	"errors"
	"syscall"
)

// isRefused reports whether err is ECONNREFUSED, which a connected UDP
// socket returns after an ICMP port unreachable.
func isRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }
