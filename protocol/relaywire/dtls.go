package relaywire

import "fmt"

// DTLS carrier (docs/protocol/relay.md §16): the relay messages travel one
// per DTLS 1.2 record, authenticated by a pre-shared key. The PSK is the
// allocation's 64-byte [Key]; the PSK identity names the allocation.

// DTLSCipherSuites are the IANA ids of the cipher suites Switchboard's DTLS
// carrier offers, in order of preference: every pre-shared-key suite
// pion/dtls implements. Unity does not publish which ones UnityTLS offers.
var DTLSCipherSuites = []uint16{
	0x00A8, // TLS_PSK_WITH_AES_128_GCM_SHA256 (RFC 5487)
	0xCCAB, // TLS_PSK_WITH_CHACHA20_POLY1305_SHA256 (RFC 7905)
	0xC0A4, // TLS_PSK_WITH_AES_128_CCM (RFC 6655)
	0xC0A8, // TLS_PSK_WITH_AES_128_CCM_8 (RFC 6655)
	0xC0A9, // TLS_PSK_WITH_AES_256_CCM_8 (RFC 6655)
	0x00AE, // TLS_PSK_WITH_AES_128_CBC_SHA256 (RFC 5487)
	0xCCAC, // TLS_ECDHE_PSK_WITH_CHACHA20_POLY1305_SHA256 (RFC 7905)
	0xC037, // TLS_ECDHE_PSK_WITH_AES_128_CBC_SHA256 (RFC 5489)
}

// DTLSIdentity is the PSK identity a client sends: the allocation id's 16
// bytes, as Unity Transport sends it.
func DTLSIdentity(id AllocationID) []byte { return append([]byte(nil), id[:]...) }

// ParseDTLSIdentity returns the allocation a PSK identity names: either
// the id's 16 bytes (what Unity Transport sends) or its canonical UUID
// text, 36 characters in either case (what Unity's documentation says).
// Anything else fails with an error wrapping ErrBadAllocationID.
func ParseDTLSIdentity(b []byte) (AllocationID, error) {
	if len(b) == AllocationIDSize {
		return AllocationID(b), nil
	}
	id, err := ParseAllocationID(string(b))
	if err != nil {
		return AllocationID{}, fmt.Errorf("relaywire: DTLS identity of %d bytes: %w", len(b), err)
	}
	return id, nil
}
