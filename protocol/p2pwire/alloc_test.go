package p2pwire_test

import (
	"bytes"
	"testing"

	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// TestHotPathsAllocateNothing checks what the hub does per frame and per
// datagram: reading a frame into its buffer, decoding the routing header
// (valid or not), stamping, and parsing a sealed prefix.
func TestHotPathsAllocateNothing(t *testing.T) {
	mf := loadMessages(t)
	var bodies [][]byte
	for _, kv := range mf.Messages {
		for _, v := range kv.Valid {
			bodies = append(bodies, v.Hex)
		}
		for _, v := range kv.Invalid {
			bodies = append(bodies, v.Hex)
		}
	}
	for _, v := range mf.RoutingInvalid {
		bodies = append(bodies, v.Hex)
	}
	for _, v := range mf.UnknownKinds {
		bodies = append(bodies, v.Hex)
	}
	stamp := mf.Stamping[0].Body
	r, err := p2pwire.DecodeRouting(stamp)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 0, 256)
	frame, _ := p2pwire.AppendFrame(nil, stamp)
	rd := bytes.NewReader(frame)
	buf := make([]byte, 0, 256)
	var df datagramsFile
	readJSON(t, "datagrams.json", &df)
	var dgrams [][]byte
	for _, v := range df.Sealed {
		dgrams = append(dgrams, v.Hex)
	}
	for _, v := range df.SealedInvalid {
		dgrams = append(dgrams, v.Hex)
	}
	tests := []struct {
		name string
		fn   func()
	}{
		{"DecodeRouting", func() {
			for _, b := range bodies {
				_, _ = p2pwire.DecodeRouting(b)
			}
		}},
		{"AppendStampedFrameHeader", func() { _, _ = p2pwire.AppendStampedFrameHeader(out[:0], &r, []byte("alice~k3f9"), len(stamp)) }},
		{"PeekMessageID", func() { _ = p2pwire.PeekMessageID(stamp, &r) }},
		{"ReadFrame", func() {
			rd.Reset(frame)
			_, _ = p2pwire.ReadFrame(rd, buf, 0)
		}},
		{"ParseFrameLength", func() {
			_, _ = p2pwire.ParseFrameLength(frame, 0)
			_, _ = p2pwire.ParseFrameLength([]byte{0xff, 0xff, 0xff, 0xff}, 0)
		}},
		{"ParseSealed", func() {
			for _, d := range dgrams {
				_, _, _, _ = p2pwire.ParseSealed(d)
			}
		}},
		{"AppendSealedHeader", func() { _, _ = p2pwire.AppendSealedHeader(out[:0], p2pwire.SealedHeader{KeyID: 1, Seq: 2}) }},
		{"Ping.Unmarshal", func() {
			var p p2pwire.Ping
			_ = p.Unmarshal([]byte{byte(p2pwire.KindPing), 0, 1, 2, 3, 4, 5, 6, 7, 8})
		}},
	}
	for _, tc := range tests {
		if n := testing.AllocsPerRun(100, tc.fn); n != 0 {
			t.Errorf("%s: %v allocations per run", tc.name, n)
		}
	}
}
