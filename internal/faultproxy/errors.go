package faultproxy

import "errors"

// ErrServerClosed is returned by [Proxy.Serve] after [Proxy.Close], and by
// Serve when it is called on a closed proxy.
var ErrServerClosed = errors.New("faultproxy: closed")

// ErrInvalidConfig is returned (wrapped) by [New] and [Proxy.SetFaults] when
// a field is out of range: an empty Target, a negative or non-finite rate,
// a negative duration or a minimum above its maximum.
var ErrInvalidConfig = errors.New("faultproxy: invalid config")
