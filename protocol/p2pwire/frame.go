package p2pwire

import (
	"encoding/binary"
	"fmt"
	"io"
)

// A TLS frame is a 4-byte big-endian body length, then the body: a routing
// header and the kind's fields. The length counts the body only and is
// MinFrameSize or more; a reader checks it against its maximum before it
// reads (or allocates for) the body.

// ParseFrameLength decodes the length prefix in hdr (FrameHeaderSize bytes
// or more; only the first four are read) and checks it against max (0:
// DefaultMaxFrameSize; never above MaxFrameSize). It fails with
// [ErrFrameTooLarge] over max, and with a [*FieldError] for a short hdr or
// a length under MinFrameSize. It allocates nothing.
func ParseFrameLength(hdr []byte, max int) (int, error) {
	if len(hdr) < FrameHeaderSize {
		return 0, errFrameTruncated
	}
	n := binary.BigEndian.Uint32(hdr)
	if n < MinFrameSize {
		return 0, errFrameEmpty
	}
	if uint64(n) > uint64(frameMax(max)) {
		return 0, ErrFrameTooLarge
	}
	return int(n), nil
}

func frameMax(max int) int {
	if max <= 0 {
		return DefaultMaxFrameSize
	}
	return min(max, MaxFrameSize)
}

// AppendFrame appends the length prefix of body and body to b. It fails with
// [ErrFrameTooLarge] for a body over MaxFrameSize and with a [*FieldError]
// for one under MinFrameSize.
func AppendFrame(b, body []byte) ([]byte, error) {
	b, err := AppendFrameHeader(b, len(body))
	if err != nil {
		return b, err
	}
	return append(b, body...), nil
}

// AppendFrameHeader appends the length prefix of an n-byte body, for a
// writer that sends the body from other buffers (writev).
func AppendFrameHeader(b []byte, n int) ([]byte, error) {
	switch {
	case n < MinFrameSize:
		return b, errFrameEmpty
	case n > MaxFrameSize:
		return b, ErrFrameTooLarge
	}
	return binary.BigEndian.AppendUint32(b, uint32(n)), nil
}

// AppendMessageFrame appends m as a whole frame: length prefix and body.
func AppendMessageFrame(b []byte, m Message) ([]byte, error) {
	start := len(b)
	b = append(b, 0, 0, 0, 0)
	b, err := m.AppendTo(b)
	if err != nil {
		return b[:start], err
	}
	n := len(b) - start - FrameHeaderSize
	if n > MaxFrameSize {
		return b[:start], ErrFrameTooLarge
	}
	binary.BigEndian.PutUint32(b[start:], uint32(n))
	return b, nil
}

// ReadFrame reads one frame from r and returns its body. The length prefix
// and then the body are read into buf when they fit (buf's capacity),
// otherwise into a new slice of exactly the body's size; the length is
// checked against max (see [ParseFrameLength]) first, so a peer cannot make
// the reader allocate or read more than max. With a buf large enough it
// allocates nothing. An EOF before the first byte is io.EOF; inside the
// frame, io.ErrUnexpectedEOF.
func ReadFrame(r io.Reader, buf []byte, max int) ([]byte, error) {
	if cap(buf) < FrameHeaderSize {
		buf = make([]byte, 0, 512)
	}
	hdr := buf[:FrameHeaderSize]
	if _, err := io.ReadFull(r, hdr); err != nil {
		if err == io.EOF {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("p2pwire: reading frame length: %w", err)
	}
	n, err := ParseFrameLength(hdr, max)
	if err != nil {
		return nil, err
	}
	body := buf[:0]
	if cap(body) < n {
		body = make([]byte, n)
	}
	body = body[:n]
	if _, err := io.ReadFull(r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("p2pwire: reading frame body: %w", err)
	}
	return body, nil
}
