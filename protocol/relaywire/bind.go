package relaywire

import (
	"crypto/sha256"
	"crypto/subtle"
)

// Only BIND is authenticated. Its HMAC field is HMAC-SHA256 (RFC 2104) of
// the BIND's first 263 bytes — header, accept mode, nonce as written
// (little-endian), length byte and the 255 bytes of connection data — keyed
// by the allocation's 64-byte key.
//
// The key is exactly SHA-256's block size, so RFC 2104's key step is the
// identity and the MAC is two SHA-256 sums over stack buffers: computing or
// verifying one allocates nothing, which matters to a relay flooded with
// forged BINDs. TestBindHMACMatchesCryptoHMAC and FuzzBindHMAC check it
// against crypto/hmac.

// bindHMAC returns HMAC-SHA256(key, signed); signed is BindSignedSize bytes.
func bindHMAC(key *Key, signed *[BindSignedSize]byte) [HMACSize]byte {
	var inner [sha256.BlockSize + BindSignedSize]byte
	var outer [sha256.BlockSize + sha256.Size]byte
	for i, k := range key {
		inner[i] = k ^ 0x36
		outer[i] = k ^ 0x5c
	}
	copy(inner[sha256.BlockSize:], signed[:])
	sum := sha256.Sum256(inner[:])
	copy(outer[sha256.BlockSize:], sum[:])
	return sha256.Sum256(outer[:])
}

// ComputeHMAC returns the HMAC of m's other fields under key, whatever m.HMAC
// holds. It allocates nothing.
func (m *Bind) ComputeHMAC(key *Key) [HMACSize]byte {
	var signed [BindSignedSize]byte
	m.appendSigned(signed[:0])
	return bindHMAC(key, &signed)
}

// Sign sets m.HMAC to [Bind.ComputeHMAC].
func (m *Bind) Sign(key *Key) { m.HMAC = m.ComputeHMAC(key) }

// Verify reports whether m.HMAC is the HMAC of m's other fields under key,
// in constant time.
func (m *Bind) Verify(key *Key) bool {
	want := m.ComputeHMAC(key)
	return subtle.ConstantTimeCompare(want[:], m.HMAC[:]) == 1
}

// Blob returns the connection data the length byte announces,
// ConnectionData[:ConnectionDataLength]: with Unity Transport, always all 255
// bytes, padding included. It aliases m.
func (m *Bind) Blob() []byte { return m.ConnectionData[:m.ConnectionDataLength] }

// NewBind returns the BIND that Unity Transport sends for an allocation
// whose connectionData is blob and key is key: accept mode 0, length byte
// 255, blob padded with zero bytes, signed. It fails with
// [ErrConnectionDataTooLong].
func NewBind(nonce uint16, blob []byte, key *Key) (*Bind, error) {
	cd, err := NewConnectionData(blob)
	if err != nil {
		return nil, err
	}
	m := &Bind{AcceptMode: AcceptModeAuto, Nonce: nonce, ConnectionDataLength: ConnectionDataSize, ConnectionData: cd}
	m.Sign(key)
	return m, nil
}

// NewConnectRequest returns the CONNECT_REQUEST that Unity Transport sends
// from allocation from to the host whose connectionData is hostBlob: length
// byte 255, blob padded with zero bytes. It fails with
// [ErrConnectionDataTooLong].
func NewConnectRequest(from AllocationID, hostBlob []byte) (*ConnectRequest, error) {
	cd, err := NewConnectionData(hostBlob)
	if err != nil {
		return nil, err
	}
	return &ConnectRequest{AllocationID: from, ToConnectionDataLength: ConnectionDataSize, ToConnectionData: cd}, nil
}

// Blob returns ToConnectionData[:ToConnectionDataLength]; see [Bind.Blob].
func (m *ConnectRequest) Blob() []byte { return m.ToConnectionData[:m.ToConnectionDataLength] }
