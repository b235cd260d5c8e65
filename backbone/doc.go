// Package backbone owns the NATS side of switchboard: the embedded
// nats-server used by `switchboard dev`, the client connection every role
// opens, JetStream key-value buckets, and JSON request/reply helpers.
//
// It does not know what the records in the buckets mean (package store
// does) nor what the commands do (packages control and node do).
//
// # Authentication
//
// The embedded server requires every client to sign a challenge with the
// nkey seed it generates into its data dir ([CredentialsFileName]): NATS
// holds the signing key of every token, so an unauthenticated local
// process must not get in. [Config.CredentialsFile] takes that seed file
// or a .creds file of a NATS deployment with accounts.
//
// # Health
//
// A [Probe] writes a timestamp into a small file-backed bucket every few
// seconds and remembers whether JetStream accepted it, so that health
// checks answer from memory. With the embedded server it also reads the
// server's own JetStream health: nats-server keeps a stream's write error
// (a full disk) until it restarts, so [Probe.Run] then returns
// [ErrRestartRequired] and the process should exit non-zero for its
// supervisor to restart it.
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
// [Probe.Run] runs in the caller's goroutine until its ctx ends.
//
// Whoever calls StartEmbedded calls Shutdown; whoever calls Connect calls
// Close. Close the connections before shutting the embedded server down, or
// they will keep trying to reconnect until closed.
package backbone
