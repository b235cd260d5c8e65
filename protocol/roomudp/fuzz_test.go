package roomudp_test

import (
	"bytes"
	"testing"

	"github.com/switchboardgg/switchboard/internal/sealed"
	"github.com/switchboardgg/switchboard/protocol/roomudp"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// FuzzDatagram feeds arbitrary datagrams through everything the node
// does to an unauthenticated datagram: the kind, the HANDSHAKE cleartext,
// the opening with the keys its cleartext names, and the payload parsers.
// It must never panic, never open what was not sealed with the key, and
// never accept a payload whose padding or channel is wrong.
func FuzzDatagram(f *testing.F) {
	vs := readVectors(f)
	for _, v := range vs.Handshake {
		f.Add(unhex(f, v.Datagram))
	}
	for _, v := range vs.Seal {
		f.Add(unhex(f, v.Datagram))
	}
	for _, v := range vs.Reply {
		f.Add(unhex(f, v.Datagram))
	}
	f.Add([]byte{})
	f.Add([]byte{roomudp.KindHandshake})
	f.Add(make([]byte, roomudp.HandshakeSize))
	sessionKey := key32(f, vs.Handshake[0].SessionKey)
	sessionOpen := key32(f, vs.Seal[0].Key)
	f.Fuzz(func(t *testing.T, d []byte) {
		switch {
		case len(d) == 0:
		case d[0] == roomudp.KindHandshake:
			h, err := roomudp.ParseHandshake(d)
			if err != nil {
				if len(d) == roomudp.HandshakeSize {
					t.Fatalf("a %d-byte HANDSHAKE refused: %v", len(d), err)
				}
				return
			}
			hk, err := roomudp.HandshakeKeys(sessionKey, &h.ClientNonce)
			if err != nil {
				t.Fatal(err)
			}
			o, _ := sealed.NewOpener(hk.I2R[:], roomudp.HandshakeKeyID)
			p, _, err := o.Open(nil, h.Sealed)
			if err != nil {
				return
			}
			hs, err := roomudp.HandshakeBytes(p)
			if err != nil {
				return
			}
			if len(hs) == 0 || !bytes.Equal(p[2+len(hs):], make([]byte, len(p)-2-len(hs))) {
				t.Fatalf("accepted handshake %x with padding %x", hs, p[2+len(hs):])
			}
		case d[0] == roomudp.KindSession:
			hdr, err := sealed.ParseHeader(d)
			if err != nil {
				return
			}
			o, _ := sealed.NewOpener(sessionOpen[:], hdr.KeyID)
			p, _, err := o.Open(nil, d)
			if err != nil {
				return
			}
			ch, body, err := roomudp.ParseSession(p)
			if err == nil && (ch > roomudp.ChannelPathResponse || len(body) == 0) {
				t.Fatalf("channel %d body %x accepted", ch, body)
			}
			_ = roomudp.Unreliable(body, false)
			_, _ = roomudp.ParseInputs(body)
			_, _, _ = roomudp.ParseFrame(body)
			if d, err := roomudp.ParsePath(body); err == nil && !bytes.Equal(d[:], body) {
				t.Fatalf("path body %x read as %x", body, d)
			}
		}
	})
}

// FuzzInputs feeds arbitrary INPUTS bodies to the node's parser. What it
// accepts must hold exactly Count entries of consecutive sequence numbers
// from FirstSeq, each an INPUT message of at most MaxInputEntry-1 bytes,
// and re-encode to the same bytes; nothing it accepts may overflow the
// sequence numbers.
func FuzzInputs(f *testing.F) {
	vs := readVectors(f)
	for _, v := range vs.Inputs {
		f.Add(unhex(f, v.Body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		in, err := roomudp.ParseInputs(body)
		if err != nil {
			return
		}
		if in.FirstSeq == 0 || in.Count < 1 || in.Count > roomudp.MaxInputsPerDatagram || in.Last() < in.FirstSeq {
			t.Fatalf("accepted first %d count %d", in.FirstSeq, in.Count)
		}
		re := roomudp.AppendInputsHeader(nil, in.FirstSeq, in.Count)
		want, n := in.FirstSeq, 0
		for {
			seq, msg, ok := in.Next()
			if !ok {
				break
			}
			if seq != want || len(msg) == 0 || len(msg) >= roomudp.MaxInputEntry || roomwire.Type(msg[0]) != roomwire.TypeInput {
				t.Fatalf("entry %d: seq %d msg %x", n, seq, msg)
			}
			re = roomudp.AppendInputEntry(re, msg)
			want++
			n++
		}
		if n != in.Count || !bytes.Equal(re, body) {
			t.Fatalf("%d entries of %d; re-encoded %x from %x", n, in.Count, re, body)
		}
	})
}

// FuzzFrame feeds arbitrary FRAME bodies to the client's parser: what it
// accepts is a FRAME message behind 4 bytes, and re-encodes the same.
func FuzzFrame(f *testing.F) {
	vs := readVectors(f)
	for _, v := range vs.Frame {
		f.Add(unhex(f, v.Body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		seq, fr, err := roomudp.ParseFrame(body)
		if err != nil {
			return
		}
		if len(fr) == 0 || roomwire.Type(fr[0]) != roomwire.TypeFrame || !bytes.Equal(roomudp.AppendFrame(nil, seq, fr), body) {
			t.Fatalf("accepted %x as input_seq %d frame %x", body, seq, fr)
		}
	})
}

// FuzzPath feeds arbitrary PATH_CHALLENGE and PATH_RESPONSE payloads
// (channel byte and body) to what either receiver does: the channel, its
// direction and the body. What it accepts is exactly 8 bytes in its own
// direction, and re-encodes the same.
func FuzzPath(f *testing.F) {
	vs := readVectors(f)
	for _, v := range vs.Path {
		f.Add(append([]byte{byte(v.Channel)}, unhex(f, v.Body)...), v.FromNode)
	}
	f.Fuzz(func(t *testing.T, payload []byte, fromNode bool) {
		ch, body, err := roomudp.ParseSession(payload)
		if err != nil || (ch != roomudp.ChannelPathChallenge && ch != roomudp.ChannelPathResponse) {
			return
		}
		if roomudp.CheckDirection(ch, fromNode) != nil {
			if fromNode == (ch == roomudp.ChannelPathChallenge) {
				t.Fatalf("channel %d refused from node=%v", ch, fromNode)
			}
			return
		}
		d, err := roomudp.ParsePath(body)
		if err != nil {
			if len(body) == roomudp.PathDataSize {
				t.Fatalf("an 8-byte body refused: %v", err)
			}
			return
		}
		if len(body) != roomudp.PathDataSize || !bytes.Equal(roomudp.AppendPath([]byte{ch}, &d), payload) {
			t.Fatalf("accepted %x as %x", payload, d)
		}
	})
}
