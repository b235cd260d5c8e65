// Package admin owns the handler of the admin listener: Prometheus
// /metrics and /healthz, open by Prometheus convention, and the Go
// profiler under /debug/pprof/, which needs the admin key (and later the
// dashboard, behind the same key).
//
// It does not own the listener nor the http.Server: the caller (package
// system, or cmd/switchboard) binds the listener, loopback unless told
// otherwise, and closes it. A profile exposes the process's command line
// (secrets given as flags) and lets a caller burn CPU, hence the key.
//
// # Authentication
//
// Requests to /debug/pprof/ carry "Authorization: Bearer <admin key>". The
// handler keeps only the SHA-256 of the key and compares digests in
// constant time, so neither the key's content nor its length leaks through
// timing. The handler logs nothing, so the key is never logged. Without a key in [Config], pprof answers
// 401 to everyone.
//
// # Goroutines
//
// None of its own: net/http runs each request; a CPU profile or trace
// holds its request for the seconds it was asked for, at most
// [MaxProfileSeconds].
package admin
