// Package tokens signs and verifies the tokens and tickets of Switchboard's
// rooms pillar, and makes the random ones.
//
// A signed token's text is
//
//	<prefix><base64url(payload)>.<base64url(HMAC-SHA256(key, prefix || payload))>
//
// with unpadded base64url and compact JSON payloads. Verification checks the
// length, the prefix and the MAC (in constant time) before it parses
// anything. The formats, keys and who checks what are listed in
// docs/architecture.md; the offline auth-token format, which game backends
// may mint themselves, is documented in docs/api.md.
//
// The package keeps no state and starts no goroutines; a [Signer] is safe for
// concurrent use.
package tokens
