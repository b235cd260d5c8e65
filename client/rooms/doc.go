// Package rooms is the Go SDK for game clients of Switchboard game rooms
// (im.game.v1 over the encrypted UDP channel, or WebSocket): login, the
// HTTP calls C1–C3, and a [Room] connection that delivers lockstep frames
// in order and survives disconnections. Game loops, the `switchboard bench rooms` load generator
// and CLI tools use it.
//
// # Flow
//
//	c, _ := rooms.Login(ctx, apiURL, "alice", authToken, nil) // C0
//	room, _ := c.Connect(ctx, "rank-8812", rooms.JoinOptions{Ticket: t}) // C1, dial, HELLO, WELCOME
//	for f := range room.Frames() { … apply f …; room.SendInput(myInput) }
//	room.Leave(ctx) // LEAVE on the socket, close, C2
//
// Frames and Events must both be drained: when either is full the reader
// waits, and stops reading the socket.
//
// # What it owns
//
// [Client] makes the C1–C3 calls of a login session ([Session]), which a
// [session.Client] of package client/session owns: it refreshes the access
// token before it expires and once more on a 401, and can be rebuilt from
// a saved Session after an app restart ([NewClient], then
// [Client.Current]). [FromSession] shares one login with the other SDKs.
// A Client starts no goroutines.
//
// [Room] owns one seat's connection. It runs three goroutines: a reader
// (decodes messages, orders frames with package frameassembly, sends the
// FRAME_REQ the assembler asks for, fills Frames and Events), a writer (the
// socket's only writer, draining a bounded byte queue of ready frames), and a
// supervisor (PING every Config.Heartbeat, a disconnect after
// Config.SilenceTimeout without a message, reconnection). [Room.Close] and
// [Room.Leave] stop and join all three; the Room closes its sockets.
//
// # Transports
//
// When C1 offers the UDP channel (docs/protocol/rooms-udp.md) and
// Config.Transport allows it, a connection handshakes over UDP, resending
// its HANDSHAKE every 250 ms; with no answer after Config.UDPFallback it
// dials WebSocket with the same ticket. Every reconnection chooses again.
// Over UDP datagrams are sealed with internal/sealed, reliable
// messages ride a KCP conversation of internal/kcploop, and FRAME, CUSTOM
// with reliable=false and PING go as single datagrams; each INPUT goes in
// an INPUTS datagram with the inputs before it that no FRAME has
// acknowledged, and they go again (at most every 20 ms) while the game
// sends none; while the node's datagrams arrive with gaps (loss), each
// INPUTS datagram goes a second time 4 ms later, from a timer of the
// connection's (no goroutine but while it runs). A PATH_CHALLENGE (the
// node checking the address after a NAT rebinding) is answered at once on
// the socket's reader, with its bytes. A [UDPSocket] owns
// the socket, one KCP loop and three goroutines (reader, writer, KCP
// timer) and routes datagrams to its sessions by conversation id; a
// connection opens its own and closes it when it ends, unless
// Config.UDPSocket shares one, which its creator closes. A UDP connection
// has one goroutine of its own, its reader, in place of the WebSocket
// connection's reader and writer (and, after LEAVE, one that waits up to
// a second for KCP to have it acknowledged).
//
// # Reconnection
//
// After a disconnect (a closed socket, a write error, silence, or ERROR 7
// rate_limited) the supervisor reconnects with RESUME and the newest resume
// token, after waits of Config.Backoff (0, 1, 2, 4, 4, … s) until the room's
// reconnect window is over. The node then replays the missed frames, or a
// SNAPSHOT first, which arrives on Frames as a Frame with Restore set. When
// the node rejects the resume (ERROR 11) or the connect ticket (1, 2), the
// supervisor calls C1 again with the same client_session_id, handshakes with
// HELLO and requests the frames up to the new WELCOME's frame. It never
// reconnects after ERROR 3, 4, 5 seat_taken, 6, 8 kicked, 9 room_closed or
// 10 node_draining: the room ends, with EventClosed and [Room.Err].
//
// # Errors
//
// HTTP errors are [*APIError] (package session's) and node errors
// [*NodeError]; both match the sentinels of errors.go with errors.Is
// (ErrRoomFull, ErrKicked, …). Error text says what failed ("connect r1:
// join r1: POST /client/v1/game/rooms/r1/join: http 409 conflict
// (room_full): room is full"), never which Go package.
package rooms
