package p2pwire_test

import (
	"bytes"
	"testing"

	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// The hub's work per routed frame: decode the routing header and stamp.
func BenchmarkRouteAndStamp(b *testing.B) {
	body, err := p2pwire.Append(nil, &p2pwire.Msg{Route: p2pwire.Route{To: "bob~x7q2"},
		Envelope: p2pwire.Envelope{Payload: bytes.Repeat([]byte{1}, 32)}})
	if err != nil {
		b.Fatal(err)
	}
	from := []byte("alice~k3f9")
	out := make([]byte, 0, 64)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := p2pwire.DecodeRouting(body)
		if err != nil {
			b.Fatal(err)
		}
		if out, err = p2pwire.AppendStampedFrameHeader(out[:0], &r, from, len(body)); err != nil {
			b.Fatal(err)
		}
	}
}

// A peer's work per message: encode a framed MESSAGE, decode one.
func BenchmarkMessageRoundTrip(b *testing.B) {
	m := &p2pwire.Msg{Route: p2pwire.Route{To: "bob~x7q2"},
		Envelope: p2pwire.Envelope{MessageID: 1, Header: "echo", Payload: bytes.Repeat([]byte{1}, 32)}}
	buf := make([]byte, 0, 128)
	var got p2pwire.Msg
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = p2pwire.AppendMessageFrame(buf[:0], m); err != nil {
			b.Fatal(err)
		}
		if err := got.Unmarshal(buf[p2pwire.FrameHeaderSize:]); err != nil {
			b.Fatal(err)
		}
	}
}
