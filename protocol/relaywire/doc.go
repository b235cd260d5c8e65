// Package relaywire encodes and decodes the Unity Relay message protocol: the
// datagrams that Unity Transport (and Switchboard's own relay SDKs) exchange
// with a relay server over UDP, DTLS and WebSocket, one message per datagram
// or binary WebSocket message.
//
// The package owns the byte layout of Unity's ten messages and of
// Switchboard's two extensions (PEERS_SUBSCRIBE, PEER_EVENT), the BIND HMAC, and
// the layouts of the allocation id and of the connection data field. It
// opens no sockets, starts no goroutines, keeps no mutable state and reads
// no clock. What a relay does with the messages lives in package relay; the
// sealed format of the connection data blob is not this package's (it only
// pads and unpads the field that carries it).
//
// # Format
//
// Every message is a 4-byte header, DA 72 | version 0 | type, and a body
// whose size the type fixes (RELAY: 38 bytes and the payload; CLOSE: 4 or
// 20 bytes). Sizes, by type:
//
//	 0 BIND             295  client → relay   accept mode, nonce, connection data, HMAC
//	 1 BIND_RECEIVED      4  relay → client
//	 2 PING              22  both ways        from, sequence number
//	 3 CONNECT_REQUEST  276  client → relay   own allocation id, host's connection data
//	 6 ACCEPTED          36  relay → client   from = host, to = requester
//	 8 REJECTED          36  relay → client   from = host, to = requester (our layout)
//	 9 DISCONNECT        36  both ways        from, to
//	10 RELAY         38 + N  both ways        from, to, data length, data
//	11 CLOSE        4 or 20  client → relay   optional own allocation id
//	12 ERROR             21  relay → client   recipient's allocation id, error code
//	128 PEERS_SUBSCRIBE  20  host → relay     own allocation id (Switchboard only)
//	129 PEER_EVENT       21  relay → host     event, peer allocation id (Switchboard only)
//
// Types 4, 5 and 7 are reserved. Types 0x80 and 0x81 lie outside the range
// Unity uses or reserves: a Unity client never sends PEERS_SUBSCRIBE, so a
// relay never sends it PEER_EVENT. Multi-byte integers are little-endian (the
// BIND nonce, the PING sequence number) except the RELAY data length, which
// is big-endian: that is what Unity Transport sends, whatever Unity's
// documentation says about network order. Allocation ids are 16 bytes in
// RFC 4122 order ([AllocationID]). Each message's layout, offsets included,
// is next to its Go type in messages.go; the BIND HMAC is described in
// bind.go.
//
// # Decoding
//
// Decoders are strict. A message shorter or longer than its type's size, a
// RELAY whose data length is not the number of bytes that follow, a BIND
// accept mode other than 0, connection data with non-zero bytes after its
// length byte and a PEER_EVENT event other than 0–2 fail with a
// [*FieldError] that names the type, the field and the problem and matches [ErrInvalid]. A header that is not DA 72 00 fails
// the same way (a bad version also matches [ErrUnsupportedVersion]); a
// well-formed header of a type that is none of the twelve fails with
// [ErrUnknownType]. Decoders never panic; [Peek] and the Unmarshal methods
// allocate nothing, whatever the input (failures return shared
// [*FieldError] values); whatever decodes re-encodes to the same bytes. RELAY's Data aliases the input; the other
// messages copy their fixed-size fields.
//
// Decoders do not check what only a relay can: that a BIND's HMAC is right
// ([Bind.Verify]), that allocations exist, that a message comes from the
// allocation it names.
//
// # Encoding
//
// [Append] and the AppendTo methods append a message to a caller's buffer
// and allocate nothing when it has room. They refuse what a decoder would
// refuse, so a relay never emits a message its peers reject.
// [NewBind] and [NewConnectRequest] build the messages exactly as Unity
// Transport does (length byte 255, zero padding).
//
// The protocol is documented for implementers in docs/protocol/relay.md,
// with what was checked against Unity's client code and what was not; the
// test vectors are under testdata/relaywire.
package relaywire
