package relaywire

import "encoding/hex"

// AllocationID identifies an allocation: the 16 bytes of a UUID in RFC 4122
// (big-endian) byte order, as the REST API's allocationIdBytes carries them
// and as every message that names an allocation puts them on the wire. The
// zero value is the nil UUID, which no allocation has.
type AllocationID [AllocationIDSize]byte

// ParseAllocationID parses the canonical text form of a UUID,
// "f26ed6cc-6ba7-11eb-b7e1-4f0436c8d458" (hex digits in either case, hyphens
// at positions 8, 13, 18 and 23, nothing else), as the REST API's
// allocationId carries it. It fails with [ErrBadAllocationID].
func ParseAllocationID(s string) (AllocationID, error) {
	var id AllocationID
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return AllocationID{}, ErrBadAllocationID
	}
	j := 0
	for i := 0; i < 36; i += 2 {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			i++
		}
		hi, ok1 := unhex(s[i])
		lo, ok2 := unhex(s[i+1])
		if !ok1 || !ok2 {
			return AllocationID{}, ErrBadAllocationID
		}
		id[j] = hi<<4 | lo
		j++
	}
	return id, nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// String returns the canonical lower-case text form,
// "f26ed6cc-6ba7-11eb-b7e1-4f0436c8d458".
func (id AllocationID) String() string {
	b, _ := id.MarshalText()
	return string(b)
}

// AppendText appends the canonical text form to b.
func (id AllocationID) AppendText(b []byte) ([]byte, error) {
	var t [36]byte
	hex.Encode(t[0:8], id[0:4])
	t[8] = '-'
	hex.Encode(t[9:13], id[4:6])
	t[13] = '-'
	hex.Encode(t[14:18], id[6:8])
	t[18] = '-'
	hex.Encode(t[19:23], id[8:10])
	t[23] = '-'
	hex.Encode(t[24:36], id[10:16])
	return append(b, t[:]...), nil
}

// MarshalText implements encoding.TextMarshaler with the canonical text
// form, so that JSON carries an AllocationID as a UUID string.
func (id AllocationID) MarshalText() ([]byte, error) { return id.AppendText(make([]byte, 0, 36)) }

// UnmarshalText implements encoding.TextUnmarshaler with [ParseAllocationID].
func (id *AllocationID) UnmarshalText(b []byte) error {
	v, err := ParseAllocationID(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// IsZero reports whether id is the nil UUID.
func (id AllocationID) IsZero() bool { return id == AllocationID{} }

// ConnectionData is the 255-byte connection data field of BIND and
// CONNECT_REQUEST: an allocation's connectionData blob (≤ 255 bytes, opaque
// to clients) followed by zero bytes. Unity Transport pads every blob to 255
// bytes and always writes 255 in the length byte before the field, so a
// relay cannot learn the blob's length from the message: the blob's own
// format must say where it ends (trailing zero bytes are padding).
type ConnectionData [ConnectionDataSize]byte

// NewConnectionData returns blob padded with zero bytes to 255. It fails
// with [ErrConnectionDataTooLong] for a longer blob.
func NewConnectionData(blob []byte) (ConnectionData, error) {
	var d ConnectionData
	if len(blob) > ConnectionDataSize {
		return d, ErrConnectionDataTooLong
	}
	copy(d[:], blob)
	return d, nil
}

// paddedFrom reports whether every byte of d from n on is zero.
func (d *ConnectionData) paddedFrom(n uint8) bool {
	var or byte
	for _, c := range d[n:] {
		or |= c
	}
	return or == 0
}

// Key is an allocation's key: the HMAC-SHA256 key of BIND (and the DTLS
// pre-shared key). The REST API hands it to clients base64-encoded.
type Key [KeySize]byte

// NewKey copies b into a Key. It fails with [ErrBadKey] unless b has exactly
// KeySize bytes, as Unity Transport requires.
func NewKey(b []byte) (Key, error) {
	var k Key
	if len(b) != KeySize {
		return k, ErrBadKey
	}
	copy(k[:], b)
	return k, nil
}
