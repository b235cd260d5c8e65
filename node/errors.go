package node

import "errors"

// ErrServerClosed is returned by [Server.Serve] after [Server.Shutdown] or
// [Server.Close].
var ErrServerClosed = errors.New("node: server closed")

var errDraining = errors.New("node: draining")
