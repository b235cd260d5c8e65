// Package roomwire encodes and decodes im.game.v1, the binary protocol that
// player clients speak to a Switchboard game node over WebSocket (and, inside
// the sealed datagrams of the UDP channel, over KCP).
//
// The package owns the byte layout of the 18 messages and of the handshake,
// and nothing else: it opens no sockets, starts no goroutines and keeps no
// state. Frame ordering on the client lives in package frameassembly; the
// room rules live in package rooms.
//
// # Format
//
// Every message starts with a one-byte type followed by its fields in order,
// with no padding:
//
//	u8 u16 u32 u64  unsigned, big-endian
//	i8              two's complement (only WELCOME.snapshot_seat)
//	bool            one byte, 0 or 1; anything else is invalid
//	uvarint         protobuf varint, minimal encoding only
//	bytes, string   uvarint length + bytes (string: valid UTF-8)
//	frames          uvarint count, then per frame: u32 frame number,
//	                u8 input count, per input: u8 seat, u8 length, bytes
//
// The messages, their fields and caps are listed next to their Go types in
// messages.go. The handshake (the first WebSocket message a client sends) is
//
//	u8 kind (1 HELLO, 2 RESUME) | u16 token length | token | HELLO or RESUME
//
// # Decoding
//
// Decoders are strict, as the protocol requires: a field that runs past the
// end, a length over its cap, a bool that is not 0 or 1, a uvarint that is
// not minimal, a string that is not UTF-8 and trailing bytes all fail with a
// [*FieldError] that names the message and the field and matches
// [ErrInvalid]. A message type this version does not know fails with
// [ErrUnknownType], which a node ignores and a client may too. Whatever
// decodes re-encodes to the same bytes.
//
// Decoded bytes and string-free byte fields alias the input buffer: callers
// that keep them past the next read must copy them. Decoding into a reused
// value ([Frame.Unmarshal], [FrameBatch.Unmarshal]) reuses its slices and
// allocates nothing once they have grown.
//
// # Encoding
//
// [Append] and the AppendTo methods append a message to a caller's buffer.
// They validate the caps, so a node never emits a message a strict decoder
// rejects.
//
// The protocol is described for SDK authors in docs/protocol/rooms.md, and
// the shared test vectors are under testdata/roomwire.
package roomwire
