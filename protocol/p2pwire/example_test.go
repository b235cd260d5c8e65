package p2pwire_test

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// A peer sends a request to another peer; the hub reads only the routing
// header, stamps From and forwards the rest of the body untouched; the
// recipient decodes the whole message.
func ExampleDecodeRouting() {
	// The peer: a framed REQUEST to bob.
	req := &p2pwire.Request{
		Route:    p2pwire.Route{To: "bob~x7q2"},
		Envelope: p2pwire.Envelope{MessageID: 42, Header: "who", Payload: []byte(`{"q":1}`)},
	}
	wire, err := p2pwire.AppendMessageFrame(nil, req)
	if err != nil {
		panic(err)
	}

	// The hub: read the frame, decode the routing header, stamp.
	body, err := p2pwire.ReadFrame(bytes.NewReader(wire), make([]byte, 0, 4096), 64<<10)
	if err != nil {
		panic(err)
	}
	r, err := p2pwire.DecodeRouting(body)
	if err != nil || !r.FromPeer() {
		panic("the hub closes this connection")
	}
	fmt.Printf("hub: %s to %s, %d bytes it does not read\n", r.Kind, r.To, len(body)-r.Size)
	hdr, err := p2pwire.AppendStampedFrameHeader(nil, &r, []byte("alice~k3f9"), len(body))
	if err != nil {
		panic(err)
	}
	delivered := append(hdr, body[r.Size:]...) // the hub writes both buffers with one writev

	// Bob: decode the whole message.
	in, err := p2pwire.ReadFrame(bytes.NewReader(delivered), nil, 0)
	if err != nil {
		panic(err)
	}
	m, err := p2pwire.Decode(in)
	if err != nil {
		panic(err)
	}
	got := m.(*p2pwire.Request)
	fmt.Printf("bob: %s from %s, id %d, header %q, payload %s\n", m.Kind(), got.From, got.MessageID, got.Header, got.Payload)
	// Output:
	// hub: REQUEST to bob~x7q2, 21 bytes it does not read
	// bob: REQUEST from alice~k3f9, id 42, header "who", payload {"q":1}
}

// Decoders name the field and the problem; a hub answers ERROR malformed
// and closes the connection.
func ExampleFieldError() {
	_, err := p2pwire.Decode([]byte{byte(p2pwire.KindMessage), p2pwire.FlagTo | p2pwire.FlagBroadcast, 1, 'b', 0})
	var fe *p2pwire.FieldError
	fmt.Println(err, errors.Is(err, p2pwire.ErrInvalid), errors.As(err, &fe) && fe.Field == "route_flags")
	// Output:
	// p2pwire: route_flags: bad_flags true true
}
