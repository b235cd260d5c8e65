// Package session is the base of every Go SDK of Switchboard: it logs a
// player in (C0), keeps the login session's tokens fresh, makes
// authenticated JSON calls to the HTTP APIs, and turns error answers into
// [*APIError] values that match this package's sentinels with errors.Is.
// Package client/rooms builds its C1–C3 calls on a [Client]; the relay and
// P2P SDKs share the same login. Package client/backend uses [Caller] with
// the server API key.
//
// # What it owns
//
// A [Client] owns one login session ([Session]): it refreshes the access
// token shortly before it expires and once more on a 401, one refresh at a
// time, and can be rebuilt from a saved Session after an app restart
// ([New]). The bodies and codes come from package api.
//
// # Goroutines
//
// None. Every call runs in the caller's goroutine; [Client] and [Caller]
// are safe for concurrent use. The Config's HTTP client belongs to the
// caller.
//
// # Errors
//
// Error text names the call and the answer ("POST /client/v1/sessions:
// http 401 unauthenticated: invalid auth token"), never the Go packages
// between the caller and the server.
package session
