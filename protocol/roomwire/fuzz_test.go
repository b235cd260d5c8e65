package roomwire_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// The fuzz targets are seeded from the shared vectors. Each checks that the
// decoder never panics, that a failure is exactly one of "invalid" (a
// *FieldError) or "unknown type", and that whatever decodes re-encodes to
// the same bytes. Run one for a minute with
//
//	go test -run='^$' -fuzz=FuzzDecode -fuzztime=60s ./protocol/roomwire

// addMessageSeeds adds every hex of messages.json.
func addMessageSeeds(f *testing.F) {
	mf := loadMessages(f)
	for _, mv := range mf.Messages {
		for _, v := range mv.Valid {
			f.Add([]byte(v.Hex))
		}
		for _, v := range mv.Invalid {
			f.Add([]byte(v.Hex))
		}
	}
	for _, v := range mf.UnknownTypes {
		f.Add([]byte(v.Hex))
	}
}

// addFrameSeeds adds the FRAME and FRAME_BATCH vectors of messages.json.
func addFrameSeeds(f *testing.F) {
	for _, mv := range loadMessages(f).Messages {
		t := roomwire.Type(mv.Type)
		if t != roomwire.TypeFrame && t != roomwire.TypeFrameBatch {
			continue
		}
		for _, v := range mv.Valid {
			f.Add([]byte(v.Hex))
		}
		for _, v := range mv.Invalid {
			f.Add([]byte(v.Hex))
		}
	}
}

// checkDecodeError fails unless err is exactly one of a *FieldError matching
// ErrInvalid, or ErrUnknownType.
func checkDecodeError(t *testing.T, data []byte, err error) {
	t.Helper()
	var fe *roomwire.FieldError
	field := errors.As(err, &fe)
	unknown := errors.Is(err, roomwire.ErrUnknownType)
	if field == unknown {
		t.Fatalf("%x: error %v is a FieldError: %v, unknown type: %v; want exactly one", data, err, field, unknown)
	}
	if field && (!errors.Is(err, roomwire.ErrInvalid) || fe.Field == "" || fe.Problem == "") {
		t.Fatalf("%x: malformed FieldError %#v", data, fe)
	}
	if unknown && (len(data) == 0 || roomwire.Type(data[0]).Known()) {
		t.Fatalf("%x: ErrUnknownType for a known type", data)
	}
}

func FuzzDecode(f *testing.F) {
	addMessageSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := roomwire.Decode(data)
		typ, perr := roomwire.Peek(data)
		if err != nil {
			checkDecodeError(t, data, err)
			if m != nil {
				t.Fatalf("%x: Decode returned %+v with error %v", data, m, err)
			}
			if perr == nil {
				// Peek accepted the type: the typed decoder must fail the same way.
				err2 := roomwire.New(typ).Unmarshal(data)
				var fe, fe2 *roomwire.FieldError
				if !errors.As(err, &fe) || !errors.As(err2, &fe2) || *fe != *fe2 {
					t.Fatalf("%x: Decode error %v, %s.Unmarshal error %v", data, err, typ, err2)
				}
			}
			return
		}
		if perr != nil || typ != m.Type() || byte(typ) != data[0] {
			t.Fatalf("%x: decoded %s but Peek = %v, %v", data, m.Type(), typ, perr)
		}
		enc, err := roomwire.Append(nil, m)
		if err != nil {
			t.Fatalf("%x: decoded %+v does not re-encode: %v", data, m, err)
		}
		if !bytes.Equal(enc, data) {
			t.Fatalf("re-encoding differs\n in  %x\n out %x", data, enc)
		}
	})
}

// frameCodec is what FRAME and FRAME_BATCH share.
type frameCodec interface {
	roomwire.Message
	frames() []roomwire.TickFrame
}

type frameMsg struct{ roomwire.Frame }

func (m *frameMsg) frames() []roomwire.TickFrame { return m.Frames }

type batchMsg struct{ roomwire.FrameBatch }

func (m *batchMsg) frames() []roomwire.TickFrame { return m.Frames }

// fuzzFrames decodes data into a fresh value and into a reused, dirty one
// (which first held the largest frames vector), and checks both agree and
// re-encode to data.
func fuzzFrames(t *testing.T, data []byte, fresh, reused frameCodec, dirty []byte) {
	if err := reused.Unmarshal(dirty); err != nil {
		t.Fatalf("dirty seed: %v", err)
	}
	err := fresh.Unmarshal(data)
	err2 := reused.Unmarshal(data)
	if err != nil {
		checkDecodeError(t, data, err)
		var fe, fe2 *roomwire.FieldError
		if !errors.As(err, &fe) || !errors.As(err2, &fe2) || *fe != *fe2 {
			t.Fatalf("%x: fresh error %v, reused error %v", data, err, err2)
		}
		if len(fresh.frames()) != 0 || len(reused.frames()) != 0 {
			t.Fatalf("%x: frames left after error", data)
		}
		return
	}
	if err2 != nil {
		t.Fatalf("%x: fresh decodes, reused fails: %v", data, err2)
	}
	for _, m := range []frameCodec{fresh, reused} {
		enc, err := m.AppendTo(nil)
		if err != nil {
			t.Fatalf("%x: does not re-encode: %v", data, err)
		}
		if !bytes.Equal(enc, data) {
			t.Fatalf("re-encoding differs\n in  %x\n out %x", data, enc)
		}
		// The incremental encoder gives the same bytes.
		inc := roomwire.AppendFramesHeader(nil, m.Type(), len(m.frames()))
		for i := range m.frames() {
			f := &m.frames()[i]
			before := len(inc)
			inc = roomwire.AppendTickFrame(inc, f)
			if len(inc)-before != roomwire.TickFrameSize(f) {
				t.Fatalf("TickFrameSize = %d, encoded %d", roomwire.TickFrameSize(f), len(inc)-before)
			}
		}
		if !bytes.Equal(inc, data) {
			t.Fatalf("incremental encoding differs\n in  %x\n out %x", data, inc)
		}
	}
}

// largest returns the longest valid vector of type typ.
func largest(f *testing.F, typ roomwire.Type) []byte {
	var best []byte
	for _, mv := range loadMessages(f).Messages {
		if roomwire.Type(mv.Type) != typ {
			continue
		}
		for _, v := range mv.Valid {
			if len(v.Hex) > len(best) {
				best = v.Hex
			}
		}
	}
	return best
}

func FuzzFrameUnmarshal(f *testing.F) {
	addFrameSeeds(f)
	dirty := largest(f, roomwire.TypeFrame)
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzFrames(t, data, new(frameMsg), new(frameMsg), dirty)
	})
}

func FuzzFrameBatchUnmarshal(f *testing.F) {
	addFrameSeeds(f)
	dirty := largest(f, roomwire.TypeFrameBatch)
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzFrames(t, data, new(batchMsg), new(batchMsg), dirty)
	})
}

func FuzzParseHandshake(f *testing.F) {
	for _, v := range loadHandshakes(f).Valid {
		f.Add([]byte(v.Hex))
	}
	for _, v := range loadHandshakes(f).Invalid {
		f.Add([]byte(v.Hex))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := roomwire.ParseHandshake(data)
		if err != nil {
			var fe *roomwire.FieldError
			if !errors.As(err, &fe) || !errors.Is(err, roomwire.ErrInvalid) || errors.Is(err, roomwire.ErrUnknownType) {
				t.Fatalf("%x: error %v is not an invalid-handshake FieldError", data, err)
			}
			if h.Hello != nil || h.Resume != nil || h.Token != nil || h.Kind != 0 {
				t.Fatalf("%x: ParseHandshake returned %+v with its error", data, h)
			}
			return
		}
		var msg roomwire.Message
		switch {
		case h.Kind == roomwire.KindHello && h.Hello != nil && h.Resume == nil:
			msg = h.Hello
		case h.Kind == roomwire.KindResume && h.Resume != nil && h.Hello == nil:
			msg = h.Resume
		default:
			t.Fatalf("%x: inconsistent handshake %+v", data, h)
		}
		enc, err := roomwire.AppendHandshake(nil, h.Kind, h.Token, msg)
		if err != nil {
			t.Fatalf("%x: parsed handshake does not re-encode: %v", data, err)
		}
		if !bytes.Equal(enc, data) {
			t.Fatalf("re-encoding differs\n in  %x\n out %x", data, enc)
		}
	})
}
