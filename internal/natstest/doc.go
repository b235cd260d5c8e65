// Package natstest starts an embedded NATS server with JetStream and
// connects to it in one call, for the tests of the packages below system
// (backbone users such as store, node and control), which cannot import
// system or internal/teststack without an import cycle.
//
// [Start] registers the server's shutdown and the connection's close with
// t.Cleanup; the server stores in a t.TempDir. It starts no goroutines of
// its own beyond the server's and the connection's.
package natstest
