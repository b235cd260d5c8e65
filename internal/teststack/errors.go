package teststack

import "errors"

// ErrNodeUnavailable is returned by [Stack.CreateRoom] when the node has
// not registered within [Config.NodeWait]; it wraps the last error from
// control (rooms.ErrGameNodeUnavailable).
var ErrNodeUnavailable = errors.New("teststack: game node did not register")
