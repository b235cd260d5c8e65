package impair

import "errors"

// ErrClosed is returned by [Proxy.Serve] after [Proxy.Close], and by
// Serve and [Proxy.Rebind] on a closed proxy.
var ErrClosed = errors.New("impair: closed")

// ErrInvalidConfig is returned (wrapped) by [New] and [Proxy.SetFaults]
// when a field is out of range: an empty or unresolvable Target, a
// probability outside [0, 1], a negative duration or limit.
var ErrInvalidConfig = errors.New("impair: invalid config")

// ErrServing is returned by [Proxy.Serve] when the proxy already serves
// another socket.
var ErrServing = errors.New("impair: already serving")
