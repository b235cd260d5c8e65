package p2pwire_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// The fuzz targets are seeded from the shared vectors. Run one for a minute
// with
//
//	go test -run='^$' -fuzz=FuzzDecode -fuzztime=60s -fuzzminimizetime=1x ./protocol/p2pwire
//
// (-fuzzminimizetime=1x: some seeds are tens of kilobytes, and minimizing
// every new interesting input that large stalls the run.)

func addMessageSeeds(f *testing.F) {
	mf := loadMessages(f)
	for _, kv := range mf.Messages {
		for _, v := range kv.Valid {
			f.Add([]byte(v.Hex))
		}
		for _, v := range kv.Invalid {
			f.Add([]byte(v.Hex))
		}
	}
	for _, v := range mf.RoutingInvalid {
		f.Add([]byte(v.Hex))
	}
	for _, v := range mf.UnknownKinds {
		f.Add([]byte(v.Hex))
	}
	for _, v := range mf.HubRefuses {
		f.Add([]byte(v.Hex))
	}
	for _, v := range mf.PeerRefuses {
		f.Add([]byte(v.Hex))
	}
	for _, v := range mf.Stamping {
		f.Add([]byte(v.Body))
	}
}

// checkDecodeError fails unless err is exactly one of a well-formed
// *FieldError matching ErrInvalid, or ErrUnknownKind.
func checkDecodeError(t *testing.T, data []byte, err error) {
	t.Helper()
	var fe *p2pwire.FieldError
	field := errors.As(err, &fe)
	unknown := err == p2pwire.ErrUnknownKind
	if field == unknown {
		t.Fatalf("%x: error %v: FieldError %v, unknown kind %v; want exactly one", data, err, field, unknown)
	}
	if field && (!errors.Is(err, p2pwire.ErrInvalid) || fe.Field == "" || fe.Problem == "") {
		t.Fatalf("%x: malformed FieldError %#v", data, fe)
	}
}

// FuzzDecode checks that Decode, DecodeRouting and the typed decoders never
// panic, fail only with the documented errors, agree with each other, and
// that whatever decodes re-encodes to the same bytes.
func FuzzDecode(f *testing.F) {
	addMessageSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		in := bytes.Clone(data)
		m, err := p2pwire.Decode(data)
		r, rerr := p2pwire.DecodeRouting(data)
		if !bytes.Equal(in, data) {
			t.Fatal("a decoder modified its input")
		}
		if rerr != nil {
			checkDecodeError(t, data, rerr)
			if err != rerr {
				t.Fatalf("%x: DecodeRouting error %v, Decode error %v", data, rerr, err)
			}
			return
		}
		if r.Size > len(data) || r.Size < 2 {
			t.Fatalf("%x: routing size %d", data, r.Size)
		}
		typed := p2pwire.New(r.Kind)
		terr := typed.Unmarshal(data)
		if err != nil {
			checkDecodeError(t, data, err)
			if m != nil {
				t.Fatalf("%x: Decode returned %v with error %v", data, m, err)
			}
			if terr == nil || terr.Error() != err.Error() {
				t.Fatalf("%x: Decode error %v, %s.Unmarshal error %v", data, err, r.Kind, terr)
			}
			return
		}
		if terr != nil {
			t.Fatalf("%x: Decode ok, %s.Unmarshal: %v", data, r.Kind, terr)
		}
		enc, err := p2pwire.Append(nil, m)
		if err != nil {
			t.Fatalf("%x: decoded %+v does not encode: %v", data, m, err)
		}
		if !bytes.Equal(enc, data) {
			t.Fatalf("re-encoding changed the bytes:\n in %x\nout %x", data, enc)
		}
		if r.Kind.FromHubOnly() && r.Kind.ToHubOnly() || r.Kind.ToHubOnly() && !r.FromPeer() {
			t.Fatalf("%s: from the hub only %v, to the hub only %v, from a peer %v", r.Kind, r.Kind.FromHubOnly(), r.Kind.ToHubOnly(), r.FromPeer())
		}
		if k := r.Kind; k == p2pwire.KindPathChallenge || k == p2pwire.KindPathResponse {
			// Exactly the routing header and 8 bytes of data, whatever else the input held.
			if len(data) != 2+p2pwire.PathDataSize {
				t.Fatalf("%s of %d bytes decoded", k, len(data))
			}
		}
		if r.Kind.Routed() && r.FromPeer() {
			// What the hub delivers decodes as the same message, from the stamped sender.
			hdr, err := p2pwire.AppendStampedFrameHeader(nil, &r, []byte(strings.Repeat("s", p2pwire.MaxPeerIDLen)), len(data))
			if err != nil {
				if errors.Is(err, p2pwire.ErrFrameTooLarge) {
					return
				}
				t.Fatalf("%x: stamping: %v", data, err)
			}
			d := append(hdr[p2pwire.FrameHeaderSize:], data[r.Size:]...)
			dm, err := p2pwire.Decode(d)
			if err != nil {
				t.Fatalf("%x: delivered %x does not decode: %v", data, d, err)
			}
			if dm.Kind() != r.Kind {
				t.Fatalf("delivered kind %s", dm.Kind())
			}
		}
	})
}

// FuzzEnvelope checks bare envelopes: never a panic, only FieldErrors, and
// re-encoding gives the same bytes.
func FuzzEnvelope(f *testing.F) {
	mf := loadMessages(f)
	for _, v := range mf.Envelopes {
		f.Add([]byte(v.Hex))
	}
	for _, kv := range mf.Messages {
		for _, v := range kv.Valid {
			if r, err := p2pwire.DecodeRouting(v.Hex); err == nil && r.Kind.Routed() {
				f.Add([]byte(v.Hex[r.Size:]))
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var e p2pwire.Envelope
		if err := e.Unmarshal(data); err != nil {
			checkDecodeError(t, data, err)
			return
		}
		enc, err := e.AppendTo(nil)
		if err != nil || !bytes.Equal(enc, data) {
			t.Fatalf("re-encoding: %x, %v; in %x", enc, err, data)
		}
	})
}

// FuzzReadFrame checks that ReadFrame never returns a body over its maximum
// or under MinFrameSize, and that it fails only with the documented errors.
// The maximum is kept at 64 KiB and under (TestVectorsFraming covers the
// default), so that each input allocates little.
func FuzzReadFrame(f *testing.F) {
	var ff framingFile
	readJSON(f, "framing.json", &ff)
	for _, s := range ff.Streams {
		f.Add([]byte(s.Hex), uint16(min(s.Max, 1<<16-1)))
	}
	f.Fuzz(func(t *testing.T, data []byte, max uint16) {
		limit := max16(max)
		r := bytes.NewReader(data)
		buf := make([]byte, 0, 64)
		for {
			body, err := p2pwire.ReadFrame(r, buf, limit)
			if err != nil {
				var fe *p2pwire.FieldError
				if err != ioEOF && !errors.Is(err, errUnexpectedEOF) && !errors.As(err, &fe) {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if len(body) > limit || len(body) < p2pwire.MinFrameSize {
				t.Fatalf("body of %d bytes with max %d", len(body), limit)
			}
		}
	})
}

// max16 maps the fuzzer's maximum to one ReadFrame takes: never 0 (the
// 1 MiB default).
func max16(m uint16) int { return max(int(m), p2pwire.MinFrameSize) }

// FuzzParseSealed checks the datagram prefix: never a panic, the documented
// errors, and a parsed prefix re-encodes to the same bytes.
func FuzzParseSealed(f *testing.F) {
	var df datagramsFile
	readJSON(f, "datagrams.json", &df)
	for _, v := range df.Sealed {
		f.Add([]byte(v.Hex))
	}
	for _, v := range df.SealedInvalid {
		f.Add([]byte(v.Hex))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, ad, sealed, err := p2pwire.ParseSealed(data)
		if err != nil {
			checkDecodeError(t, data, err)
			return
		}
		if len(ad)+len(sealed) != len(data) || len(sealed) < p2pwire.TagSize || len(data) > p2pwire.MaxDatagramSize {
			t.Fatalf("%x: ad %d sealed %d", data, len(ad), len(sealed))
		}
		enc, err := p2pwire.AppendSealedHeader(nil, h)
		if err != nil || !bytes.Equal(enc, ad) {
			t.Fatalf("%x: re-encoded prefix %x, %v", data, enc, err)
		}
	})
}

var (
	ioEOF            = io.EOF
	errUnexpectedEOF = io.ErrUnexpectedEOF
)
