// Package backbone owns the NATS side of switchboard: the embedded
// nats-server used by `switchboard dev`, the client connection every role
// opens, JetStream key-value buckets, typed as [KV] (JSON values and the
// compare-and-set loop, [KV.Update]), and JSON request/reply helpers.
//
// It does not know what the records in the buckets mean (package store
// does) nor what the commands do (packages control and node do).
//
// # Lifecycle and goroutines
//
// [StartEmbedded] starts a nats-server in this process; the server runs its
// own goroutines until [Embedded.Shutdown], which waits for them. [Connect]
// opens a client connection that reconnects forever with a capped
// exponential backoff; nats.go runs the reader, flusher and callback
// goroutines until [Conn.Close]. [Conn.Handle] runs each request in a
// goroutine of its own, at most [Config.MaxConcurrentHandlers] at a time;
// the stop function it returns unsubscribes and waits for them.
//
// Whoever calls StartEmbedded calls Shutdown; whoever calls Connect calls
// Close. Close the connections before shutting the embedded server down, or
// they will keep trying to reconnect until closed.
package backbone
