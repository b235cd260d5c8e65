package roomwire

import "encoding/binary"

// Smallest encodings, used to bound counts by the bytes actually present
// before anything is allocated.
const (
	minFrameSize = 5 // u32 number + u8 input count
	minInputSize = 2 // u8 seat + u8 length
)

// frames decodes the frames encoding into dst[:0], reusing its memory.
func (r *reader) frames(dst []TickFrame, limit int) []TickFrame {
	n := r.length("frames", limit)
	if r.err != nil {
		return dst[:0]
	}
	if n*minFrameSize > r.remaining() {
		r.fail("frames", ProblemTruncated)
		return dst[:0]
	}
	if cap(dst) < n {
		dst = append(dst[:cap(dst)], make([]TickFrame, n-cap(dst))...)
	}
	dst = dst[:n]
	for i := range dst {
		f := &dst[i]
		f.Number = r.u32("frame")
		k := int(r.u8("inputs"))
		if r.err != nil {
			return dst[:0]
		}
		if k*minInputSize > r.remaining() {
			r.fail("inputs", ProblemTruncated)
			return dst[:0]
		}
		if cap(f.Inputs) < k {
			f.Inputs = make([]SeatInput, k)
		}
		f.Inputs = f.Inputs[:k]
		for j := range f.Inputs {
			in := &f.Inputs[j]
			in.Seat = r.u8("seat")
			l := int(r.u8("data"))
			if l > MaxInputLen {
				r.fail("data", ProblemOverCap)
			}
			in.Data = r.take(l, "data")
		}
		if r.err != nil {
			return dst[:0]
		}
	}
	return dst
}

// appendFrames validates and appends a FRAME or FRAME_BATCH message.
func appendFrames(b []byte, t Type, frames []TickFrame, limit int) ([]byte, error) {
	if len(frames) > limit {
		return b, fieldErr(t, "frames", ProblemOverCap)
	}
	for i := range frames {
		if len(frames[i].Inputs) > 255 {
			return b, fieldErr(t, "inputs", ProblemOverCap)
		}
		for j := range frames[i].Inputs {
			if len(frames[i].Inputs[j].Data) > MaxInputLen {
				return b, fieldErr(t, "data", ProblemOverCap)
			}
		}
	}
	b = append(b, byte(t))
	b = binary.AppendUvarint(b, uint64(len(frames)))
	for i := range frames {
		b = AppendTickFrame(b, &frames[i])
	}
	return b, nil
}

// AppendTickFrame appends the encoding of one frame (u32 number, u8 input
// count, inputs) without validating it. Callers that build FRAME and
// FRAME_BATCH messages incrementally use it with [AppendFramesHeader]; the
// inputs must hold at most 255 entries of at most [MaxInputLen] bytes.
func AppendTickFrame(b []byte, f *TickFrame) []byte {
	b = appendU32(b, f.Number)
	b = append(b, byte(len(f.Inputs)))
	for _, in := range f.Inputs {
		b = append(b, in.Seat, byte(len(in.Data)))
		b = append(b, in.Data...)
	}
	return b
}

// AppendFramesHeader appends the type byte and frame count of a FRAME or
// FRAME_BATCH message; the frames follow, each from [AppendTickFrame] or
// copied from an earlier encoding of it. It is the building block of a node
// that keeps frames encoded and sends them without re-encoding.
func AppendFramesHeader(b []byte, t Type, count int) []byte {
	b = append(b, byte(t))
	return binary.AppendUvarint(b, uint64(count))
}

// TickFrameSize returns the encoded size of f.
func TickFrameSize(f *TickFrame) int {
	n := minFrameSize
	for _, in := range f.Inputs {
		n += minInputSize + len(in.Data)
	}
	return n
}
