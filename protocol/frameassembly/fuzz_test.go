package frameassembly_test

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/switchboardgg/switchboard/protocol/frameassembly"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// model is the algorithm as frames.json states it, written as plainly as
// possible (a map for the buffer), to check the ring of the Assembler.
type model struct {
	next, newest, reqNext uint64
	buf                   map[uint64]bool
}

func newModel(welcome uint32) *model {
	return &model{next: uint64(welcome) + 1, buf: map[uint64]bool{}}
}

func (m *model) drain() (out []uint32) {
	for m.buf[m.next] {
		delete(m.buf, m.next)
		out = append(out, uint32(m.next))
		m.next++
	}
	return out
}

func (m *model) push(ns []uint32) ([]uint32, *roomwire.FrameReq) {
	for _, n32 := range ns {
		n := uint64(n32)
		if n < m.next {
			continue
		}
		m.newest = max(m.newest, n)
		if n < m.next+frameassembly.MaxBuffered {
			m.buf[n] = true
		}
	}
	out := m.drain()
	if m.newest >= m.next+3 && m.reqNext != m.next {
		m.reqNext = m.next
		return out, &roomwire.FrameReq{From: uint32(m.next), To: uint32(m.newest - 1)}
	}
	return out, nil
}

func (m *model) snapshot(frame uint32) []uint32 {
	m.next = uint64(frame) + 1
	for n := range m.buf {
		if n < m.next || n >= m.next+frameassembly.MaxBuffered {
			delete(m.buf, n)
		}
	}
	return m.drain()
}

// fuzzOps reads a byte string as a sequence of operations; every number is
// relative to the Assembler's next so that the interesting region is hit.
type fuzzOps struct{ b []byte }

func (o *fuzzOps) byte() byte {
	if len(o.b) == 0 {
		return 0
	}
	c := o.b[0]
	o.b = o.b[1:]
	return c
}

// frame returns a frame number near next: mostly within a couple of windows
// of it, sometimes at the top of the u32 range.
func (o *fuzzOps) frame(next uint32) uint32 {
	v := binary.BigEndian.Uint16([]byte{o.byte(), o.byte()})
	if v >= 0xFF00 {
		return math.MaxUint32 - uint32(v&0xFF)
	}
	d := int64(v%(2*frameassembly.MaxBuffered+128)) - 64
	return uint32(max(0, min(math.MaxUint32, int64(next)+d)))
}

// FuzzAssembler feeds random messages, snapshots, catch-ups and resets and
// checks the invariants: delivered frames are consecutive from Last()+1 and
// never repeat between two resets of next; their contents are those pushed
// even though the pushed bytes are overwritten; the buffer stays within
// MaxBuffered; a request starts at next, spans at least 3 frames and comes
// once per next; and everything matches the plain model.
func FuzzAssembler(f *testing.F) {
	f.Add([]byte{0, 1, 0, 1})
	f.Add([]byte{0, 3, 0, 66, 0, 65, 0, 64, 0, 2, 0, 70, 0, 71, 0, 3, 0, 64, 0, 65, 0, 66})
	f.Add([]byte{0, 1, 2, 90, 12, 0, 80, 0, 1, 0, 65})
	f.Add([]byte{0, 2, 0xFF, 0x01, 0, 66, 14, 1, 0, 15, 0, 2})
	f.Add([]byte{9, 40, 0, 70, 0, 71, 0, 72, 0, 73, 0, 74, 0, 75, 0, 76, 0, 64, 0, 65, 0, 66, 13, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		ops := fuzzOps{data}
		a := frameassembly.New(0)
		m := newModel(0)
		var scratch []byte
		var msg []roomwire.TickFrame
		var nums []uint32
		for steps := 0; len(ops.b) > 0 && steps < 200; steps++ {
			before := a.Last()
			var got []uint32
			var kept []roomwire.TickFrame // what deliver handed out, as handed
			deliver := func(fr roomwire.TickFrame) {
				want, _ := frameOf(fr.Number, nil)
				if !sameFrame(fr, want) {
					t.Fatalf("frame %d: contents %+v, want %+v", fr.Number, fr, want)
				}
				got = append(got, fr.Number)
				kept = append(kept, fr)
			}
			var want []uint32
			var req, wantReq *roomwire.FrameReq
			switch op := ops.byte() % 16; {
			case op < 12: // a FRAME (≤ 3 frames) or a FRAME_BATCH (≤ 40 here)
				k := 1 + int(ops.byte())%3
				if op >= 9 {
					k = 1 + int(ops.byte())%40
				}
				msg, nums, scratch = msg[:0], nums[:0], scratch[:0]
				for range k {
					n := ops.frame(a.Next())
					var fr roomwire.TickFrame
					fr, scratch = frameOf(n, scratch)
					msg = append(msg, fr)
					nums = append(nums, n)
				}
				if r, ok := a.Push(msg, deliver); ok {
					req = &r
				}
				for i := range scratch {
					scratch[i] = 0xEE // the transport reuses its read buffer
				}
				want, wantReq = m.push(nums)
				if req != nil {
					if req.From != a.Next() || req.To < req.From+2 {
						t.Fatalf("request %+v at next %d", *req, a.Next())
					}
				}
			case op < 14:
				s := ops.frame(a.Next())
				a.Snapshot(s, deliver)
				want = m.snapshot(s)
				before = s
			case op == 14:
				w := ops.frame(a.Next())
				r, ok := a.CatchUp(w)
				m.reqNext = 0
				if uint64(w) >= m.next {
					m.reqNext = m.next
					wantReq = &roomwire.FrameReq{From: uint32(m.next), To: w}
				}
				if ok {
					req = &r
				}
			default:
				w := ops.frame(a.Next())
				a.Reset(w)
				m = newModel(w)
				before = w
			}
			if len(got) != len(want) {
				t.Fatalf("step %d: delivered %v, model %v", steps, got, want)
			}
			for i, n := range got {
				if n != want[i] {
					t.Fatalf("step %d: delivered %v, model %v", steps, got, want)
				}
				if uint64(n) != uint64(before)+1+uint64(i) {
					t.Fatalf("step %d: delivered %v after %d: not consecutive", steps, got, before)
				}
			}
			if !equalFrameReq(req, wantReq) {
				t.Fatalf("step %d: request %v, model %v", steps, req, wantReq)
			}
			if a.Buffered() != len(m.buf) || a.Buffered() > frameassembly.MaxBuffered {
				t.Fatalf("step %d: buffered %d, model %d, bound %d", steps, a.Buffered(), len(m.buf), frameassembly.MaxBuffered)
			}
			if uint64(a.Next()) != m.next&math.MaxUint32 {
				t.Fatalf("step %d: next %d, model %d", steps, a.Next(), m.next)
			}
			// Delivered frames stay valid until the next call.
			for _, fr := range kept {
				if want, _ := frameOf(fr.Number, nil); !sameFrame(fr, want) {
					t.Fatalf("step %d: frame %d changed after delivery", steps, fr.Number)
				}
			}
		}
	})
}

func equalFrameReq(a, b *roomwire.FrameReq) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
