// Package teststack starts a whole deployment in this process for tests
// and examples: an embedded NATS server, control behind an httptest
// server, and one game node on a real 127.0.0.1 listener, plus an HTTP
// client and a [backend.Client] pointed at control.
//
// It owns the deployment's setup and teardown only; what runs in front of
// the node (a fault proxy, say) belongs to the caller, which hands Start
// the node's listener and the URL the node advertises.
//
// Start runs two goroutines of its own: the node's Serve loop and
// httptest's server. Close stops everything Start started, last first,
// and joins those goroutines. The NATS data directory is the caller's to
// create and remove.
//
// Control runs with its login and join rate limits off (LoginRate and
// JoinRate -1), since tests log many players in from one address.
package teststack
