package p2pwire_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"testing"

	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// TestEncodeRefuses checks that encoders refuse what decoders refuse, name
// the field and problem a decoder would, and leave the buffer as it was.
func TestEncodeRefuses(t *testing.T) {
	over := func(n int) string { return strings.Repeat("x", n+1) }
	bob := p2pwire.Route{To: "bob~x7q2"}
	tests := []struct {
		name           string
		m              p2pwire.Message
		field, problem string
	}{
		{"hello without ticket or resume", &p2pwire.Hello{}, "hello_flags", p2pwire.ProblemMissing},
		{"hello ticket over cap", &p2pwire.Hello{Ticket: []byte(over(p2pwire.MaxTicketLen))}, "ticket", p2pwire.ProblemOverCap},
		{"hello resume over cap", &p2pwire.Hello{ResumeToken: []byte(over(p2pwire.MaxResumeTokenLen))}, "resume_token", p2pwire.ProblemOverCap},
		{"welcome no peer id", &p2pwire.Welcome{Network: "n", MaxFrameSize: 4096}, "peer_id", p2pwire.ProblemEmpty},
		{"welcome peer id space", &p2pwire.Welcome{PeerID: "a b", Network: "n", MaxFrameSize: 4096}, "peer_id", p2pwire.ProblemBadPeerID},
		{"welcome peer id over cap", &p2pwire.Welcome{PeerID: p2pwire.PeerID(over(p2pwire.MaxPeerIDLen)), Network: "n", MaxFrameSize: 4096}, "peer_id", p2pwire.ProblemOverCap},
		{"welcome network bad utf8", &p2pwire.Welcome{PeerID: "a", Network: "\xff", MaxFrameSize: 4096}, "network", p2pwire.ProblemBadUTF8},
		{"welcome frame size small", &p2pwire.Welcome{PeerID: "a", Network: "n", MaxFrameSize: 4095}, "max_frame_size", p2pwire.ProblemBadValue},
		{"welcome frame size large", &p2pwire.Welcome{PeerID: "a", Network: "n", MaxFrameSize: p2pwire.MaxFrameSize + 1}, "max_frame_size", p2pwire.ProblemBadValue},
		{"welcome udp key 0", &p2pwire.Welcome{PeerID: "a", Network: "n", MaxFrameSize: 4096, UDP: &p2pwire.UDPSession{}}, "udp_key_id", p2pwire.ProblemBadValue},
		{"peer set unsorted", &p2pwire.PeerSet{Peers: []p2pwire.PeerID{"b", "a"}}, "peer_id", p2pwire.ProblemNotAscend},
		{"peer set over cap", &p2pwire.PeerSet{Peers: make([]p2pwire.PeerID, p2pwire.MaxPeersInSet+1)}, "count", p2pwire.ProblemOverCap},
		{"peer events empty", &p2pwire.PeerEvents{}, "count", p2pwire.ProblemEmpty},
		{"peer events bad op", &p2pwire.PeerEvents{Events: []p2pwire.PeerEvent{{Op: 3, Peer: "a"}}}, "op", p2pwire.ProblemBadValue},
		{"peer events duplicate", &p2pwire.PeerEvents{Events: []p2pwire.PeerEvent{{Op: 1, Peer: "a"}, {Op: 2, Peer: "a"}}}, "peer_id", p2pwire.ProblemNotAscend},
		{"error code 0", &p2pwire.Error{}, "code", p2pwire.ProblemBadValue},
		{"error reason over cap", &p2pwire.Error{Code: 1, Reason: over(p2pwire.MaxReasonLen)}, "reason", p2pwire.ProblemOverCap},
		{"error bad peer", &p2pwire.Error{Code: 1, Peer: "a/b"}, "peer", p2pwire.ProblemBadPeerID},
		{"message to and from", &p2pwire.Msg{Route: p2pwire.Route{To: "a", From: "b"}}, "route_flags", p2pwire.ProblemBadFlags},
		{"message to and broadcast", &p2pwire.Msg{Route: p2pwire.Route{To: "a", Broadcast: true}}, "route_flags", p2pwire.ProblemBadFlags},
		{"message bad to", &p2pwire.Msg{Route: p2pwire.Route{To: "a\x00"}}, "to", p2pwire.ProblemBadPeerID},
		{"message header over cap", &p2pwire.Msg{Route: bob, Envelope: p2pwire.Envelope{Header: over(p2pwire.MaxHeaderLen)}}, "header", p2pwire.ProblemOverCap},
		{"message header bad utf8", &p2pwire.Msg{Route: bob, Envelope: p2pwire.Envelope{Header: "\xc3("}}, "header", p2pwire.ProblemBadUTF8},
		{"message pairs over cap", &p2pwire.Msg{Route: bob, Envelope: p2pwire.Envelope{Pairs: make([]p2pwire.Pair, p2pwire.MaxPairs+1)}}, "pairs", p2pwire.ProblemOverCap},
		{"message empty key", &p2pwire.Msg{Route: bob, Envelope: p2pwire.Envelope{Pairs: []p2pwire.Pair{{Key: ""}}}}, "key", p2pwire.ProblemEmpty},
		{"message keys unsorted", &p2pwire.Msg{Route: bob, Envelope: p2pwire.Envelope{Pairs: []p2pwire.Pair{{Key: "b"}, {Key: "a"}}}}, "key", p2pwire.ProblemNotAscend},
		{"message value over cap", &p2pwire.Msg{Route: bob, Envelope: p2pwire.Envelope{Pairs: []p2pwire.Pair{{Key: "a", Value: over(p2pwire.MaxValueLen)}}}}, "value", p2pwire.ProblemOverCap},
		{"request without id", &p2pwire.Request{Route: bob}, "message_id", p2pwire.ProblemMissing},
		{"request broadcast", &p2pwire.Request{Route: p2pwire.Route{Broadcast: true}, Envelope: p2pwire.Envelope{MessageID: 1}}, "route_flags", p2pwire.ProblemBadFlags},
		{"response without id", &p2pwire.Response{Route: bob}, "message_id", p2pwire.ProblemMissing},
		{"udp message too large", &p2pwire.UDPMsg{Route: bob, Envelope: p2pwire.Envelope{Payload: make([]byte, p2pwire.MaxRoutedRest)}}, "datagram", p2pwire.ProblemTooLarge},
		{"register over cap", &p2pwire.Register{Candidates: make([]netip.AddrPort, p2pwire.MaxCandidates+1)}, "count", p2pwire.ProblemOverCap},
		{"register zero endpoint", &p2pwire.Register{Candidates: make([]netip.AddrPort, 1)}, "candidate", p2pwire.ProblemBadEndpoint},
		{"register v4-mapped", &p2pwire.Register{Candidates: []netip.AddrPort{netip.MustParseAddrPort("[::ffff:10.0.0.1]:9")}}, "candidate", p2pwire.ProblemBadEndpoint},
		{"register zone", &p2pwire.Register{Candidates: []netip.AddrPort{netip.MustParseAddrPort("[fe80::1%eth0]:9")}}, "candidate", p2pwire.ProblemBadEndpoint},
		{"registered port 0", &p2pwire.Registered{Observed: netip.MustParseAddrPort("10.0.0.1:0")}, "observed", p2pwire.ProblemBadEndpoint},
		{"reliable channel 0", &p2pwire.Reliable{Route: bob, Segment: []byte{1}}, "channel", p2pwire.ProblemBadValue},
		{"reliable empty segment", &p2pwire.Reliable{Route: bob, Channel: p2pwire.Ch1}, "segment", p2pwire.ProblemEmpty},
		{"reliable too large", &p2pwire.Reliable{Route: bob, Channel: p2pwire.Ch1, Segment: make([]byte, p2pwire.MaxRoutedRest)}, "datagram", p2pwire.ProblemTooLarge},
		{"jumbo id 0", &p2pwire.Jumbo{Route: bob, Count: 1, Total: 1, Chunk: []byte{1}}, "message_id", p2pwire.ProblemBadValue},
		{"jumbo count mismatch", &p2pwire.Jumbo{Route: bob, MessageID: 1, Count: 2, Total: 1, Chunk: []byte{1}}, "count", p2pwire.ProblemBadSize},
		{"jumbo chunk mismatch", &p2pwire.Jumbo{Route: bob, MessageID: 1, Count: 1, Total: 2, Chunk: []byte{1}}, "chunk", p2pwire.ProblemBadSize},
		{"jumbo total over max", &p2pwire.Jumbo{Route: bob, MessageID: 1, Count: p2pwire.MaxJumboChunks, Total: p2pwire.MaxJumboSize + 1}, "total", p2pwire.ProblemBadValue},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prefix := []byte("keep")
			b, err := p2pwire.Append(prefix, tc.m)
			checkFieldError(t, err, tc.field, tc.problem)
			if !bytes.Equal(b, prefix) {
				t.Fatalf("a failed encode left %q", b)
			}
			if b, err := p2pwire.AppendMessageFrame(prefix, tc.m); err == nil || !bytes.Equal(b, prefix) {
				t.Fatalf("AppendMessageFrame: %q, %v", b, err)
			}
		})
	}
}

// TestFrameRoundTrip writes frames with AppendMessageFrame and reads them
// back with ReadFrame into one reused buffer.
func TestFrameRoundTrip(t *testing.T) {
	msgs := []p2pwire.Message{
		&p2pwire.Hello{Ticket: []byte("t")},
		&p2pwire.Msg{Route: p2pwire.Route{To: "bob~1"}, Envelope: p2pwire.Envelope{Payload: bytes.Repeat([]byte{1}, 5000)}},
		&p2pwire.Ping{Value: 7},
	}
	var stream []byte
	for _, m := range msgs {
		var err error
		if stream, err = p2pwire.AppendMessageFrame(stream, m); err != nil {
			t.Fatal(err)
		}
	}
	r := bytes.NewReader(stream)
	buf := make([]byte, 0, 8192)
	for i, want := range msgs {
		body, err := p2pwire.ReadFrame(r, buf, 8192)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if &body[0] != &buf[:1][0] {
			t.Fatalf("frame %d: not read into the caller's buffer", i)
		}
		got, err := p2pwire.Decode(body)
		if err != nil || canonJSON(t, got) != canonJSON(t, want) {
			t.Fatalf("frame %d: %s, %v", i, canonJSON(t, got), err)
		}
	}
	if _, err := p2pwire.ReadFrame(r, buf, 0); err != io.EOF {
		t.Fatalf("at the end: %v", err)
	}
	// A body over the maximum is refused before it is read.
	r = bytes.NewReader(stream)
	if _, err := p2pwire.ReadFrame(r, nil, 4096); err != nil {
		t.Fatal(err)
	}
	before := r.Len()
	if _, err := p2pwire.ReadFrame(r, nil, 4096); !errors.Is(err, p2pwire.ErrFrameTooLarge) || !errors.Is(err, p2pwire.ErrInvalid) {
		t.Fatalf("over max: %v", err)
	}
	if read := before - r.Len(); read != p2pwire.FrameHeaderSize {
		t.Fatalf("read %d bytes of an oversized frame; want only its length prefix", read)
	}
}

// TestStampRefuses checks that the hub's stamping refuses a bad from and a
// control kind.
func TestStampRefuses(t *testing.T) {
	r, err := p2pwire.DecodeRouting([]byte{byte(p2pwire.KindMessage), p2pwire.FlagBroadcast, 0})
	if err != nil {
		t.Fatal(err)
	}
	for _, from := range []string{"", "a b", strings.Repeat("a", p2pwire.MaxPeerIDLen+1)} {
		if b, err := p2pwire.AppendStampedFrameHeader([]byte("x"), &r, []byte(from), 3); err == nil || string(b) != "x" {
			t.Errorf("from %q: %q, %v", from, b, err)
		}
	}
	ping, _ := p2pwire.DecodeRouting([]byte{byte(p2pwire.KindPing), 0, 0, 0, 0, 0, 0, 0, 0, 0})
	if _, err := p2pwire.AppendStampedRouting(nil, &ping, []byte("a")); err == nil {
		t.Error("stamped a control kind")
	}
}

// TestKinds checks the kind table: names, transports, routing.
func TestKinds(t *testing.T) {
	for k := 0; k < 256; k++ {
		kind := p2pwire.Kind(k)
		if !kind.Known() {
			if kind.OnStream() || kind.OnDatagram() || kind.Routed() || p2pwire.New(kind) != nil {
				t.Errorf("%s: unknown but has a class or a type", kind)
			}
			continue
		}
		if m := p2pwire.New(kind); m == nil || m.Kind() != kind {
			t.Errorf("%s: New gives %v", kind, m)
		}
		if kind.OnStream() == kind.OnDatagram() && kind != p2pwire.KindPing && kind != p2pwire.KindPong {
			t.Errorf("%s: on stream %v, on datagram %v", kind, kind.OnStream(), kind.OnDatagram())
		}
		if strings.HasPrefix(kind.String(), "kind ") {
			t.Errorf("%#x has no name", k)
		}
	}
	if s := p2pwire.Kind(0x99).String(); s != "kind 0x99" {
		t.Errorf("unknown kind prints %q", s)
	}
	if u := p2pwire.PeerID("al.ice~x~k3").Username(); u != "al.ice~x" {
		t.Errorf("Username %q", u)
	}
	if p2pwire.PeerID("a b").Valid() || !p2pwire.PeerID("bob~1").Valid() {
		t.Error("PeerID.Valid")
	}
}

// TestJumboSplit splits a message into fragments, encodes and decodes each,
// and reassembles it.
func TestJumboSplit(t *testing.T) {
	env := p2pwire.Envelope{Header: "file", Payload: bytes.Repeat([]byte("0123456789"), 700)}
	msg, err := env.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	n := p2pwire.JumboCount(len(msg))
	got := make([]byte, 0, len(msg))
	for i := 0; i < n; i++ {
		f := &p2pwire.Jumbo{Route: p2pwire.Route{To: "bob~1"}, MessageID: 9, Index: uint16(i), Count: uint16(n),
			Total: uint32(len(msg)), Chunk: p2pwire.JumboChunk(msg, i)}
		d, err := f.AppendTo(nil)
		if err != nil {
			t.Fatalf("fragment %d: %v", i, err)
		}
		if len(d)+p2pwire.SealedHeaderSize+p2pwire.TagSize > p2pwire.MaxDatagramSize {
			t.Fatalf("fragment %d: %d bytes sealed", i, len(d))
		}
		var back p2pwire.Jumbo
		if err := back.Unmarshal(d); err != nil {
			t.Fatalf("fragment %d: %v", i, err)
		}
		got = append(got, back.Chunk...)
	}
	var back p2pwire.Envelope
	if err := back.Unmarshal(got); err != nil || back.Header != "file" || !bytes.Equal(back.Payload, env.Payload) {
		t.Fatalf("reassembled: %v", err)
	}
	// The largest routing header a fragment carries still fits a datagram.
	long := p2pwire.PeerID(strings.Repeat("u", p2pwire.MaxPeerIDLen))
	f := &p2pwire.Jumbo{Route: p2pwire.Route{From: long, Broadcast: true}, MessageID: 1, Count: 2, Total: 2 * p2pwire.JumboChunkSize,
		Chunk: make([]byte, p2pwire.JumboChunkSize)}
	if _, err := f.AppendTo(nil); err != nil {
		t.Fatalf("largest fragment: %v", err)
	}
}

// TestPeekMessageID checks the hub's look at a refused message's id.
func TestPeekMessageID(t *testing.T) {
	tests := []struct {
		m    p2pwire.Message
		want uint64
	}{
		{&p2pwire.Request{Route: p2pwire.Route{To: "b"}, Envelope: p2pwire.Envelope{MessageID: 42, Header: "h"}}, 42},
		{&p2pwire.Msg{Route: p2pwire.Route{Broadcast: true}, Envelope: p2pwire.Envelope{MessageID: 7}}, 7},
		{&p2pwire.Msg{Route: p2pwire.Route{To: "b"}, Envelope: p2pwire.Envelope{Header: "no id"}}, 0},
		{&p2pwire.UDPMsg{Route: p2pwire.Route{To: "b"}, Envelope: p2pwire.Envelope{MessageID: 1<<64 - 1}}, 1<<64 - 1},
		{&p2pwire.Reliable{Route: p2pwire.Route{To: "b"}, Channel: p2pwire.Ch1, Segment: []byte{1, 1, 1, 1, 1, 1, 1, 1, 1}}, 0},
		{&p2pwire.Ping{Value: 5}, 0},
	}
	for _, tc := range tests {
		body, err := p2pwire.Append(nil, tc.m)
		if err != nil {
			t.Fatal(err)
		}
		r, err := p2pwire.DecodeRouting(body)
		if err != nil {
			t.Fatal(err)
		}
		if got := p2pwire.PeekMessageID(body, &r); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.m.Kind(), got, tc.want)
		}
		if got := p2pwire.PeekMessageID(body[:r.Size+1], &r); got != 0 {
			t.Errorf("%s truncated: %d", tc.m.Kind(), got)
		}
	}
}

// TestStampedDatagramFits checks that the hub can always re-seal what it
// delivers: the largest routed datagram a peer may send, to the shortest
// peer id, stamped with the longest from, still fits a datagram.
func TestStampedDatagramFits(t *testing.T) {
	m := &p2pwire.UDPMsg{Route: p2pwire.Route{To: "b"}, Envelope: p2pwire.Envelope{Payload: make([]byte, p2pwire.MaxRoutedRest-1)}}
	body, err := m.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := p2pwire.DecodeRouting(body)
	if err != nil {
		t.Fatal(err)
	}
	from := []byte(strings.Repeat("f", p2pwire.MaxPeerIDLen))
	d, err := p2pwire.AppendStampedRouting(nil, &r, from)
	if err != nil {
		t.Fatal(err)
	}
	d = append(d, body[r.Size:]...)
	if len(d) != p2pwire.MaxOpenedSize || len(d) != p2pwire.StampedSize(&r, len(from), len(body)) {
		t.Fatalf("stamped %d bytes; want exactly MaxOpenedSize %d", len(d), p2pwire.MaxOpenedSize)
	}
	var back p2pwire.UDPMsg
	if err := back.Unmarshal(d); err != nil || string(back.From) != string(from) {
		t.Fatalf("delivered: %v", err)
	}
}

// TestCredentialsNotPrinted checks that printing or logging HELLO and
// WELCOME shows no ticket, resume token or UDP secret, in any of the forms
// fmt and slog write bytes in.
func TestCredentialsNotPrinted(t *testing.T) {
	var secret [32]byte
	for i := range secret {
		secret[i] = byte(200 + i%50)
	}
	ticket, resume := []byte("TICKETTICKET"), []byte("RESUMERESUME")
	msgs := []any{
		&p2pwire.Hello{Ticket: ticket, ResumeToken: resume},
		&p2pwire.Welcome{PeerID: "a~1", Network: "n", ResumeToken: resume, UDP: &p2pwire.UDPSession{KeyID: 3, Secret: secret}},
	}
	var forms []string
	for _, c := range [][]byte{ticket, resume, secret[:]} {
		forms = append(forms, string(c[:6]), fmt.Sprint(c[:6])[1:15], fmt.Sprintf("%x", c[:6]), base64.StdEncoding.EncodeToString(c)[:8])
	}
	for _, m := range msgs {
		var logged bytes.Buffer
		slog.New(slog.NewTextHandler(&logged, nil)).Info("msg", "m", m)
		slog.New(slog.NewJSONHandler(&logged, nil)).Info("msg", "m", m)
		for _, out := range []string{fmt.Sprint(m), fmt.Sprintf("%+v", m), fmt.Sprintf("%v", []any{m}), logged.String()} {
			for _, f := range forms {
				if strings.Contains(out, f) {
					t.Errorf("%q shows %q", out, f)
				}
			}
		}
	}
}
