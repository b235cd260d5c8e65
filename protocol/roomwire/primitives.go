package roomwire

import (
	"encoding/binary"
	"unicode/utf8"
)

// reader walks a message. The first error sticks: later reads return zero
// values, so a decoder can read every field and check err once at the end.
// It never allocates.
type reader struct {
	b   []byte
	off int
	t   Type
	err error
}

func (r *reader) fail(field, problem string) {
	if r.err == nil {
		r.err = fieldErr(r.t, field, problem)
	}
}

func (r *reader) remaining() int { return len(r.b) - r.off }

func (r *reader) take(n int, field string) []byte {
	if r.err != nil {
		return nil
	}
	if n > r.remaining() {
		r.fail(field, ProblemTruncated)
		return nil
	}
	p := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return p
}

func (r *reader) u8(field string) uint8 {
	p := r.take(1, field)
	if p == nil {
		return 0
	}
	return p[0]
}

func (r *reader) u16(field string) uint16 {
	p := r.take(2, field)
	if p == nil {
		return 0
	}
	return binary.BigEndian.Uint16(p)
}

func (r *reader) u32(field string) uint32 {
	p := r.take(4, field)
	if p == nil {
		return 0
	}
	return binary.BigEndian.Uint32(p)
}

func (r *reader) u64(field string) uint64 {
	p := r.take(8, field)
	if p == nil {
		return 0
	}
	return binary.BigEndian.Uint64(p)
}

func (r *reader) boolean(field string) bool {
	v := r.u8(field)
	if v > 1 {
		r.fail(field, ProblemBadBool)
		return false
	}
	return v == 1
}

// uvarint reads a minimal protobuf varint of at most 64 bits.
func (r *reader) uvarint(field string) uint64 {
	if r.err != nil {
		return 0
	}
	var x uint64
	var s uint
	for i := 0; ; i++ {
		if r.off >= len(r.b) {
			r.fail(field, ProblemTruncated)
			return 0
		}
		c := r.b[r.off]
		r.off++
		if i == 9 && c > 1 {
			r.fail(field, ProblemOverlong) // more than 64 bits
			return 0
		}
		if c < 0x80 {
			if c == 0 && i > 0 {
				r.fail(field, ProblemOverlong) // a zero last byte is padding
				return 0
			}
			return x | uint64(c)<<s
		}
		x |= uint64(c&0x7f) << s
		s += 7
	}
}

// length reads a uvarint length and checks it against limit before anything
// is sized from it.
func (r *reader) length(field string, limit int) int {
	n := r.uvarint(field)
	if r.err != nil {
		return 0
	}
	if n > uint64(limit) {
		r.fail(field, ProblemOverCap)
		return 0
	}
	return int(n)
}

func (r *reader) bytes(field string, limit int) []byte {
	n := r.length(field, limit)
	return r.take(n, field)
}

func (r *reader) str(field string, limit int) string {
	p := r.bytes(field, limit)
	if r.err != nil {
		return ""
	}
	if !utf8.Valid(p) {
		r.fail(field, ProblemBadUTF8)
		return ""
	}
	return string(p)
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

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendBytes(b, p []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// checkBytes validates a bytes field for encoding.
func checkBytes(t Type, field string, p []byte, limit int) error {
	if len(p) > limit {
		return fieldErr(t, field, ProblemOverCap)
	}
	return nil
}

// checkString validates a string field for encoding.
func checkString(t Type, field, s string, limit int) error {
	if len(s) > limit {
		return fieldErr(t, field, ProblemOverCap)
	}
	if !utf8.ValidString(s) {
		return fieldErr(t, field, ProblemBadUTF8)
	}
	return nil
}
