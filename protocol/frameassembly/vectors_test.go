package frameassembly_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/switchboardgg/switchboard/protocol/frameassembly"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// vectorFile is frames.json, shared with every SDK.
type vectorFile struct {
	Format          string           `json:"format"`
	ProtocolVersion int              `json:"protocol_version"`
	MaxBuffered     int              `json:"max_buffered"`
	Scenarios       []vectorScenario `json:"scenarios"`
}

type vectorScenario struct {
	Name         string       `json:"name"`
	WelcomeFrame uint32       `json:"welcome_frame"`
	Steps        []vectorStep `json:"steps"`
}

type vectorStep struct {
	Frames   []uint32   `json:"frames"`   // a FRAME or FRAME_BATCH, or
	Snapshot *uint32    `json:"snapshot"` // a SNAPSHOT
	Deliver  []uint32   `json:"deliver"`
	Request  *vectorReq `json:"request"`
	Buffered *int       `json:"buffered"`
}

type vectorReq struct {
	From uint32 `json:"from"`
	To   uint32 `json:"to"`
}

func loadVectors(t *testing.T) vectorFile {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "roomwire", "frames.json"))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var v vectorFile
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("frames.json: %v", err)
	}
	return v
}

// TestVectors replays every scenario of testdata/roomwire/frames.json.
func TestVectors(t *testing.T) {
	v := loadVectors(t)
	if v.Format == "" || v.ProtocolVersion != 1 {
		t.Fatalf("frames.json: format %q, protocol_version %d", v.Format, v.ProtocolVersion)
	}
	if v.MaxBuffered != frameassembly.MaxBuffered {
		t.Fatalf("max_buffered: got %d, want %d", v.MaxBuffered, frameassembly.MaxBuffered)
	}
	if len(v.Scenarios) == 0 {
		t.Fatal("frames.json has no scenarios")
	}
	for _, sc := range v.Scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			a := frameassembly.New(sc.WelcomeFrame)
			for i, st := range sc.Steps {
				if (st.Snapshot == nil) == (st.Frames == nil) || st.Deliver == nil || st.Buffered == nil {
					t.Fatalf("step %d: needs exactly one of frames and snapshot, and deliver and buffered", i)
				}
				var got []uint32
				deliver := func(f roomwire.TickFrame) { got = append(got, f.Number) }
				var req *vectorReq
				if st.Snapshot != nil {
					a.Snapshot(*st.Snapshot, deliver)
				} else {
					frames := make([]roomwire.TickFrame, len(st.Frames))
					for j, n := range st.Frames {
						frames[j].Number = n
					}
					if r, ok := a.Push(frames, deliver); ok {
						req = &vectorReq{From: r.From, To: r.To}
					}
				}
				if !slices.Equal(got, st.Deliver) {
					t.Errorf("step %d: delivered %v, want %v", i, got, st.Deliver)
				}
				if !equalReq(req, st.Request) {
					t.Errorf("step %d: request %s, want %s", i, fmtReq(req), fmtReq(st.Request))
				}
				if a.Buffered() != *st.Buffered {
					t.Errorf("step %d: buffered %d, want %d", i, a.Buffered(), *st.Buffered)
				}
			}
		})
	}
}

func equalReq(a, b *vectorReq) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func fmtReq(r *vectorReq) string {
	if r == nil {
		return "null"
	}
	b, _ := json.Marshal(r)
	return string(b)
}
