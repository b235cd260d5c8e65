package relay

import "errors"

var (
	// ErrServerClosed is returned by ServePacket and Serve after Close or
	// Shutdown.
	ErrServerClosed = errors.New("relay: server closed")
	// ErrConfig is wrapped by New's errors for a bad Config.
	ErrConfig = errors.New("relay: bad config")
)
