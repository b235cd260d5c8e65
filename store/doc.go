// Package store owns the shared records of the rooms pillar, kept in
// JetStream key-value buckets: rooms and their seats, login sessions, join
// tickets, the node registry and the deployment's signing key. It also
// defines the commands control sends to a game node over NATS and their
// replies.
//
// Every update is a read–modify–write against the key's revision
// (compare-and-set), retried on conflict, so that concurrent control and
// node processes never lose each other's writes. Seats live inside the room
// record, so one compare-and-set decides a join.
//
// store knows nothing of HTTP or sockets; validating requests is the
// caller's job. It only refuses records that are not storable: invalid
// keys ([ErrInvalidID]) and records over Config.MaxRecordBytes
// ([ErrTooLarge]).
//
// # Buckets
//
//	bucket          key                          value        TTL
//	<prefix>_rooms     room_id                    Room         none
//	<prefix>_sessions  session_id                 Session      Config.SessionTTL (30 days)
//	<prefix>_tickets   hex SHA-256 of the ticket  JoinTicket   Config.TicketTTL (24 h)
//	<prefix>_nodes     node_id                    Node         Config.NodeTTL (15 s)
//	<prefix>_config    "signing_key"              base64 of 32 bytes  none
//
// The TTL of a bucket counts from a record's last write.
//
// # Goroutines
//
// A [DB] starts no goroutines. [ServeCommands] subscribes through
// backbone.Conn.Handle, which runs one goroutine per command; the stop
// function it returns waits for them.
package store
