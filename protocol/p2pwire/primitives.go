package p2pwire

import (
	"encoding/binary"
	"unicode/utf8"
)

// reader walks the fields after a routing header. The first error sticks:
// later reads return zero values, so a decoder reads every field and checks
// err once at the end. It allocates only the strings it returns and the
// error.
type reader struct {
	b   []byte
	off int
	k   Kind
	err error
}

func (r *reader) fail(field, problem string) {
	if r.err == nil {
		r.err = fieldErr(r.k, field, problem)
	}
}

func (r *reader) take(n int, field string) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b)-r.off {
		r.fail(field, ProblemTruncated)
		return nil
	}
	p := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return p
}

func (r *reader) u8(field string) uint8 {
	if p := r.take(1, field); p != nil {
		return p[0]
	}
	return 0
}

func (r *reader) u16(field string) uint16 {
	if p := r.take(2, field); p != nil {
		return binary.BigEndian.Uint16(p)
	}
	return 0
}

func (r *reader) u32(field string) uint32 {
	if p := r.take(4, field); p != nil {
		return binary.BigEndian.Uint32(p)
	}
	return 0
}

func (r *reader) u64(field string) uint64 {
	if p := r.take(8, field); p != nil {
		return binary.BigEndian.Uint64(p)
	}
	return 0
}

// flags reads a flags byte and fails when a bit outside allowed is set.
func (r *reader) flags(field string, allowed uint8) uint8 {
	v := r.u8(field)
	if v&^allowed != 0 {
		r.fail(field, ProblemBadFlags)
		return 0
	}
	return v
}

// bytes8 and bytes16 read a u8 or u16 length, check it against min and
// limit before anything is sized from it, and return the bytes, aliasing
// the input.
func (r *reader) bytes8(field string, min, limit int) []byte {
	n := int(r.u8(field))
	return r.sized(field, n, min, limit)
}

func (r *reader) bytes16(field string, min, limit int) []byte {
	n := int(r.u16(field))
	return r.sized(field, n, min, limit)
}

func (r *reader) sized(field string, n, min, limit int) []byte {
	switch {
	case r.err != nil:
		return nil
	case n < min:
		r.fail(field, ProblemEmpty)
		return nil
	case n > limit:
		r.fail(field, ProblemOverCap)
		return nil
	}
	p := r.take(n, field)
	if p == nil && r.err == nil {
		p = []byte{}
	}
	return p
}

func (r *reader) utf8(field string, p []byte) string {
	if r.err != nil {
		return ""
	}
	if !utf8.Valid(p) {
		r.fail(field, ProblemBadUTF8)
		return ""
	}
	return string(p)
}

func (r *reader) str8(field string, min, limit int) string {
	return r.utf8(field, r.bytes8(field, min, limit))
}

func (r *reader) str16(field string, min, limit int) string {
	return r.utf8(field, r.bytes16(field, min, limit))
}

func (r *reader) peerID(field string) PeerID {
	p := r.bytes8(field, 1, MaxPeerIDLen)
	if r.err != nil {
		return ""
	}
	if !peerIDBytesOK(p) {
		r.fail(field, ProblemBadPeerID)
		return ""
	}
	return PeerID(p)
}

// rest returns the bytes left, aliasing the input (never nil on success).
func (r *reader) rest() []byte {
	if r.err != nil {
		return nil
	}
	p := r.b[r.off:len(r.b):len(r.b)]
	r.off = len(r.b)
	return p
}

// end reports the sticky error or trailing bytes.
func (r *reader) end() error {
	if r.err == nil && r.off != len(r.b) {
		r.fail("message", ProblemTrailing)
	}
	return r.err
}

func appendU16(b []byte, v uint16) []byte { return binary.BigEndian.AppendUint16(b, v) }
func appendU32(b []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(b, v) }
func appendU64(b []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(b, v) }

func appendBytes8[S ~string | ~[]byte](b []byte, p S) []byte {
	return append(append(b, byte(len(p))), p...)
}

func appendBytes16[S ~string | ~[]byte](b []byte, p S) []byte {
	return append(appendU16(b, uint16(len(p))), p...)
}

// checker validates fields for encoding: the first error sticks, and it
// names the same field and problem a decoder would.
type checker struct {
	k   Kind
	err error
}

func (c *checker) fail(field, problem string) {
	if c.err == nil {
		c.err = fieldErr(c.k, field, problem)
	}
}

func (c *checker) length(field string, n, min, limit int) {
	switch {
	case n < min:
		c.fail(field, ProblemEmpty)
	case n > limit:
		c.fail(field, ProblemOverCap)
	}
}

func (c *checker) str(field, s string, min, limit int) {
	c.length(field, len(s), min, limit)
	if !utf8.ValidString(s) {
		c.fail(field, ProblemBadUTF8)
	}
}

func (c *checker) peerID(field string, p PeerID) {
	c.length(field, len(p), 1, MaxPeerIDLen)
	if !peerIDBytesOK(p) {
		c.fail(field, ProblemBadPeerID)
	}
}
