package p2pwire_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// vectorDir holds the shared P2P test vectors.
const vectorDir = "../../testdata/p2pwire"

// hexBytes is a byte string, written as lowercase hex in the vectors.
type hexBytes []byte

func (h hexBytes) MarshalJSON() ([]byte, error) { return json.Marshal(hex.EncodeToString(h)) }

func (h *hexBytes) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if s != strings.ToLower(s) {
		return fmt.Errorf("hex must be lowercase: %.40q", s)
	}
	p, err := hex.DecodeString(s)
	if err != nil {
		return err
	}
	*h = p
	return nil
}

// The files' JSON shapes. Unknown top-level keys ("about", "hand_written")
// are documentation.

type messagesFile struct {
	ProtocolVersion int              `json:"protocol_version"`
	Messages        []kindVectors    `json:"messages"`
	RoutingInvalid  []invalidVector  `json:"routing_invalid"`
	UnknownKinds    []unknownVector  `json:"unknown_kinds"`
	Stamping        []stampVector    `json:"stamping"`
	HubRefuses      []unknownVector  `json:"hub_refuses"`
	PeerRefuses     []unknownVector  `json:"peer_refuses"`
	Envelopes       []envelopeVector `json:"envelopes"`
}

type kindVectors struct {
	Kind    int             `json:"kind"`
	Name    string          `json:"name"`
	Valid   []validVector   `json:"valid"`
	Invalid []invalidVector `json:"invalid"`
}

type validVector struct {
	Name   string          `json:"name"`
	Fields json.RawMessage `json:"fields"`
	Hex    hexBytes        `json:"hex"`
}

type invalidVector struct {
	Name   string   `json:"name"`
	Hex    hexBytes `json:"hex"`
	Field  string   `json:"field"`
	Reason string   `json:"reason"`
}

type unknownVector struct {
	Name string   `json:"name"`
	Hex  hexBytes `json:"hex"`
}

type stampVector struct {
	Name      string   `json:"name"`
	Body      hexBytes `json:"body"`
	From      string   `json:"from"`
	Delivered hexBytes `json:"delivered"`
}

type envelopeVector struct {
	Name   string          `json:"name"`
	Fields json.RawMessage `json:"fields"`
	Hex    hexBytes        `json:"hex"`
}

type framingFile struct {
	Streams []struct {
		Name   string     `json:"name"`
		Max    int        `json:"max"`
		Hex    hexBytes   `json:"hex"`
		Bodies []hexBytes `json:"bodies"`
		Error  string     `json:"error"`
	} `json:"streams"`
}

type datagramsFile struct {
	Sealed []struct {
		Name      string   `json:"name"`
		Hex       hexBytes `json:"hex"`
		KeyID     uint32   `json:"key_id"`
		Seq       uint64   `json:"seq"`
		Nonce     hexBytes `json:"nonce"`
		SealedLen int      `json:"sealed_len"`
	} `json:"sealed"`
	SealedInvalid []invalidVector `json:"sealed_invalid"`
	Jumbo         []struct {
		Total     int `json:"total"`
		Count     int `json:"count"`
		LastChunk int `json:"last_chunk"`
	} `json:"jumbo_sizes"`
}

func readJSON(t testing.TB, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(vectorDir, name))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func loadMessages(t testing.TB) *messagesFile {
	var f messagesFile
	readJSON(t, "messages.json", &f)
	if f.ProtocolVersion != p2pwire.Version || len(f.Messages) == 0 {
		t.Fatalf("messages.json: version %d, %d kinds", f.ProtocolVersion, len(f.Messages))
	}
	return &f
}

// canonJSON re-encodes a message's JSON so that two messages compare equal
// exactly when their fields do.
func canonJSON(t testing.TB, m p2pwire.Message) string {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func fieldsOf(t testing.TB, k p2pwire.Kind, raw json.RawMessage) p2pwire.Message {
	t.Helper()
	m := p2pwire.New(k)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(m); err != nil {
		t.Fatalf("fields %s: %v", raw, err)
	}
	return m
}

// checkFieldError fails unless err is a *FieldError matching ErrInvalid with
// the given field and problem.
func checkFieldError(t *testing.T, err error, field, reason string) {
	t.Helper()
	var fe *p2pwire.FieldError
	if !errors.As(err, &fe) || !errors.Is(err, p2pwire.ErrInvalid) {
		t.Fatalf("error %v; want a FieldError %s/%s", err, field, reason)
	}
	if fe.Field != field || fe.Problem != reason {
		t.Fatalf("error %v: field %q problem %q; want %q %q", err, fe.Field, fe.Problem, field, reason)
	}
}

// TestVectorsMessages replays messages.json: every valid item encodes from
// its fields to its hex and decodes back, with Decode and with its kind's
// Unmarshal; every invalid item fails with its field and reason.
func TestVectorsMessages(t *testing.T) {
	f := loadMessages(t)
	seen := map[p2pwire.Kind]bool{}
	for _, kv := range f.Messages {
		k := p2pwire.Kind(kv.Kind)
		if k.String() != kv.Name || !k.Known() {
			t.Fatalf("kind %d is named %q, want %q", kv.Kind, kv.Name, k)
		}
		seen[k] = true
		if len(kv.Valid) == 0 || len(kv.Invalid) == 0 {
			t.Errorf("%s: %d valid and %d invalid items; want some of each", k, len(kv.Valid), len(kv.Invalid))
		}
		for _, v := range kv.Valid {
			t.Run(kv.Name+"/valid/"+v.Name, func(t *testing.T) {
				want := fieldsOf(t, k, v.Fields)
				enc, err := p2pwire.Append(nil, want)
				if err != nil {
					t.Fatalf("encode: %v", err)
				}
				if !bytes.Equal(enc, v.Hex) {
					t.Fatalf("encode:\n got %x\nwant %x", enc, []byte(v.Hex))
				}
				got, err := p2pwire.Decode(v.Hex)
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				if g, w := canonJSON(t, got), canonJSON(t, want); g != w {
					t.Fatalf("decode:\n got %s\nwant %s", g, w)
				}
				typed := p2pwire.New(k)
				if err := typed.Unmarshal(v.Hex); err != nil || canonJSON(t, typed) != canonJSON(t, want) {
					t.Fatalf("%s.Unmarshal: %v, %s", k, err, canonJSON(t, typed))
				}
				h, err := p2pwire.DecodeRouting(v.Hex)
				if err != nil || h.Kind != k {
					t.Fatalf("DecodeRouting: %+v, %v", h, err)
				}
			})
		}
		for _, v := range kv.Invalid {
			t.Run(kv.Name+"/invalid/"+v.Name, func(t *testing.T) {
				m := p2pwire.New(k)
				err := m.Unmarshal(v.Hex)
				checkFieldError(t, err, v.Field, v.Reason)
				if canonJSON(t, m) != canonJSON(t, p2pwire.New(k)) {
					t.Fatalf("a failed Unmarshal left %s", canonJSON(t, m))
				}
				if v.Reason == p2pwire.ProblemWrongKind {
					return
				}
				if _, err := p2pwire.Decode(v.Hex); err == nil {
					t.Fatal("Decode accepted it")
				}
			})
		}
	}
	for k := 0; k < 256; k++ {
		if p2pwire.Kind(k).Known() != seen[p2pwire.Kind(k)] {
			t.Errorf("kind %#x: known %v, in messages.json %v", k, p2pwire.Kind(k).Known(), seen[p2pwire.Kind(k)])
		}
	}
	for _, v := range f.RoutingInvalid {
		t.Run("routing_invalid/"+v.Name, func(t *testing.T) {
			_, err := p2pwire.DecodeRouting(v.Hex)
			checkFieldError(t, err, v.Field, v.Reason)
			_, err = p2pwire.Decode(v.Hex)
			checkFieldError(t, err, v.Field, v.Reason)
			var fe *p2pwire.FieldError
			if errors.As(err, &fe); fe.Kind != p2pwire.KindNone {
				t.Fatalf("routing error names kind %s", fe.Kind)
			}
		})
	}
	for _, v := range f.UnknownKinds {
		t.Run("unknown_kinds/"+v.Name, func(t *testing.T) {
			if _, err := p2pwire.DecodeRouting(v.Hex); err != p2pwire.ErrUnknownKind {
				t.Fatalf("DecodeRouting: %v", err)
			}
			if _, err := p2pwire.Decode(v.Hex); err != p2pwire.ErrUnknownKind || errors.Is(err, p2pwire.ErrInvalid) {
				t.Fatalf("Decode: %v", err)
			}
		})
	}
	for _, v := range f.Stamping {
		t.Run("stamping/"+v.Name, func(t *testing.T) {
			h, err := p2pwire.DecodeRouting(v.Body)
			if err != nil || !h.FromPeer() {
				t.Fatalf("DecodeRouting: %+v, %v", h, err)
			}
			hdr, err := p2pwire.AppendStampedFrameHeader(nil, &h, []byte(v.From), len(v.Body))
			if err != nil {
				t.Fatal(err)
			}
			got := append(hdr, v.Body[h.Size:]...)
			if !bytes.Equal(got, v.Delivered) {
				t.Fatalf("delivered\n got %x\nwant %x", got, []byte(v.Delivered))
			}
			body, err := p2pwire.ReadFrame(bytes.NewReader(got), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			d, err := p2pwire.DecodeRouting(body)
			if err != nil || string(d.From) != v.From || d.To != nil || d.Broadcast() != h.Broadcast() || d.FromPeer() {
				t.Fatalf("delivered routing %+v, %v", d, err)
			}
			if _, err := p2pwire.Decode(body); err != nil {
				t.Fatalf("delivered body does not decode: %v", err)
			}
		})
	}
	for _, v := range f.HubRefuses {
		t.Run("hub_refuses/"+v.Name, func(t *testing.T) {
			h, err := p2pwire.DecodeRouting(v.Hex)
			if err != nil {
				t.Fatalf("DecodeRouting: %v; the item must decode", err)
			}
			if h.FromPeer() {
				t.Fatalf("FromPeer true for %+v", h)
			}
		})
	}
	for _, v := range f.PeerRefuses {
		t.Run("peer_refuses/"+v.Name, func(t *testing.T) {
			h, err := p2pwire.DecodeRouting(v.Hex)
			if err != nil {
				t.Fatalf("DecodeRouting: %v; the item must decode", err)
			}
			if !h.Kind.ToHubOnly() || h.Kind.FromHubOnly() || !h.FromPeer() {
				t.Fatalf("%s: ToHubOnly %v, FromHubOnly %v, FromPeer %v", h.Kind, h.Kind.ToHubOnly(), h.Kind.FromHubOnly(), h.FromPeer())
			}
		})
	}
	for _, v := range f.Envelopes {
		t.Run("envelopes/"+v.Name, func(t *testing.T) {
			var want p2pwire.Envelope
			if err := json.Unmarshal(v.Fields, &want); err != nil {
				t.Fatal(err)
			}
			enc, err := want.AppendTo(nil)
			if err != nil || !bytes.Equal(enc, v.Hex) {
				t.Fatalf("encode: %x, %v; want %x", enc, err, []byte(v.Hex))
			}
			var got p2pwire.Envelope
			if err := got.Unmarshal(v.Hex); err != nil {
				t.Fatal(err)
			}
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			if !bytes.Equal(g, w) {
				t.Fatalf("decode: %s; want %s", g, w)
			}
		})
	}
}

// TestVectorsFraming replays framing.json through ReadFrame.
func TestVectorsFraming(t *testing.T) {
	var f framingFile
	readJSON(t, "framing.json", &f)
	if len(f.Streams) == 0 {
		t.Fatal("no streams")
	}
	for _, s := range f.Streams {
		t.Run(s.Name, func(t *testing.T) {
			r := bytes.NewReader(s.Hex)
			for i, want := range s.Bodies {
				got, err := p2pwire.ReadFrame(r, nil, s.Max)
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("frame %d: %x, %v; want %x", i, got, err, []byte(want))
				}
			}
			_, err := p2pwire.ReadFrame(r, nil, s.Max)
			switch s.Error {
			case "":
				if err != io.EOF {
					t.Fatalf("after the frames: %v, want io.EOF", err)
				}
			case "unexpected_eof":
				if !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("error %v, want unexpected EOF", err)
				}
			default:
				checkFieldError(t, err, "frame_length", s.Error)
				if s.Error == p2pwire.ProblemTooLarge && !errors.Is(err, p2pwire.ErrFrameTooLarge) {
					t.Fatalf("%v does not match ErrFrameTooLarge", err)
				}
			}
		})
	}
}

// TestVectorsDatagrams replays datagrams.json: sealed prefixes and jumbo
// sizes.
func TestVectorsDatagrams(t *testing.T) {
	var f datagramsFile
	readJSON(t, "datagrams.json", &f)
	for _, v := range f.Sealed {
		t.Run("sealed/"+v.Name, func(t *testing.T) {
			h, ad, sealed, err := p2pwire.ParseSealed(v.Hex)
			if err != nil {
				t.Fatal(err)
			}
			n := h.Nonce()
			if h.KeyID != v.KeyID || h.Seq != v.Seq || !bytes.Equal(n[:], v.Nonce) || len(sealed) != v.SealedLen ||
				!bytes.Equal(ad, v.Hex[:p2pwire.SealedHeaderSize]) {
				t.Fatalf("got %+v nonce %x sealed %d", h, n, len(sealed))
			}
			enc, err := p2pwire.AppendSealedHeader(nil, h)
			if err != nil || !bytes.Equal(enc, ad) {
				t.Fatalf("AppendSealedHeader: %x, %v", enc, err)
			}
		})
	}
	for _, v := range f.SealedInvalid {
		t.Run("sealed_invalid/"+v.Name, func(t *testing.T) {
			_, _, _, err := p2pwire.ParseSealed(v.Hex)
			checkFieldError(t, err, v.Field, v.Reason)
		})
	}
	for _, v := range f.Jumbo {
		if got := p2pwire.JumboCount(v.Total); got != v.Count {
			t.Errorf("JumboCount(%d) = %d, want %d", v.Total, got, v.Count)
		}
		if v.Count == 0 {
			continue
		}
		if last := p2pwire.JumboChunk(make([]byte, v.Total), v.Count-1); len(last) != v.LastChunk {
			t.Errorf("total %d: last chunk %d bytes, want %d", v.Total, len(last), v.LastChunk)
		}
	}
}
