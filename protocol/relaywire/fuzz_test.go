package relaywire_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/switchboardgg/switchboard/protocol/relaywire"
)

// The fuzz targets are seeded from the shared vectors. Run one for a minute
// with
//
//	go test -run='^$' -fuzz=FuzzDecode -fuzztime=60s ./protocol/relaywire

// addMessageSeeds adds every hex of messages.json, optionally of one type.
func addMessageSeeds(f *testing.F, only func(relaywire.Type) bool) {
	mf := loadMessages(f)
	for _, mv := range mf.Messages {
		if only != nil && !only(relaywire.Type(mv.Type)) {
			continue
		}
		for _, v := range mv.Valid {
			f.Add([]byte(v.Hex))
		}
		for _, v := range mv.Invalid {
			f.Add([]byte(v.Hex))
		}
	}
	if only != nil {
		return
	}
	for _, v := range mf.HeaderInvalid {
		f.Add([]byte(v.Hex))
	}
	for _, v := range mf.UnknownTypes {
		f.Add([]byte(v.Hex))
	}
}

// checkDecodeError fails unless err is exactly one of a well-formed
// *FieldError matching ErrInvalid, or ErrUnknownType.
func checkDecodeError(t *testing.T, data []byte, err error) {
	t.Helper()
	var fe *relaywire.FieldError
	field := errors.As(err, &fe)
	unknown := errors.Is(err, relaywire.ErrUnknownType)
	if field == unknown {
		t.Fatalf("%x: error %v is a FieldError: %v, unknown type: %v; want exactly one", data, err, field, unknown)
	}
	if field && (!errors.Is(err, relaywire.ErrInvalid) || fe.Field == "" || !isKnownProblem(fe.Problem)) {
		t.Fatalf("%x: malformed FieldError %#v", data, fe)
	}
	if unknown && (len(data) < 4 || relaywire.Type(data[3]).Known()) {
		t.Fatalf("%x: ErrUnknownType for a known type", data)
	}
}

// FuzzDecode checks that Decode and every typed decoder never panic, fail
// only with the documented errors, agree with each other, and that whatever
// decodes re-encodes to the same bytes.
func FuzzDecode(f *testing.F) {
	addMessageSeeds(f, nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := relaywire.Decode(data)
		typ, perr := relaywire.Peek(data)
		if err != nil {
			checkDecodeError(t, data, err)
			if m != nil {
				t.Fatalf("%x: Decode returned %+v with error %v", data, m, err)
			}
			if perr == nil {
				// Peek accepted the header: the typed decoder fails the same way.
				if err2 := relaywire.New(typ).Unmarshal(data); err2 != err {
					t.Fatalf("%x: Decode error %v, %s.Unmarshal error %v", data, err, typ, err2)
				}
			}
		} else {
			if perr != nil || typ != m.Type() || byte(typ) != data[3] {
				t.Fatalf("%x: decoded %s but Peek = %v, %v", data, m.Type(), typ, perr)
			}
			enc, err := relaywire.Append(nil, m)
			if err != nil {
				t.Fatalf("%x: decoded %+v does not re-encode: %v", data, m, err)
			}
			if !bytes.Equal(enc, data) {
				t.Fatalf("re-encoding differs\n in  %x\n out %x", data, enc)
			}
		}
		// Every typed decoder accepts only its own type.
		for _, k := range knownTypes {
			km := relaywire.New(k)
			kerr := km.Unmarshal(data)
			if kerr == nil && (err != nil || k != typ) {
				t.Fatalf("%x: %s.Unmarshal accepts what Decode gives %v, %v", data, k, typ, err)
			}
			if kerr != nil {
				var fe *relaywire.FieldError
				if !errors.As(kerr, &fe) || fe.Type != k || !errors.Is(kerr, relaywire.ErrInvalid) {
					t.Fatalf("%x: %s.Unmarshal error %v", data, k, kerr)
				}
			}
		}
	})
}

// FuzzRelayUnmarshal decodes into a reused, dirty value, as a relay does,
// and checks the fields against the layout.
func FuzzRelayUnmarshal(f *testing.F) {
	addMessageSeeds(f, func(t relaywire.Type) bool { return t == relaywire.TypeRelay })
	dirty := relaywire.Relay{From: relaywire.AllocationID{1}, To: relaywire.AllocationID{2}, Data: []byte("dirty")}
	f.Fuzz(func(t *testing.T, data []byte) {
		m := dirty
		if err := m.Unmarshal(data); err != nil {
			checkDecodeError(t, data, err)
			if m.Data != nil || !m.From.IsZero() || !m.To.IsZero() {
				t.Fatalf("%x: %+v left after error %v", data, m, err)
			}
			return
		}
		if len(data) < 38 || !bytes.Equal(data[:4], []byte{0xDA, 0x72, 0, 10}) {
			t.Fatalf("%x: accepted without a RELAY header", data)
		}
		if n := int(data[36])<<8 | int(data[37]); n != len(m.Data) || len(data) != 38+n {
			t.Fatalf("%x: data_length %d, Data %d bytes", data, n, len(m.Data))
		}
		if !bytes.Equal(m.From[:], data[4:20]) || !bytes.Equal(m.To[:], data[20:36]) {
			t.Fatalf("%x: ids %v %v", data, m.From, m.To)
		}
		if len(m.Data) > 0 && &m.Data[0] != &data[38] {
			t.Fatalf("%x: Data does not alias the input", data)
		}
		if cap(m.Data) != len(m.Data) {
			t.Fatalf("%x: Data has spare capacity %d", data, cap(m.Data)-len(m.Data))
		}
	})
}

// FuzzPeerEventUnmarshal decodes PEER_EVENT and PEERS_SUBSCRIBE into
// reused, dirty values, as a client and a relay do, and checks the fields
// against the layouts.
func FuzzPeerEventUnmarshal(f *testing.F) {
	addMessageSeeds(f, func(t relaywire.Type) bool {
		return t == relaywire.TypePeerEvent || t == relaywire.TypePeersSubscribe
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		ev := relaywire.PeerEvent{Event: relaywire.PeerDisconnected, Peer: relaywire.AllocationID{9}}
		if err := ev.Unmarshal(data); err != nil {
			checkDecodeError(t, data, err)
			if ev != (relaywire.PeerEvent{}) {
				t.Fatalf("%x: %+v left after error %v", data, ev, err)
			}
		} else {
			if len(data) != 21 || !bytes.Equal(data[:4], []byte{0xDA, 0x72, 0, 0x81}) || data[4] > 2 {
				t.Fatalf("%x: accepted as PEER_EVENT", data)
			}
			if byte(ev.Event) != data[4] || !bytes.Equal(ev.Peer[:], data[5:21]) {
				t.Fatalf("%x: decoded %+v", data, ev)
			}
		}
		sub := relaywire.PeersSubscribe{AllocationID: relaywire.AllocationID{9}}
		if err := sub.Unmarshal(data); err != nil {
			checkDecodeError(t, data, err)
			if !sub.AllocationID.IsZero() {
				t.Fatalf("%x: %+v left after error %v", data, sub, err)
			}
		} else if len(data) != 20 || !bytes.Equal(data[:4], []byte{0xDA, 0x72, 0, 0x80}) || !bytes.Equal(sub.AllocationID[:], data[4:20]) {
			t.Fatalf("%x: accepted as PEERS_SUBSCRIBE: %+v", data, sub)
		}
	})
}

// FuzzBindHMAC checks the allocation-free HMAC against crypto/hmac.
func FuzzBindHMAC(f *testing.F) {
	for _, v := range loadHMAC(f).Vectors {
		f.Add([]byte(v.Key), []byte(v.Bind))
	}
	f.Fuzz(func(t *testing.T, keySeed, bind []byte) {
		key := relaywire.Key(append(bytes.Clone(keySeed), make([]byte, 64)...)[:64])
		raw := append(bytes.Clone(bind), make([]byte, relaywire.BindSize)...)[:relaywire.BindSize]
		copy(raw, []byte{0xDA, 0x72, 0, 0, 0}) // a decodable BIND ...
		raw[7] = 255                           // ... whose padding cannot be wrong
		var m relaywire.Bind
		if err := m.Unmarshal(raw); err != nil {
			t.Fatalf("%x: %v", raw, err)
		}
		mac := hmac.New(sha256.New, key[:])
		mac.Write(raw[:relaywire.BindSignedSize])
		want := mac.Sum(nil)
		if got := m.ComputeHMAC(&key); !bytes.Equal(got[:], want) {
			t.Fatalf("ComputeHMAC = %x, crypto/hmac = %x", got, want)
		}
		if got, want := m.Verify(&key), hmac.Equal(want, raw[relaywire.BindSignedSize:]); got != want {
			t.Fatalf("Verify = %v, want %v", got, want)
		}
	})
}

// FuzzParseAllocationID checks the parser against a plain reading of the
// canonical form: 36 characters, hyphens at 8, 13, 18 and 23, hex elsewhere.
func FuzzParseAllocationID(f *testing.F) {
	var af allocationIDsFile
	readJSON(f, "allocation_ids.json", &af)
	for _, v := range af.Valid {
		f.Add(v.Text)
	}
	for _, v := range af.Invalid {
		f.Add(v.Text)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := relaywire.ParseAllocationID(s)
		want, ok := []byte(nil), len(s) == 36
		if ok {
			parts := strings.Split(s, "-")
			ok = len(parts) == 5 && len(parts[0]) == 8 && len(parts[1]) == 4 && len(parts[2]) == 4 &&
				len(parts[3]) == 4 && len(parts[4]) == 12
			var herr error
			want, herr = hex.DecodeString(strings.Join(parts, ""))
			ok = ok && herr == nil
		}
		if !ok {
			if !errors.Is(err, relaywire.ErrBadAllocationID) || !id.IsZero() {
				t.Fatalf("ParseAllocationID(%q) = %v, %v; want ErrBadAllocationID", s, id, err)
			}
			return
		}
		if err != nil || !bytes.Equal(id[:], want) {
			t.Fatalf("ParseAllocationID(%q) = %x, %v; want %x", s, id[:], err, want)
		}
		if id.String() != strings.ToLower(s) {
			t.Fatalf("String = %q, want %q", id.String(), strings.ToLower(s))
		}
	})
}
