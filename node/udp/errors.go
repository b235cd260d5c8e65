package udp

import "errors"

// ErrConfig is wrapped by [New]'s errors for a bad Config.
var ErrConfig = errors.New("udp: bad config")

// ErrClosed is returned by [Server.Serve] after [Server.Close].
var ErrClosed = errors.New("udp: server closed")
