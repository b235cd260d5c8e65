package roomwire_test

import (
	"testing"

	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// Run with: go test -run='^$' -bench=. -benchmem ./protocol/roomwire

func BenchmarkAppendFrame(b *testing.B) {
	m := benchFrame()
	buf := make([]byte, 0, 1024)
	b.SetBytes(int64(len(mustAppend(b, m))))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = m.AppendTo(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnmarshalFrame(b *testing.B) {
	data := mustAppend(b, benchFrame())
	var m roomwire.Frame
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Unmarshal(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnmarshalFrameBatch(b *testing.B) {
	data := mustAppend(b, benchBatch())
	var m roomwire.FrameBatch
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Unmarshal(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendInput(b *testing.B) {
	m := &roomwire.Input{AckFrame: 1234, Data: seq(32, 0)}
	buf := make([]byte, 0, 256)
	b.SetBytes(int64(len(mustAppend(b, m))))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = m.AppendTo(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnmarshalInput(b *testing.B) {
	data := mustAppend(b, &roomwire.Input{AckFrame: 1234, Data: seq(32, 0)})
	var m roomwire.Input
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Unmarshal(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeInput is the generic path a node takes for a client message
// whose type it does not know in advance: it allocates the message value.
func BenchmarkDecodeInput(b *testing.B) {
	data := mustAppend(b, &roomwire.Input{AckFrame: 1234, Data: seq(32, 0)})
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := roomwire.Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}
