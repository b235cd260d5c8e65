// Package frameassembly puts the frames a game node sends to a player client
// back in order before the game logic sees them: the client side of
// im.game.v1 frame sync, the seed's "接收帧" rules (see docs/protocol/rooms.md).
// The Go SDK uses it and the browser SDK mirrors it;
// testdata/roomwire/frames.json holds the scenarios every implementation must
// reproduce.
//
// The package owns one pure state machine, [Assembler]. It opens no sockets,
// starts no goroutines, keeps no package-level state, reads no clock and
// sends nothing: it returns the FRAME_REQ to send and the caller sends it.
//
// # Algorithm
//
//	next   the frame the game logic needs next; WELCOME.frame + 1
//	       (so 1 when WELCOME.frame is 0)
//
//	FRAME or FRAME_BATCH ([Assembler.Push]):
//	  1. drop every frame numbered below next; keep the rest in the buffer,
//	     ignoring duplicates
//	  2. while the buffer holds next: deliver it, next++
//	  3. if newest ≥ next + 3 (the two redundant frames of a FRAME cannot fill
//	     the gap): request FRAME_REQ(from=next, to=newest−1), at most once per
//	     value of next
//
//	SNAPSHOT(frame) ([Assembler.Snapshot]):
//	  next = frame + 1; drop buffered frames ≤ frame (and, when next moved
//	  back, those now beyond the bound); deliver as in step 2.
//	  No request: requests are decided when frames arrive.
//
// newest is the highest frame number received at or above next, whether it
// was buffered or dropped by the bound below; so the requests are exactly
// those of the seed's unbounded buffer.
//
// # Bound
//
// The buffer holds at most [MaxBuffered] frames: a frame numbered
// next + MaxBuffered or higher is dropped on arrival. It counts towards
// newest, so the FRAME_REQ of step 3 asks for it again, and it comes back
// once next has moved up. Hostile or buggy input can therefore not grow the
// buffer; its memory is bounded by MaxBuffered frames of at most 255 inputs
// of [roomwire.MaxInputLen] bytes each: about 20 MB for a hostile node, about
// 1.2 MB for a real room of 16 seats.
//
// # Reconnecting
//
// After a RESUME handshake nothing changes: keep the Assembler, send
// RESUME.last_frame = [Assembler.Last], and the node sends the missing frames
// (SNAPSHOT first when they are no longer retained, which goes to
// [Assembler.Snapshot]).
//
// When the resume is rejected and the client joins again with HELLO, the node
// sends nothing by itself; the seed asks the client to request the frames up
// to the new WELCOME.frame. Keep the Assembler (the game state still stands at
// Last) and call [Assembler.CatchUp] with WELCOME.frame: it returns that
// FRAME_REQ and forgets requests made on the old connection.
//
// [Assembler.Reset] starts over as if just created, for a client that has no
// game state to keep (a new join, or an App restart).
//
// # Memory
//
// Frames passed to Push usually alias the transport's read buffer
// (roomwire decoding does not copy). The Assembler copies every frame it
// keeps into memory of its own, reused from one frame to the next, so in
// steady state a FRAME costs no allocation. A delivered frame, its Inputs and
// their Data belong to the Assembler and stay valid until the next call of
// Push, Snapshot or Reset; copy what must live longer.
//
// # Frame numbers
//
// Frame numbers are u32 and count up by one from the room's start frame. A
// room's maximum duration keeps them far from 2³²: at 60 frames per second
// they would overflow after more than two years. The Assembler does not
// handle wraparound; it computes next in 64 bits, so a frame numbered
// 4294967295 is still delivered, and nothing after it.
//
// # Concurrency
//
// An Assembler is not safe for concurrent use; it belongs to the goroutine
// that reads the connection. The deliver callback must not call the
// Assembler's methods.
package frameassembly
