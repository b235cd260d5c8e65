// Package rooms is the room engine of a Switchboard game node: seats and
// their admission, start modes, lockstep frames at the room's tick rate,
// frame retention and FRAME_REQ, snapshots, CUSTOM routing, the INPUT rate
// limit, reconnect windows and resume, and closing, kicking and draining —
// the rules of the seed's im.game.v1 page and of spec/rooms.md §6.
//
// Beyond them, every seat has a budget of frames it can get through
// FRAME_REQ ([Config.FrameReqWindow]) and token buckets for the CUSTOM it
// sends ([Config.CustomRate]), so that no player can hold a room's lock
// for long or flood the others. A catch-up sends a SNAPSHOT only when the
// retained frames continue it; a seat left with a gap gets the first one
// that does when it arrives.
//
// It knows nothing of sockets, NATS or token formats. A transport (package
// node) verifies the handshake — the connect ticket, or the resume token it
// sealed through [Config.SealResume] — then calls [Room.Join] or
// [Room.Resume] with plain values and a [Peer] that
// queues bytes on its connection, and feeds what it reads to the returned
// [Link]. The control plane's commands arrive as [Room.Admit],
// [Room.Start], [Room.Close], [Room.Kick], [Room.Release] and
// [Engine.Drain]. State changes that the shared records must learn leave
// through [Config.Observer].
//
// # Messages
//
// A room encodes each outgoing message once into a pooled, reference-counted
// [Msg] and hands the same bytes to every peer. [Config.Header] lets the
// transport put its frame header (a WebSocket server frame header) in front
// of the payload once, so a peer writes [Msg.Wire] as it is. Frames are kept
// encoded in a per-room ring sized for Config.Retention; a FRAME or
// FRAME_BATCH is built by copying their bytes. In steady state a tick
// allocates nothing.
//
// # Time and goroutines
//
// Every rule reads time from Config.Now. [Room.Tick] does a room's periodic
// work: it runs its timers and, while a frame room plays, produces one frame.
// [Engine.Run] drives Tick on Config.Workers goroutines, each owning a heap
// of rooms by due time, until its context ends; it is the only place the
// package starts goroutines. A room's ticks fall on one of four phases of its
// period, counted from Run's start (rooms take the phases in turn as they
// open), and rooms due together tick in the order they opened: the node
// wakes a few times a period for many rooms rather than once for each, and
// its UDP transport sends a phase's frames in a few batched writes. Tests leave Run out and call Tick with their
// own clock. (Measured with TestSchedulerCost: 2,500 playing rooms at 30 Hz
// cost 0.11 cores with this scheduler against 0.15 with a goroutine and a
// time.Ticker per room, tick work included.)
//
// A Room's methods are safe for concurrent use; one mutex per room orders
// everything, and messages are queued to peers with it held, so every peer
// sees the room's messages in one order. Peers must not block in Send or
// Close, and the Observer must not block either.
package rooms
