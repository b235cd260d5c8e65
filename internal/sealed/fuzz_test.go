package sealed_test

import (
	"bytes"
	"testing"

	"github.com/switchboardgg/switchboard/internal/sealed"
)

// FuzzOpen feeds arbitrary datagrams to an Opener: it must never panic,
// never accept anything that was not sealed with its key, and never
// accept a datagram twice.
func FuzzOpen(f *testing.F) {
	key := bytes.Repeat([]byte{7}, sealed.KeySize)
	s, err := sealed.NewSealer(key, 3)
	if err != nil {
		f.Fatal(err)
	}
	genuine := map[string]bool{}
	for _, p := range []string{"", "a", "hello world", string(make([]byte, 300))} {
		d, err := s.Seal(nil, []byte(p))
		if err != nil {
			f.Fatal(err)
		}
		genuine[string(d)] = true
		f.Add(d)
	}
	// The shared vectors' datagrams (another key: they must all fail).
	var vs []struct{ Datagram string }
	readJSON(f, "seal.json", &vs)
	for _, v := range vs {
		f.Add(unhex(f, v.Datagram))
	}
	f.Add([]byte{})
	f.Add(make([]byte, sealed.Overhead))
	f.Add([]byte{1, 0, 0, 0, 3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, d []byte) {
		o, err := sealed.NewOpener(key, 3)
		if err != nil {
			t.Fatal(err)
		}
		p, seq, err := o.Open(make([]byte, 0, 8), d)
		if err != nil {
			if len(p) != 0 {
				t.Fatalf("error %v with a payload", err)
			}
			return
		}
		if !genuine[string(d)] {
			t.Fatalf("opened a datagram that was never sealed: %x", d)
		}
		if len(p) != len(d)-sealed.Overhead {
			t.Fatalf("payload %d bytes from a %d-byte datagram", len(p), len(d))
		}
		if _, _, err := o.Open(nil, d); err == nil {
			t.Fatalf("seq %d accepted twice", seq)
		}
	})
}
