// Package node is the Switchboard game node: it serves im.game.v1 over
// WebSocket at GET /game/v1/ws (subprotocol im.game.v1), verifies the
// handshake, feeds the messages of each connection to its room in package
// rooms, executes the commands of the control plane that arrive over NATS
// (admit, start, close, kick, leave, drain) and keeps its entry in the node
// registry alive.
//
// It does not own the room rules (package rooms), the wire format (package
// roomwire) or any HTTP API (package control).
//
// # Connections
//
// A connection must send its handshake within Config.HandshakeTimeout of
// the start of its HTTP request (under Serve, the accept; a connection
// carries one request, keep-alives are off):
// HELLO with a connect ticket (checked in this order: signature → ERROR 1,
// expiry → ERROR 2, already used → ERROR 2, room not on this node or ended
// → ERROR 3, seat → ERROR 4 room_full or 5 seat_taken) or RESUME with a
// resume token (ERROR 11 unless it is the seat's current one); anything
// malformed is ERROR 6. The node answers WELCOME, or ERROR and closes.
// After that every binary message is one im.game.v1 message; text frames
// and messages of unknown types are ignored, three invalid messages in a row
// close with ERROR 6, PING is answered with PONG at once, and a connection
// that sends no message for Config.IdleTimeout is dropped (WebSocket control
// frames do not count). Every frame read, control frames included, uses
// the connection's read budget (Config.ReadRate, Config.ReadBurst); a
// WebSocket ping is answered with a pong within a budget of 10 a second
// (burst 10), and pings beyond it go unanswered.
//
// Each connection has a reader (the HTTP handler's goroutine) and a writer
// goroutine with a bounded queue (Config.SendQueueDepth messages and
// Config.MaxQueueBytes bytes, the batch being written included). The
// rooms put the same pre-framed bytes ([rooms.Msg.Wire]: an unmasked
// WebSocket header and the message, built once per room per tick) in every
// queue; the writer sends each batch with one writev. A connection whose
// queue is full is dropped and counted (slow_consumer); the player may
// resume. The answer to a handshake — WELCOME and, for a resume, the
// catch-up of SNAPSHOT and FRAME_BATCH messages — does not count against
// the bounds: it is bounded by the rooms' retention (Config.Rooms.Retention), and
// counting it would drop every resume whose catch-up is longer than the
// queue, again and again. A final ERROR goes out after the queue, past its
// bound, followed by a close frame.
//
// # Goroutines and lifecycle
//
// New starts nothing. Serve runs, besides the HTTP server: the rooms'
// tick scheduler ([rooms.Engine.Run]), the worker that writes the rooms'
// state changes to the records (store.DB.UpdateRoom), the registry
// heartbeat (store.DB.PutNode every Config.Heartbeat), the purge of
// closed rooms (at start, then every 10 minutes: the rooms closed more
// than store.ClosedRoomRetention ago that it ran or whose node left the
// registry) and the command subscriptions (store.ServeCommands). Before
// it serves commands and registers, it closes the records of the rooms
// its id ran in a previous process (reason node_restarted: their engine
// state is gone); [Server.Start] returns then. The drain command sends ERROR 10
// node_draining to every connection, closes every room and marks the
// registry entry draining; a connection opened after that, until Shutdown
// or Close, gets ERROR 10 at once. Shutdown drains, stops accepting, waits for the connections and the
// record updates, then stops everything; Close stops everything at once.
// Both join every goroutine and remove the registry entry. Serve closes no
// listener it was not given; Shutdown and Close close the given ones.
//
// # Records
//
// The rooms' changes that the shared records must learn (seats online,
// offline and released; rooms playing, ending and closed) are coalesced
// per room: the room's state and each seat's latest change, so what waits
// is bounded by the rooms and their seats, never dropped, however long
// the records cannot be reached. One worker writes each room's changes
// with one compare-and-set update (Config.UpdateTimeout each); after a
// failure it pauses, from 100 ms doubling up to Config.UpdateTimeout, and
// tries again, logging at most every 30 s while updates fail. A seat
// change applies only while the record shows the seat held by the
// change's login session. An admission makes sure the record shows the
// seat held by its session, putting it back (joined) if a release of the
// same session reached the record first: the node may release a seat
// (connect timeout, LEAVE) and be asked to admit the session again before
// the record learnt of the release. A release that an admission of the
// same session follows is not written.
//
// # Metrics
//
// When Config.Registerer is set: switchboard_node_rooms{state},
// switchboard_node_connections, switchboard_node_messages_in_total{type},
// switchboard_node_messages_out_total{type},
// switchboard_node_errors_total{code},
// switchboard_node_disconnects_total{reason},
// switchboard_node_tick_duration_seconds and
// switchboard_node_tick_lateness_seconds.
package node
