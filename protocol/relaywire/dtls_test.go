package relaywire

import (
	"bytes"
	"errors"
	"testing"
)

// TestParseDTLSIdentity: both forms name the same allocation (Unity's
// documented example id); every other length or text is refused.
func TestParseDTLSIdentity(t *testing.T) {
	want := AllocationID{0xf2, 0x6e, 0xd6, 0xcc, 0x6b, 0xa7, 0x11, 0xeb, 0xb7, 0xe1, 0x4f, 0x04, 0x36, 0xc8, 0xd4, 0x58}
	for _, in := range [][]byte{
		want[:],
		[]byte("f26ed6cc-6ba7-11eb-b7e1-4f0436c8d458"),
		[]byte("F26ED6CC-6BA7-11EB-B7E1-4F0436C8D458"),
		DTLSIdentity(want),
	} {
		got, err := ParseDTLSIdentity(in)
		if err != nil || got != want {
			t.Errorf("ParseDTLSIdentity(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range [][]byte{nil, want[:15], append(want[:], 0), []byte("f26ed6cc6ba711ebb7e14f0436c8d458"), []byte("{f26ed6cc-6ba7-11eb-b7e1-4f0436c8d45}")} {
		if _, err := ParseDTLSIdentity(in); !errors.Is(err, ErrBadAllocationID) {
			t.Errorf("ParseDTLSIdentity(%q): got %v, want ErrBadAllocationID", in, err)
		}
	}
}

func FuzzParseDTLSIdentity(f *testing.F) {
	f.Add([]byte("f26ed6cc-6ba7-11eb-b7e1-4f0436c8d458"))
	f.Add(make([]byte, 16))
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := ParseDTLSIdentity(b)
		if err != nil {
			return
		}
		// What parses is one of the two forms of id.
		if !bytes.Equal(b, id[:]) && !bytes.EqualFold(b, []byte(id.String())) {
			t.Fatalf("%q parsed as %v", b, id)
		}
	})
}
