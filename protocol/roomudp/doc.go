// Package roomudp is the codec of the game node's UDP channel
// (docs/protocol/rooms-udp.md): the session key derived from the
// deployment's signing key and a connect ticket's id, the per-attempt
// handshake and session keys, the HANDSHAKE datagram with its padding,
// the HANDSHAKE REPLY payload, the SESSION datagram's channel byte and
// which side may send each channel, and the bodies of the INPUTS
// (numbered inputs, repeated until acknowledged), FRAME (a FRAME behind
// its input acknowledgement), PATH_CHALLENGE and PATH_RESPONSE (8 bytes
// that prove a session's new address, as QUIC's frames of the same names)
// channels.
// Sealing itself is internal/sealed; the im.game.v1 messages and the
// handshake inside are protocol/roomwire.
//
// The package is pure: no sockets, no clock, no goroutines, no state. Its
// parsers never allocate and alias their input; the Append functions
// allocate only when the destination lacks room. The node (node/udp) uses
// it, and it is meant for the Go SDK (client/rooms) too;
// testdata/roomwire/udp.json holds its vectors.
package roomudp
