package frameassembly_test

import (
	"bytes"
	"math"
	"slices"
	"testing"

	"github.com/switchboardgg/switchboard/protocol/frameassembly"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// numbers returns frames with the given numbers and no inputs.
func numbers(ns ...uint32) []roomwire.TickFrame {
	fs := make([]roomwire.TickFrame, len(ns))
	for i, n := range ns {
		fs[i].Number = n
	}
	return fs
}

// collect returns a deliver func that appends frame numbers to *got.
func collect(got *[]uint32) func(roomwire.TickFrame) {
	return func(f roomwire.TickFrame) { *got = append(*got, f.Number) }
}

func TestMaxBuffered(t *testing.T) {
	if got, want := frameassembly.MaxBuffered, 2*roomwire.MaxFramesPerBatch; got != want {
		t.Errorf("MaxBuffered: got %d, want %d", got, want)
	}
}

func TestStart(t *testing.T) {
	tests := []struct {
		name      string
		a         *frameassembly.Assembler
		wantNext  uint32
		wantLast  uint32
		deliverOf uint32 // a frame that must be delivered right away
	}{
		{"zero value", new(frameassembly.Assembler), 1, 0, 1},
		{"welcome 0", frameassembly.New(0), 1, 0, 1},
		{"welcome 120", frameassembly.New(120), 121, 120, 121},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.a.Next(); got != tc.wantNext {
				t.Errorf("Next: got %d, want %d", got, tc.wantNext)
			}
			if got := tc.a.Last(); got != tc.wantLast {
				t.Errorf("Last: got %d, want %d", got, tc.wantLast)
			}
			var got []uint32
			tc.a.Push(numbers(tc.deliverOf-1, tc.deliverOf), collect(&got))
			if !slices.Equal(got, []uint32{tc.deliverOf}) {
				t.Errorf("delivered %v, want [%d]", got, tc.deliverOf)
			}
			if tc.a.Last() != tc.deliverOf || tc.a.Next() != tc.deliverOf+1 {
				t.Errorf("after delivery: Last %d Next %d, want %d %d", tc.a.Last(), tc.a.Next(), tc.deliverOf, tc.deliverOf+1)
			}
		})
	}
}

// frameOf builds a frame whose inputs are derived from its number, so a
// delivered frame can be checked against what was pushed.
func frameOf(n uint32, buf []byte) (roomwire.TickFrame, []byte) {
	f := roomwire.TickFrame{Number: n}
	for seat := range uint8(n % 5) {
		start := len(buf)
		for i := range int(seat) + 3 {
			buf = append(buf, byte(n)+byte(i)+seat)
		}
		f.Inputs = append(f.Inputs, roomwire.SeatInput{Seat: seat, Data: buf[start:]})
	}
	return f, buf
}

func sameFrame(a, b roomwire.TickFrame) bool {
	return a.Number == b.Number && slices.EqualFunc(a.Inputs, b.Inputs, func(x, y roomwire.SeatInput) bool {
		return x.Seat == y.Seat && bytes.Equal(x.Data, y.Data)
	})
}

// TestCopiesInput pushes frames whose bytes live in a buffer that is then
// overwritten, as a transport's read buffer is: the frames delivered later
// must be intact, and a delivered frame stays intact until the next call.
func TestCopiesInput(t *testing.T) {
	a := frameassembly.New(0)
	var want []roomwire.TickFrame
	var scratch []byte
	for _, n := range []uint32{1, 2, 3, 4} {
		f, _ := frameOf(n, nil)
		want = append(want, f)
	}
	var msg []roomwire.TickFrame
	for _, n := range []uint32{4, 3, 2} {
		var f roomwire.TickFrame
		f, scratch = frameOf(n, scratch)
		msg = append(msg, f)
	}
	var got []roomwire.TickFrame
	keep := func(f roomwire.TickFrame) { got = append(got, f) }
	if a.Push(msg, keep); len(got) != 0 {
		t.Fatalf("frames 2-4 before 1: delivered %d", len(got))
	}
	for i := range scratch {
		scratch[i] = 0xEE
	}
	f1, _ := frameOf(1, nil)
	a.Push([]roomwire.TickFrame{f1}, keep)
	for i := range f1.Inputs {
		clear(f1.Inputs[i].Data)
	}
	if len(got) != len(want) {
		t.Fatalf("delivered %d frames, want %d", len(got), len(want))
	}
	for i := range want {
		if !sameFrame(got[i], want[i]) {
			t.Errorf("frame %d: got %+v, want %+v", want[i].Number, got[i], want[i])
		}
	}
}

func TestCatchUp(t *testing.T) {
	t.Run("frames missing", func(t *testing.T) {
		a := frameassembly.New(0)
		a.Push(numbers(1, 2, 3), func(roomwire.TickFrame) {})
		req, ok := a.CatchUp(40)
		if !ok || req != (roomwire.FrameReq{From: 4, To: 40}) {
			t.Fatalf("CatchUp(40): got %+v %v, want {4 40} true", req, ok)
		}
		// The live FRAMEs that follow leave a gap, already requested.
		if req, ok := a.Push(numbers(39, 40, 41), func(roomwire.TickFrame) {}); ok {
			t.Errorf("Push after CatchUp: got request %+v, want none", req)
		}
		if a.Last() != 3 {
			t.Errorf("Last: got %d, want 3", a.Last())
		}
	})
	t.Run("nothing missing forgets the old request", func(t *testing.T) {
		a := frameassembly.New(0)
		if _, ok := a.Push(numbers(5, 6, 7), func(roomwire.TickFrame) {}); !ok {
			t.Fatal("gap 1-4: no request")
		}
		if _, ok := a.Push(numbers(6, 7, 8), func(roomwire.TickFrame) {}); ok {
			t.Fatal("second request for next 1")
		}
		// The connection broke; WELCOME.frame 0 after HELLO (hypothetical
		// rewind) means nothing to catch up, but the request made on the old
		// connection may be lost, so the next gap asks again.
		if req, ok := a.CatchUp(0); ok {
			t.Fatalf("CatchUp(0): got %+v, want none", req)
		}
		req, ok := a.Push(numbers(7, 8, 9), func(roomwire.TickFrame) {})
		if !ok || req != (roomwire.FrameReq{From: 1, To: 8}) {
			t.Errorf("Push after CatchUp: got %+v %v, want {1 8} true", req, ok)
		}
	})
	t.Run("up to date", func(t *testing.T) {
		a := frameassembly.New(10)
		if req, ok := a.CatchUp(10); ok {
			t.Errorf("CatchUp(10) at next 11: got %+v, want none", req)
		}
		req, ok := a.CatchUp(11)
		if !ok || req != (roomwire.FrameReq{From: 11, To: 11}) {
			t.Errorf("CatchUp(11): got %+v %v, want {11 11} true", req, ok)
		}
	})
}

func TestReset(t *testing.T) {
	a := frameassembly.New(0)
	if _, ok := a.Push(numbers(5, 6, 7), func(roomwire.TickFrame) {}); !ok {
		t.Fatal("gap: no request")
	}
	a.Reset(100)
	if a.Next() != 101 || a.Buffered() != 0 {
		t.Fatalf("after Reset(100): Next %d Buffered %d, want 101 0", a.Next(), a.Buffered())
	}
	var got []uint32
	req, ok := a.Push(numbers(102, 103, 104), collect(&got))
	if !ok || req != (roomwire.FrameReq{From: 101, To: 103}) || len(got) != 0 {
		t.Errorf("after Reset: got %v %+v %v, want [] {101 103} true", got, req, ok)
	}
	// A request of the old room state must not leak: frame 1 is old news.
	a.Reset(0)
	got = got[:0]
	a.Push(numbers(1), collect(&got))
	if !slices.Equal(got, []uint32{1}) {
		t.Errorf("after Reset(0): delivered %v, want [1]", got)
	}
}

func TestSnapshotNeverRequests(t *testing.T) {
	a := frameassembly.New(0)
	a.Push(numbers(10), func(roomwire.TickFrame) {}) // newest 10, request (1, 9)
	var got []uint32
	a.Snapshot(3, collect(&got)) // next 4, newest 10 ≥ 7: only a Push asks
	if len(got) != 0 || a.Next() != 4 || a.Buffered() != 1 {
		t.Fatalf("after Snapshot(3): delivered %v Next %d Buffered %d", got, a.Next(), a.Buffered())
	}
	req, ok := a.Push(nil, collect(&got))
	if !ok || req != (roomwire.FrameReq{From: 4, To: 9}) {
		t.Errorf("empty Push after Snapshot: got %+v %v, want {4 9} true", req, ok)
	}
}

// TestLastFrameNumber covers the top of the u32 range: frame numbers never
// get there in a real room, but nothing may wrap into delivering old frames.
func TestLastFrameNumber(t *testing.T) {
	const top = math.MaxUint32
	a := frameassembly.New(top - 2)
	var got []uint32
	if req, ok := a.Push(numbers(top, top-1), collect(&got)); ok {
		t.Errorf("request %+v, want none", req)
	}
	if !slices.Equal(got, []uint32{top - 1, top}) {
		t.Fatalf("delivered %v, want [%d %d]", got, top-1, top)
	}
	if a.Last() != top || a.Next() != 0 {
		t.Errorf("Last %d Next %d, want %d 0", a.Last(), a.Next(), uint32(top))
	}
	got = got[:0]
	if _, ok := a.Push(numbers(0, 1, 2, top), collect(&got)); ok || len(got) != 0 || a.Buffered() != 0 {
		t.Errorf("after the top frame: delivered %v request %v buffered %d, want nothing", got, ok, a.Buffered())
	}
	b := frameassembly.New(top)
	if _, ok := b.Push(numbers(0, 1, 2, 3, 4, top), collect(&got)); ok || len(got) != 0 {
		t.Errorf("New(MaxUint32): delivered %v request %v, want nothing", got, ok)
	}
}

// TestBound pushes a full window and more in one message.
func TestBound(t *testing.T) {
	a := frameassembly.New(0)
	var msg []roomwire.TickFrame
	for n := uint32(2); n <= 2*frameassembly.MaxBuffered; n++ {
		msg = append(msg, roomwire.TickFrame{Number: n})
	}
	req, ok := a.Push(msg, func(roomwire.TickFrame) { t.Fatal("delivered without frame 1") })
	if a.Buffered() != frameassembly.MaxBuffered-1 {
		t.Errorf("Buffered: got %d, want %d", a.Buffered(), frameassembly.MaxBuffered-1)
	}
	if want := (roomwire.FrameReq{From: 1, To: 2*frameassembly.MaxBuffered - 1}); !ok || req != want {
		t.Errorf("request: got %+v %v, want %+v", req, ok, want)
	}
	var got []uint32
	a.Push(numbers(1), collect(&got))
	if len(got) != frameassembly.MaxBuffered || got[len(got)-1] != frameassembly.MaxBuffered {
		t.Errorf("delivered %d frames up to %d, want %d up to %d", len(got), got[len(got)-1], frameassembly.MaxBuffered, frameassembly.MaxBuffered)
	}
}

// TestAllocs: in-order FRAMEs, each with its two redundant frames, cost
// nothing once the ring has grown; so do in-order FRAME_BATCHes.
func TestAllocs(t *testing.T) {
	a := frameassembly.New(2)
	var data [4][roomwire.MaxInputLen]byte
	msg := make([]roomwire.TickFrame, 3)
	for i := range msg {
		msg[i].Inputs = make([]roomwire.SeatInput, len(data))
	}
	n := uint32(2) // each FRAME carries n-2, n-1 and n
	delivered := 0
	deliver := func(f roomwire.TickFrame) { delivered += len(f.Inputs) }
	frame := func() {
		n++
		for i := range msg {
			msg[i].Number = n - 2 + uint32(i)
			for s := range msg[i].Inputs {
				msg[i].Inputs[s] = roomwire.SeatInput{Seat: uint8(s), Data: data[s][:]}
			}
		}
		if _, ok := a.Push(msg, deliver); ok {
			t.Fatal("request while in order")
		}
	}
	for range 2 * frameassembly.MaxBuffered { // every slot used once
		frame()
	}
	if allocs := testing.AllocsPerRun(1000, frame); allocs != 0 {
		t.Errorf("in-order FRAME: %v allocs, want 0", allocs)
	}
	batch := make([]roomwire.TickFrame, roomwire.MaxFramesPerBatch)
	pushBatch := func() {
		for i := range batch {
			n++
			batch[i] = roomwire.TickFrame{Number: n, Inputs: msg[0].Inputs}
		}
		a.Push(batch, deliver)
	}
	if allocs := testing.AllocsPerRun(100, pushBatch); allocs != 0 {
		t.Errorf("in-order FRAME_BATCH: %v allocs, want 0", allocs)
	}
	if a.Last() != n || delivered == 0 {
		t.Errorf("Last %d, want %d; %d inputs delivered", a.Last(), n, delivered)
	}
}

func BenchmarkPushFrame(b *testing.B) {
	a := frameassembly.New(2)
	msg := make([]roomwire.TickFrame, 3)
	in := make([]roomwire.SeatInput, 4)
	for s := range in {
		in[s] = roomwire.SeatInput{Seat: uint8(s), Data: make([]byte, 16)}
	}
	b.ReportAllocs()
	n := uint32(2)
	for b.Loop() {
		n++
		for i := range msg {
			msg[i] = roomwire.TickFrame{Number: n - 2 + uint32(i), Inputs: in}
		}
		a.Push(msg, func(roomwire.TickFrame) {})
	}
}
