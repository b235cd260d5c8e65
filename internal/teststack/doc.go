// Package teststack starts a whole deployment in this process for tests
// and examples: a thin layer over [system.Start] with every role, an
// embedded NATS server and every listener on 127.0.0.1 with a free port,
// plus an HTTP client and a [backend.Client] pointed at control. It is
// the same wiring as `switchboard dev`; only the defaults differ.
//
// It owns the deployment's setup and teardown only; what runs in front of
// the node (a fault proxy, say) belongs to the caller, which hands Start
// the node's listener and the URL the node advertises.
//
// The goroutines are system's (one serve loop per listener, the roles'
// own); Close stops everything Start started and joins them. The data
// directory is the caller's to create and remove.
//
// Control runs with its login and join rate limits off (LoginRate and
// JoinRate -1), since tests log many players in from one address.
package teststack
