// Package store owns the shared records of every role, kept in JetStream
// key-value buckets through backbone.KV: rooms and their seats (and the
// transitions of both, in transitions.go, the one place that writes
// them), login sessions and each user's list of them, join tickets, the
// registry of every role's nodes (game, relay, hub) and the deployment's
// signing key. It also defines the commands control sends to a game node
// over NATS and their replies; the admit command carries a room's
// settings, not its record.
//
// Every update is a read–modify–write against the key's revision
// (compare-and-set), retried on conflict, so that concurrent control and
// node processes never lose each other's writes. Seats live inside the room
// record, so one compare-and-set decides a join. The updates of a room that
// one process makes at the same time are combined into one write (see
// [DB.UpdateRoom]): a process is the one writer of a room, and players
// filling a room do not retry against each other.
//
// store knows nothing of HTTP or sockets; validating requests is the
// caller's job. It only refuses records that are not storable: invalid
// keys ([ErrInvalidID]) and records over Config.MaxRecordBytes
// ([ErrTooLarge]).
//
// # Buckets
//
//	bucket             key                          value         TTL
//	<prefix>_rooms     <room_id[0]>.<room_id>       Room          none (closed rooms purged after ClosedRoomRetention)
//	<prefix>_sessions  session_id                   Session       Config.SessionTTL (30 days)
//	<prefix>_users     u<hex SHA-256(username)[:16]> UserSessions Config.SessionTTL
//	<prefix>_tickets   hex SHA-256 of the ticket    JoinTicket    Config.TicketTTL (24 h)
//	<prefix>_nodes     <role>.<node_id>             Node          Config.NodeTTL (15 s)
//	<prefix>_config    "signing_key"                base64 of 32 bytes  none
//	<prefix>_relayallocs  hex allocation id (32)    RelayAllocation  Config.RelayTTL (12 h)
//	<prefix>_relaycodes   join code, upper case     RelayJoinCode    Config.RelayTTL
//	<prefix>_relaykeys    key id (16 hex)           RelayAPIKey      none
//	<prefix>_relayquota   <hex SHA-256(scope)[:16]>.<expiry unix>.<allocation id>  RelayQuotaMark  Config.RelayTTL
//	<prefix>_p2pnets   network name                 P2PNetwork    Config.P2PNetworkTTL (30 days)
//	<prefix>_p2pcodes  hex SHA-256 of a join code   P2PJoinCode   Config.P2PNetworkTTL
//
// The TTL of a bucket counts from a record's last write.
//
// # Goroutines
//
// A [DB] starts no goroutines: a combined room update is written by the
// caller that came first (see combine.go). [ServeCommands] subscribes
// through backbone.Conn.Handle, which runs one goroutine per command; the
// stop function it returns waits for them. Nothing needs closing; the
// caller closes the backbone connection.
package store
