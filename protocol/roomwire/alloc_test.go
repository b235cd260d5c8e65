package roomwire_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// benchFrame is a FRAME as a 4-player room sends it every tick: the newest
// frame and two before it, each with 16 bytes of input per seat.
func benchFrame() *roomwire.Frame {
	m := &roomwire.Frame{}
	for n := range 3 {
		f := roomwire.TickFrame{Number: 1000 + uint32(n)}
		for s := range 4 {
			f.Inputs = append(f.Inputs, roomwire.SeatInput{Seat: uint8(s), Data: seq(16, byte(n*4+s))})
		}
		m.Frames = append(m.Frames, f)
	}
	return m
}

// benchBatch is a full FRAME_BATCH of such frames.
func benchBatch() *roomwire.FrameBatch {
	m := &roomwire.FrameBatch{}
	for n := range roomwire.MaxFramesPerBatch {
		f := roomwire.TickFrame{Number: 1 + uint32(n)}
		for s := range 4 {
			f.Inputs = append(f.Inputs, roomwire.SeatInput{Seat: uint8(s), Data: seq(16, byte(n+s))})
		}
		m.Frames = append(m.Frames, f)
	}
	return m
}

func mustAppend(tb testing.TB, m roomwire.Message) []byte {
	tb.Helper()
	b, err := roomwire.Append(nil, m)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// TestHotPathsDoNotAllocate: the frame broadcast and the per-tick client
// messages allocate nothing once buffers and values are reused.
func TestHotPathsDoNotAllocate(t *testing.T) {
	frame := benchFrame()
	frameBytes := mustAppend(t, frame)
	batchBytes := mustAppend(t, benchBatch())
	input := &roomwire.Input{AckFrame: 99, Data: seq(32, 0)}
	inputBytes := mustAppend(t, input)
	pingBytes := mustAppend(t, &roomwire.Ping{ClientMS: 1, RTTMS: 2})

	buf := make([]byte, 0, 4096)
	var gotFrame roomwire.Frame
	var gotBatch roomwire.FrameBatch
	var gotInput roomwire.Input
	var gotPing roomwire.Ping
	var m roomwire.Message = frame
	tests := []struct {
		name string
		fn   func() error
	}{
		{"encode FRAME into a reused buffer", func() (err error) { buf, err = frame.AppendTo(buf[:0]); return err }},
		{"encode FRAME through Append", func() (err error) { buf, err = roomwire.Append(buf[:0], m); return err }},
		{"encode FRAME incrementally", func() error {
			buf = roomwire.AppendFramesHeader(buf[:0], roomwire.TypeFrame, len(frame.Frames))
			for i := range frame.Frames {
				buf = roomwire.AppendTickFrame(buf, &frame.Frames[i])
			}
			return nil
		}},
		{"decode FRAME into a reused value", func() error { return gotFrame.Unmarshal(frameBytes) }},
		{"decode FRAME_BATCH into a reused value", func() error { return gotBatch.Unmarshal(batchBytes) }},
		{"encode INPUT", func() (err error) { buf, err = input.AppendTo(buf[:0]); return err }},
		{"decode INPUT into a reused value", func() error { return gotInput.Unmarshal(inputBytes) }},
		{"peek and decode PING", func() error {
			if _, err := roomwire.Peek(pingBytes); err != nil {
				return err
			}
			return gotPing.Unmarshal(pingBytes)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.fn(); err != nil { // grows the reused buffers and values
				t.Fatal(err)
			}
			var err error
			allocs := testing.AllocsPerRun(100, func() {
				if e := tc.fn(); e != nil {
					err = e
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if allocs != 0 {
				t.Errorf("got %v allocations per run, want 0", allocs)
			}
		})
	}
	if string(buf) == "" || len(gotFrame.Frames) != 3 || len(gotBatch.Frames) != roomwire.MaxFramesPerBatch {
		t.Fatal("hot paths did not run")
	}
}

// bytesPerOp measures the heap bytes fn allocates per call. It counts
// bytes, not time.
func bytesPerOp(runs int, fn func()) uint64 {
	fn()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range runs {
		fn()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(runs)
}

// TestHostileInputsAllocateLittle: a few bytes that claim huge counts or
// lengths are rejected before anything is sized from the claim. Every
// decoder checks a length against its cap, and a count against the bytes
// left, before it allocates.
func TestHostileInputsAllocateLittle(t *testing.T) {
	tests := []struct {
		name string
		hex  string
	}{
		{"FRAME_BATCH claims 300 frames", "13ac0200000001"},
		{"FRAME_BATCH claims 255 inputs", "130100000001ff00"},
		{"FRAME claims 3 frames of 255 inputs", "110300000001ff00"},
		{"SNAPSHOT_PUT claims 65536 bytes", "4000000000808004"},
		{"SNAPSHOT claims 2^64-1 bytes", "4100000000ffffffffffffffffff01"},
		{"CUSTOM claims 1024 bytes", "20000000018008"},
		{"ERROR claims a 16384-byte result", "7f0100008080 01"},
		{"WELCOME claims 16 members", "020000000000011e01000000000000000010"},
		{"INPUT with a 10-byte length", "100000000080808080808080808001"},
	}
	const limit = 512 // bytes per decode: the message value and its error
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := mustHex(t, tc.hex)
			if _, err := roomwire.Decode(data); err == nil {
				t.Fatal("hostile input decoded")
			}
			if n := bytesPerOp(200, func() { _, _ = roomwire.Decode(data) }); n > limit {
				t.Errorf("Decode allocates %d bytes per call, want at most %d", n, limit)
			}
		})
	}
	t.Run("handshake claims a 65535-byte token", func(t *testing.T) {
		data := mustHex(t, "01ffff41")
		if n := bytesPerOp(200, func() { _, _ = roomwire.ParseHandshake(data) }); n > limit {
			t.Errorf("ParseHandshake allocates %d bytes per call, want at most %d", n, limit)
		}
	})
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	var h hexBytes
	if err := h.UnmarshalJSON([]byte(`"` + strings.ReplaceAll(s, " ", "") + `"`)); err != nil {
		t.Fatal(err)
	}
	return h
}
