package roomudp_test

import (
	"bytes"
	"testing"

	"github.com/switchboardgg/switchboard/internal/sealed"
	"github.com/switchboardgg/switchboard/protocol/roomudp"
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
			if err == nil && (ch > roomudp.ChannelMessage || len(body) == 0) {
				t.Fatalf("channel %d body %x accepted", ch, body)
			}
			_ = roomudp.Unreliable(body, false)
		}
	})
}
