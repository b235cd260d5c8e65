package frameassembly_test

import (
	"fmt"

	"github.com/switchboardgg/switchboard/protocol/frameassembly"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// A client's read loop: decode FRAME and FRAME_BATCH into reused values,
// hand the frames to the Assembler, play what it delivers, and send the
// FRAME_REQ it returns.
func Example() {
	// What the node sends: FRAME 1 and 2, then FRAMEs 3, 4 and 5 are lost
	// (a broken link), then FRAME 6, and the FRAME_BATCH answering the request.
	var wire [][]byte
	for _, m := range []roomwire.Message{
		&roomwire.Frame{Frames: tickFrames(1)},
		&roomwire.Frame{Frames: tickFrames(1, 2)},
		&roomwire.Frame{Frames: tickFrames(4, 5, 6)},
		&roomwire.FrameBatch{Frames: tickFrames(3, 4, 5)},
	} {
		b, err := roomwire.Append(nil, m)
		if err != nil {
			panic(err)
		}
		wire = append(wire, b)
	}

	a := frameassembly.New(0) // WELCOME.frame was 0
	var frame roomwire.Frame
	var batch roomwire.FrameBatch
	play := func(f roomwire.TickFrame) {
		fmt.Printf("play frame %d (%d inputs)\n", f.Number, len(f.Inputs))
	}
	for _, msg := range wire {
		var frames []roomwire.TickFrame
		switch t, _ := roomwire.Peek(msg); t {
		case roomwire.TypeFrame:
			if err := frame.Unmarshal(msg); err != nil {
				continue // an invalid message is dropped
			}
			frames = frame.Frames
		case roomwire.TypeFrameBatch:
			if err := batch.Unmarshal(msg); err != nil {
				continue
			}
			frames = batch.Frames
		}
		if req, ok := a.Push(frames, play); ok {
			b, _ := roomwire.Append(nil, &req)
			fmt.Printf("send FRAME_REQ %d-%d: % x\n", req.From, req.To, b)
		}
	}
	fmt.Println("INPUT.ack_frame =", a.Last())
	// Output:
	// play frame 1 (1 inputs)
	// play frame 2 (1 inputs)
	// send FRAME_REQ 3-5: 12 00 00 00 03 00 00 00 05
	// play frame 3 (1 inputs)
	// play frame 4 (1 inputs)
	// play frame 5 (1 inputs)
	// play frame 6 (1 inputs)
	// INPUT.ack_frame = 6
}

// tickFrames returns frames in which seat 0 pressed a button.
func tickFrames(ns ...uint32) []roomwire.TickFrame {
	fs := make([]roomwire.TickFrame, len(ns))
	for i, n := range ns {
		fs[i] = roomwire.TickFrame{Number: n, Inputs: []roomwire.SeatInput{{Seat: 0, Data: []byte{byte(n)}}}}
	}
	return fs
}
