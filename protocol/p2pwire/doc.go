// Package p2pwire encodes and decodes the P2P protocol: the frames peers
// and a hub exchange over TLS, and the sealed datagrams they exchange over
// UDP (through the hub's UDP port or directly between punched peers).
//
// The package owns the byte layouts: the TLS framing, the routing header,
// the envelope, the control messages, the sealed datagram's cleartext
// prefix, the datagram kinds, the reliable-channel ids and the jumbo
// fragments. It opens no sockets, starts no goroutines, keeps no mutable
// state, reads no clock and does no cryptography; it closes nothing, and
// [ReadFrame] only reads from the reader it is given. The hub lives in package
// p2p, the SDK in client/p2p; sealing, key derivation and the replay window
// are internal/sealed's; KCP is internal/kcploop's.
//
// # Format
//
// On TLS a frame is a u32 big-endian body length and the body ([ReadFrame],
// [AppendFrame]); a reader checks the length against its maximum before it
// reads the body. Every body, and every opened datagram, starts with the
// routing header, so the hub reads only
//
//	kind u8 | route_flags u8 | to (u8 length + peer id)? | from (u8 length + peer id)?
//
// and forwards the rest of the body untouched, with to replaced by a from it
// stamps itself ([DecodeRouting], [AppendStampedFrameHeader]). MESSAGE,
// REQUEST, RESPONSE and UDP_MESSAGE then carry an [Envelope]:
// optional message id, header string and key/value pairs, each flagged in
// one presence byte, and the payload, opaque, to the end of the body.
// Multi-byte integers are big-endian; lengths are fixed-width (u8 or u16);
// each message's layout and caps are documented on its Go type and in
// docs/protocol/p2p.md, which is written for implementers of other clients.
//
// # Decoding
//
// Decoders are strict: a field that runs past the end, a length or count
// over its cap, a zero where zero is reserved, a flag bit this version does
// not define, a string that is not UTF-8, a peer id byte outside its
// alphabet, list entries out of order and trailing bytes all fail with a
// [*FieldError] that names the kind, the field and the problem and matches
// [ErrInvalid]. An unknown kind fails with [ErrUnknownKind]. Decoders never
// panic; whatever decodes re-encodes to the same bytes (a field is present
// exactly when its Go value is not zero, so there is one encoding).
// [DecodeRouting], [PeekMessageID], [ParseFrameLength] and [ParseSealed]
// allocate nothing, whatever the input, and return byte slices that alias
// it; [ReadFrame] allocates nothing when the caller's buffer holds the
// frame, and never more than the maximum it is given; the message
// decoders allocate their strings and lists, and their payloads, chunks and
// segments alias the input.
//
// # Encoding
//
// [Append], the AppendTo methods and [AppendMessageFrame] append to a
// caller's buffer. They refuse what a decoder would refuse, so neither the
// hub nor the SDK emits a message the other end rejects.
//
// HELLO and WELCOME carry credentials (the hub ticket, the resume token, the
// UDP secret); their String and LogValue methods leave them out.
//
// Test vectors are under testdata/p2pwire.
package p2pwire
