package p2pwire_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// update rewrites testdata/p2pwire/*.json from the tables below:
//
//	go test ./protocol/p2pwire -run TestGenerate -update
var update = flag.Bool("update", false, "rewrite the vectors in testdata/p2pwire")

const messagesAbout = "P2P wire protocol version 1 (docs/protocol/p2p.md). Every item is a frame body or an opened datagram, " +
	"without the TLS length prefix. Byte strings in hex fields are lowercase hex; in fields, byte strings (payload, ticket, " +
	"resume_token, segment, chunk) are standard base64 as Go's encoding/json writes them, udp.secret is an array of 32 numbers " +
	"and the data of PATH_CHALLENGE and PATH_RESPONSE an array of 8, " +
	"endpoints are \"addr:port\" text; a field equal to its zero value is omitted. valid: encoding fields must give hex, decoding " +
	"hex must give fields. invalid: decoding hex with the decoder of the kind the item is listed under must fail; field names the " +
	"field the decoder stops at (\"message\" for bytes after the last field) and reason says why. A decoder checks the kind, the " +
	"routing header, then the fields in order, each as soon as it is read. routing_invalid: bodies whose routing header is " +
	"malformed, rejected by every decoder. unknown_kinds: kinds version 1 does not define. stamping: a body as a peer sends it, " +
	"the from the hub stamps, and the whole frame (length prefix included) the hub delivers. hub_refuses: well-formed bodies a " +
	"hub must refuse from a peer (from set, no destination, or a kind only a hub sends). peer_refuses: well-formed bodies a " +
	"peer must refuse from the hub (kinds only a peer sends, to a hub). envelopes: bare envelopes (a jumbo message reassembled, a " +
	"reliable-channel message)."

const messagesHandWritten = "Every item whose name starts with \"hand_\", every invalid, routing_invalid, unknown_kinds, " +
	"stamping, hub_refuses and peer_refuses item is composed by hand, field by field, from docs/protocol/p2p.md, independently of the Go " +
	"encoder (its hex is written out in protocol/p2pwire/generate_test.go); the others are produced by the Go encoder. " +
	"go test ./protocol/p2pwire -run TestGenerate -update rewrites the files; without -update the test fails if they are stale."

// h joins hex written with spaces for reading.
func h(parts ...string) hexBytes {
	s := strings.ReplaceAll(strings.Join(parts, ""), " ", "")
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(fmt.Sprintf("bad hex %q: %v", s, err))
	}
	return b
}

// The peer ids of the vectors, as u8 length + bytes.
const (
	alice = "alice~k3f9"
	bob   = "bob~x7q2"
	hA    = "0a 616c6963657e6b336639 "
	hB    = "08 626f627e78377132 "
)

type genValid struct {
	name string
	msg  p2pwire.Message
	hand string // the hex composed by hand; "" for an encoder-generated item
}

type genInvalid struct {
	name, hex, field, reason string
}

type genKind struct {
	kind    p2pwire.Kind
	valid   []genValid
	invalid []genInvalid
}

func secret() (s [32]byte) {
	for i := range s {
		s[i] = byte(i)
	}
	return s
}

func genKinds() []genKind {
	ap := netip.MustParseAddrPort
	return []genKind{
		{p2pwire.KindHello, []genValid{
			{"hand_ticket", &p2pwire.Hello{Ticket: []byte("tk")}, "01 00 01 01 0002 746b"},
			{"hand_resume_token", &p2pwire.Hello{ResumeToken: []byte{10, 11, 12}}, "01 00 01 02 03 0a0b0c"},
			{"ticket_and_resume_token", &p2pwire.Hello{Ticket: bytes.Repeat([]byte{0xAB}, p2pwire.MaxTicketLen),
				ResumeToken: bytes.Repeat([]byte{7}, p2pwire.MaxResumeTokenLen)}, ""},
		}, []genInvalid{
			{"version_2", "01 00 02 01 0002 746b", "version", "bad_version"},
			{"version_0", "01 00 00 01 0002 746b", "version", "bad_version"},
			{"no_ticket_no_resume", "01 00 01 00", "hello_flags", "missing"},
			{"undefined_flag", "01 00 01 05 0002 746b", "hello_flags", "bad_flags"},
			{"ticket_empty", "01 00 01 01 0000", "ticket", "empty"},
			{"ticket_over_cap_2049", "01 00 01 01 0801", "ticket", "over_cap"},
			{"ticket_truncated", "01 00 01 01 0003 746b", "ticket", "truncated"},
			{"resume_token_over_cap_65", "01 00 01 02 41", "resume_token", "over_cap"},
			{"trailing_byte", "01 00 01 01 0002 746b 00", "message", "trailing_bytes"},
			{"flags_missing", "01 00 01", "hello_flags", "truncated"},
			{"route_flags_set", "01 01 " + hB + "01 01 0002 746b", "route_flags", "bad_flags"},
			{"ping_under_hello", "06 00 0102030405060708", "kind", "wrong_kind"},
		}},
		{p2pwire.KindWelcome, []genValid{
			{"hand_basic", &p2pwire.Welcome{PeerID: alice, Network: "lobby", MaxFrameSize: 1 << 20, ResumeWindowMS: 30000,
				ResumeToken: []byte("r1")},
				"02 00 01 00 " + hA + "05 6c6f626279 00100000 00007530 02 7231"},
			{"hand_resumed_udp", &p2pwire.Welcome{Resumed: true, PeerID: bob, Network: "n", MaxFrameSize: 4096,
				UDP: &p2pwire.UDPSession{KeyID: 7, Secret: secret()}},
				"02 00 01 03 " + hB + "01 6e 00001000 00000000 00 00000007 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"},
			{"max_everything", &p2pwire.Welcome{PeerID: p2pwire.PeerID(strings.Repeat("z", 90) + "~12345"),
				Network: strings.Repeat("é", 32), MaxFrameSize: p2pwire.MaxFrameSize, ResumeWindowMS: 1<<32 - 1,
				ResumeToken: bytes.Repeat([]byte{0xFF}, p2pwire.MaxResumeTokenLen)}, ""},
		}, []genInvalid{
			{"version_2", "02 00 02 00 " + hA + "05 6c6f626279 00100000 00007530 02 7231", "version", "bad_version"},
			{"undefined_flag", "02 00 01 04 " + hA + "05 6c6f626279 00100000 00007530 02 7231", "welcome_flags", "bad_flags"},
			{"peer_id_space", "02 00 01 00 05 616c206365 05 6c6f626279 00100000 00007530 00", "peer_id", "bad_peer_id"},
			{"peer_id_empty", "02 00 01 00 00 05 6c6f626279 00100000 00007530 00", "peer_id", "empty"},
			{"peer_id_over_cap_97", "02 00 01 00 61", "peer_id", "over_cap"},
			{"network_empty", "02 00 01 00 " + hA + "00 00100000 00007530 00", "network", "empty"},
			{"network_over_cap_65", "02 00 01 00 " + hA + "41", "network", "over_cap"},
			{"network_bad_utf8", "02 00 01 00 " + hA + "01 ff 00100000 00007530 00", "network", "bad_utf8"},
			{"max_frame_4095", "02 00 01 00 " + hA + "05 6c6f626279 00000fff 00007530 00", "max_frame_size", "bad_value"},
			{"max_frame_over_16mib", "02 00 01 00 " + hA + "05 6c6f626279 01000001 00007530 00", "max_frame_size", "bad_value"},
			{"udp_key_id_0", "02 00 01 02 " + hA + "05 6c6f626279 00100000 00007530 00 00000000", "udp_key_id", "bad_value"},
			{"udp_secret_truncated", "02 00 01 02 " + hA + "05 6c6f626279 00100000 00007530 00 00000007 0001", "udp_secret", "truncated"},
			{"trailing_byte", "02 00 01 00 " + hA + "05 6c6f626279 00100000 00007530 02 7231 00", "message", "trailing_bytes"},
			{"resume_token_truncated", "02 00 01 00 " + hA + "05 6c6f626279 00100000 00007530 02 72", "resume_token", "truncated"},
		}},
		{p2pwire.KindPeerSet, []genValid{
			{"hand_two_peers", &p2pwire.PeerSet{Version: 5, Peers: []p2pwire.PeerID{alice, bob}},
				"03 00 0000000000000005 0002 " + hA + hB},
			{"hand_empty", &p2pwire.PeerSet{Peers: []p2pwire.PeerID{}}, "03 00 0000000000000000 0000"},
			{"many", &p2pwire.PeerSet{Version: 1<<64 - 1, Peers: manyPeers(300)}, ""},
		}, []genInvalid{
			{"not_ascending", "03 00 0000000000000005 0002 " + hB + hA, "peer_id", "not_ascending"},
			{"duplicate", "03 00 0000000000000005 0002 " + hA + hA, "peer_id", "not_ascending"},
			{"count_over_cap_4097", "03 00 0000000000000005 1001", "count", "over_cap"},
			{"count_2_one_peer", "03 00 0000000000000005 0002 " + hA, "peer_id", "truncated"},
			{"peer_id_empty", "03 00 0000000000000005 0001 00", "peer_id", "empty"},
			{"peer_id_over_cap_97", "03 00 0000000000000005 0001 61", "peer_id", "over_cap"},
			{"peer_id_nul", "03 00 0000000000000005 0001 02 6100", "peer_id", "bad_peer_id"},
			{"version_truncated", "03 00 00000000", "version", "truncated"},
			{"trailing_byte", "03 00 0000000000000000 0000 00", "message", "trailing_bytes"},
		}},
		{p2pwire.KindPeerEvents, []genValid{
			{"hand_join_and_leave", &p2pwire.PeerEvents{Version: 6, Events: []p2pwire.PeerEvent{
				{Op: p2pwire.PeerJoined, Peer: alice}, {Op: p2pwire.PeerLeft, Peer: bob}}},
				"04 00 0000000000000006 0002 01 " + hA + "02 " + hB},
		}, []genInvalid{
			{"count_0", "04 00 0000000000000006 0000", "count", "empty"},
			{"count_over_cap_4097", "04 00 0000000000000006 1001", "count", "over_cap"},
			{"op_0", "04 00 0000000000000006 0001 00 " + hA, "op", "bad_value"},
			{"op_3", "04 00 0000000000000006 0001 03 " + hA, "op", "bad_value"},
			{"not_ascending", "04 00 0000000000000006 0002 01 " + hB + "02 " + hA, "peer_id", "not_ascending"},
			{"same_peer_twice", "04 00 0000000000000006 0002 01 " + hA + "02 " + hA, "peer_id", "not_ascending"},
			{"op_truncated", "04 00 0000000000000006 0001", "op", "truncated"},
		}},
		{p2pwire.KindError, []genValid{
			{"hand_unknown_peer_of_request", &p2pwire.Error{Code: p2pwire.CodeUnknownPeer, MessageID: 9, Peer: bob, Reason: "gone"},
				"05 00 0005 03 0000000000000009 " + hB + "0004 676f6e65"},
			{"hand_malformed_closing", &p2pwire.Error{Code: p2pwire.CodeMalformed, Closing: true}, "05 00 0001 04 0000"},
			{"hand_unknown_code_accepted", &p2pwire.Error{Code: 0xFFFF}, "05 00 ffff 00 0000"},
			{"reason_max", &p2pwire.Error{Code: p2pwire.CodeRateLimited, Reason: strings.Repeat("r", p2pwire.MaxReasonLen)}, ""},
		}, []genInvalid{
			{"code_0", "05 00 0000 00 0000", "code", "bad_value"},
			{"undefined_flag", "05 00 0001 08 0000", "error_flags", "bad_flags"},
			{"message_id_0", "05 00 0005 01 0000000000000000 0000", "message_id", "bad_value"},
			{"reason_bad_utf8", "05 00 0001 00 0001 ff", "reason", "bad_utf8"},
			{"reason_over_cap_257", "05 00 0001 00 0101", "reason", "over_cap"},
			{"reason_missing", "05 00 0001 00", "reason", "truncated"},
		}},
		{p2pwire.KindPing, []genValid{
			{"hand_value", &p2pwire.Ping{Value: 0x0102030405060708}, "06 00 0102030405060708"},
		}, []genInvalid{
			{"value_truncated", "06 00 01020304050607", "value", "truncated"},
			{"trailing_byte", "06 00 0102030405060708 00", "message", "trailing_bytes"},
			{"pong_under_ping", "07 00 0102030405060708", "kind", "wrong_kind"},
		}},
		{p2pwire.KindPong, []genValid{
			{"hand_value", &p2pwire.Pong{Value: 0x0102030405060708}, "07 00 0102030405060708"},
		}, []genInvalid{
			{"value_missing", "07 00", "value", "truncated"},
		}},
		{p2pwire.KindGoodbye, []genValid{
			{"hand_empty", &p2pwire.Goodbye{}, "08 00"},
		}, []genInvalid{
			{"trailing_byte", "08 00 00", "message", "trailing_bytes"},
			{"route_flags_to", "08 01 " + hB, "route_flags", "bad_flags"},
		}},
		{p2pwire.KindMessage, []genValid{
			{"hand_to_bob_header_payload", &p2pwire.Msg{Route: p2pwire.Route{To: bob},
				Envelope: p2pwire.Envelope{Header: "hi", Payload: []byte("pay")}},
				"10 01 " + hB + "02 0002 6869 706179"},
			{"hand_broadcast_empty", &p2pwire.Msg{Route: p2pwire.Route{Broadcast: true}}, "10 04 00"},
			{"hand_delivered_broadcast_from_alice", &p2pwire.Msg{Route: p2pwire.Route{From: alice, Broadcast: true},
				Envelope: p2pwire.Envelope{Payload: []byte("pay")}}, "10 06 " + hA + "00 706179"},
			{"hand_direct", &p2pwire.Msg{Envelope: p2pwire.Envelope{Payload: []byte("pay")}}, "10 00 00 706179"},
			{"hand_all_fields", &p2pwire.Msg{Route: p2pwire.Route{From: bob}, Envelope: p2pwire.Envelope{MessageID: 1, Header: "h",
				Pairs: []p2pwire.Pair{{Key: "a", Value: "1"}, {Key: "b", Value: ""}}, Payload: []byte{0}}},
				"10 02 " + hB + "07 0000000000000001 0001 68 02 01 61 0001 31 01 62 0000 00"},
			{"max_fields", &p2pwire.Msg{Route: p2pwire.Route{To: bob}, Envelope: p2pwire.Envelope{MessageID: 1<<64 - 1,
				Header: strings.Repeat("é", p2pwire.MaxHeaderLen/2), Pairs: maxPairs(), Payload: bytes.Repeat([]byte{0x5A}, 64)}}, ""},
		}, []genInvalid{
			{"to_and_from", "10 03 " + hB + hA + "00", "route_flags", "bad_flags"},
			{"to_and_broadcast", "10 05 " + hB + "00", "route_flags", "bad_flags"},
			{"undefined_route_flag", "10 08 00", "route_flags", "bad_flags"},
			{"to_empty", "10 01 00 00", "to", "empty"},
			{"to_over_cap_97", "10 01 61", "to", "over_cap"},
			{"to_space", "10 01 03 612062 00", "to", "bad_peer_id"},
			{"to_truncated", "10 01 08 626f627e", "to", "truncated"},
			{"from_slash", "10 02 03 612f62 00", "from", "bad_peer_id"},
			{"env_flags_missing", "10 01 " + hB, "env_flags", "truncated"},
			{"undefined_env_flag", "10 01 " + hB + "08", "env_flags", "bad_flags"},
			{"message_id_0", "10 01 " + hB + "01 0000000000000000", "message_id", "bad_value"},
			{"message_id_truncated", "10 01 " + hB + "01 00000000", "message_id", "truncated"},
			{"header_empty", "10 01 " + hB + "02 0000", "header", "empty"},
			{"header_over_cap_1025", "10 01 " + hB + "02 0401", "header", "over_cap"},
			{"header_bad_utf8", "10 01 " + hB + "02 0002 c328", "header", "bad_utf8"},
			{"header_truncated", "10 01 " + hB + "02 0005 6869", "header", "truncated"},
			{"pairs_count_0", "10 01 " + hB + "04 00", "pairs", "empty"},
			{"pairs_over_cap_33", "10 01 " + hB + "04 21", "pairs", "over_cap"},
			{"key_empty", "10 01 " + hB + "04 01 00 0000", "key", "empty"},
			{"key_over_cap_65", "10 01 " + hB + "04 01 41", "key", "over_cap"},
			{"keys_not_ascending", "10 01 " + hB + "04 02 01 62 0000 01 61 0000", "key", "not_ascending"},
			{"keys_duplicate", "10 01 " + hB + "04 02 01 61 0000 01 61 0000", "key", "not_ascending"},
			{"value_over_cap_1025", "10 01 " + hB + "04 01 01 61 0401", "value", "over_cap"},
			{"value_bad_utf8", "10 01 " + hB + "04 01 01 61 0001 80", "value", "bad_utf8"},
			{"key_bad_utf8", "10 01 " + hB + "04 01 01 fe 0000", "key", "bad_utf8"},
			{"request_under_message", "11 01 " + hB + "01 000000000000002a", "kind", "wrong_kind"},
		}},
		{p2pwire.KindRequest, []genValid{
			{"hand_to_bob", &p2pwire.Request{Route: p2pwire.Route{To: bob}, Envelope: p2pwire.Envelope{MessageID: 42, Payload: []byte("?")}},
				"11 01 " + hB + "01 000000000000002a 3f"},
			{"hand_delivered_from_alice", &p2pwire.Request{Route: p2pwire.Route{From: alice}, Envelope: p2pwire.Envelope{MessageID: 42, Header: "who"}},
				"11 02 " + hA + "03 000000000000002a 0003 77686f"},
		}, []genInvalid{
			{"no_message_id", "11 01 " + hB + "00 3f", "message_id", "missing"},
			{"broadcast", "11 04 01 000000000000002a", "route_flags", "bad_flags"},
			{"delivered_broadcast", "11 06 " + hA + "01 000000000000002a", "route_flags", "bad_flags"},
		}},
		{p2pwire.KindResponse, []genValid{
			{"hand_from_bob", &p2pwire.Response{Route: p2pwire.Route{From: bob}, Envelope: p2pwire.Envelope{MessageID: 42, Payload: []byte("ok")}},
				"12 02 " + hB + "01 000000000000002a 6f6b"},
		}, []genInvalid{
			{"no_message_id", "12 01 " + hA + "02 0002 6f6b", "message_id", "missing"},
			{"broadcast", "12 04 01 000000000000002a", "route_flags", "bad_flags"},
		}},
		{p2pwire.KindRegister, []genValid{
			{"hand_two_candidates", &p2pwire.Register{Candidates: []netip.AddrPort{ap("192.168.1.20:40000"), ap("[fd00::1]:40000")}},
				"20 00 02 04 c0a80114 9c40 06 fd000000000000000000000000000001 9c40"},
			{"hand_no_candidates", &p2pwire.Register{Candidates: []netip.AddrPort{}}, "20 00 00"},
			{"max_candidates", &p2pwire.Register{Candidates: manyCandidates()}, ""},
		}, []genInvalid{
			{"family_5", "20 00 01 05 c0a80114 9c40", "candidate", "bad_endpoint"},
			{"port_0", "20 00 01 04 c0a80114 0000", "candidate", "bad_endpoint"},
			{"v4_mapped_v6", "20 00 01 06 00000000000000000000ffffc0a80114 9c40", "candidate", "bad_endpoint"},
			{"count_over_cap_17", "20 00 11", "count", "over_cap"},
			{"address_truncated", "20 00 01 04 c0a8", "candidate", "truncated"},
			{"count_2_one_candidate", "20 00 02 04 c0a80114 9c40", "candidate", "truncated"},
			{"route_flags_to", "20 01 " + hB + "00", "route_flags", "bad_flags"},
		}},
		{p2pwire.KindRegistered, []genValid{
			{"hand_v4", &p2pwire.Registered{Observed: ap("203.0.113.5:54321")}, "21 00 04 cb007105 d431"},
			{"v6", &p2pwire.Registered{Observed: ap("[2001:db8::5]:443")}, ""},
		}, []genInvalid{
			{"port_0", "21 00 04 cb007105 0000", "observed", "bad_endpoint"},
			{"missing", "21 00", "observed", "truncated"},
			{"trailing_byte", "21 00 04 cb007105 d431 00", "message", "trailing_bytes"},
		}},
		{p2pwire.KindUDPMessage, []genValid{
			{"hand_to_bob", &p2pwire.UDPMsg{Route: p2pwire.Route{To: bob}, Envelope: p2pwire.Envelope{Header: "hi"}},
				"22 01 " + hB + "02 0002 6869"},
			{"hand_broadcast", &p2pwire.UDPMsg{Route: p2pwire.Route{Broadcast: true}, Envelope: p2pwire.Envelope{Payload: []byte{1}}},
				"22 04 00 01"},
			{"largest", &p2pwire.UDPMsg{Route: p2pwire.Route{To: bob},
				Envelope: p2pwire.Envelope{Payload: make([]byte, p2pwire.MaxRoutedRest-1)}}, ""},
		}, []genInvalid{
			{"one_byte_too_large", "22 01 " + hB + "00 " + strings.Repeat("00", p2pwire.MaxRoutedRest), "datagram", "too_large"},
			{"over_opened_size_direct", "22 00 00 " + strings.Repeat("00", p2pwire.MaxOpenedSize-2), "datagram", "too_large"},
			{"to_and_broadcast", "22 05 " + hB + "00", "route_flags", "bad_flags"},
		}},
		{p2pwire.KindReliable, []genValid{
			{"hand_realtime_to_bob", &p2pwire.Reliable{Route: p2pwire.Route{To: bob}, Channel: p2pwire.Realtime, Segment: []byte{1, 2, 3, 4}},
				"23 01 " + hB + "03 01020304"},
			{"hand_ch1_direct", &p2pwire.Reliable{Channel: p2pwire.Ch1, Segment: []byte{9}}, "23 00 01 09"},
			{"ch2_from_alice", &p2pwire.Reliable{Route: p2pwire.Route{From: alice}, Channel: p2pwire.Ch2, Segment: bytes.Repeat([]byte{0xC3}, 1100)}, ""},
		}, []genInvalid{
			{"channel_0", "23 01 " + hB + "00 01", "channel", "bad_value"},
			{"channel_4", "23 01 " + hB + "04 01", "channel", "bad_value"},
			{"segment_empty", "23 01 " + hB + "03", "segment", "empty"},
			{"channel_missing", "23 01 " + hB, "channel", "truncated"},
			{"broadcast", "23 04 03 01", "route_flags", "bad_flags"},
		}},
		{p2pwire.KindJumbo, []genValid{
			{"hand_one_chunk", &p2pwire.Jumbo{Route: p2pwire.Route{To: bob}, MessageID: 1, Index: 0, Count: 1, Total: 3, Chunk: []byte("abc")},
				"24 01 " + hB + "00000001 0000 0001 00000003 616263"},
			{"hand_last_of_two", &p2pwire.Jumbo{Route: p2pwire.Route{From: alice, Broadcast: true}, MessageID: 0xFFFFFFFF, Index: 1, Count: 2,
				Total: 1025, Chunk: []byte{0xEE}}, "24 06 " + hA + "ffffffff 0001 0002 00000401 ee"},
			{"first_of_two", &p2pwire.Jumbo{Route: p2pwire.Route{To: bob}, MessageID: 2, Index: 0, Count: 2, Total: 1025,
				Chunk: bytes.Repeat([]byte{0x11}, p2pwire.JumboChunkSize)}, ""},
			{"last_of_max", &p2pwire.Jumbo{Route: p2pwire.Route{To: bob}, MessageID: 3, Index: p2pwire.MaxJumboChunks - 1,
				Count: p2pwire.MaxJumboChunks, Total: p2pwire.MaxJumboSize, Chunk: bytes.Repeat([]byte{0x22}, p2pwire.JumboChunkSize)}, ""},
		}, []genInvalid{
			{"message_id_0", "24 01 " + hB + "00000000 0000 0001 00000003 616263", "message_id", "bad_value"},
			{"count_0", "24 01 " + hB + "00000001 0000 0000 00000003 616263", "count", "bad_value"},
			{"count_over_max_15876", "24 01 " + hB + "00000001 0000 3e04 00f80c01 616263", "count", "bad_value"},
			{"index_equals_count", "24 01 " + hB + "00000001 0001 0001 00000003 616263", "index", "bad_value"},
			{"total_0", "24 01 " + hB + "00000001 0000 0001 00000000", "total", "bad_value"},
			{"total_over_max", "24 01 " + hB + "00000001 0000 3e03 00f80c01 616263", "total", "bad_value"},
			{"count_not_ceil_total", "24 01 " + hB + "00000001 0000 0002 00000003 616263", "count", "bad_size"},
			{"chunk_short", "24 01 " + hB + "00000001 0000 0001 00000003 6162", "chunk", "bad_size"},
			{"chunk_long", "24 01 " + hB + "00000001 0000 0001 00000003 61626364", "chunk", "bad_size"},
			{"total_truncated", "24 01 " + hB + "00000001 0000 0001 0000", "total", "truncated"},
			{"request_flags_direct_ok_but_to_from", "24 03 " + hB + hA + "00000001 0000 0001 00000003 616263", "route_flags", "bad_flags"},
		}},
	}
}

func manyPeers(n int) []p2pwire.PeerID {
	ps := make([]p2pwire.PeerID, n)
	for i := range ps {
		ps[i] = p2pwire.PeerID(fmt.Sprintf("user%04d~%08x", i, i*7919))
	}
	return ps
}

func maxPairs() []p2pwire.Pair {
	ps := make([]p2pwire.Pair, p2pwire.MaxPairs)
	for i := range ps {
		ps[i] = p2pwire.Pair{Key: fmt.Sprintf("k%02d", i), Value: strings.Repeat("v", i*32)}
	}
	ps[0].Key = strings.Repeat("a", p2pwire.MaxKeyLen)
	ps[p2pwire.MaxPairs-1].Value = strings.Repeat("w", p2pwire.MaxValueLen)
	return ps
}

func manyCandidates() []netip.AddrPort {
	cs := make([]netip.AddrPort, p2pwire.MaxCandidates)
	for i := range cs {
		if i%2 == 0 {
			cs[i] = netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(i)}), uint16(50000+i))
		} else {
			cs[i] = netip.AddrPortFrom(netip.AddrFrom16([16]byte{0xfe, 0x80, 15: byte(i)}), 65535)
		}
	}
	return cs
}

var routingInvalid = []genInvalid{
	{"empty_body", "", "kind", "truncated"},
	{"kind_only", "10", "route_flags", "truncated"},
	{"control_kind_with_broadcast", "06 04 0102030405060708", "route_flags", "bad_flags"},
	{"to_length_only", "10 01", "to", "truncated"},
	{"from_after_to_missing", "22 02", "from", "truncated"},
}

var unknownKinds = []struct{ name, hex string }{
	{"kind_0", "00 00"},
	{"kind_0x0c", "0c 00"},
	{"kind_0x13", "13 01 " + hB + "00"},
	{"kind_0x29", "29 00"},
	{"kind_0xff", "ff"},
}

var stamping = []struct{ name, body, from, delivered string }{
	{"message_to_bob", "10 01 " + hB + "02 0002 6869 706179", alice,
		"00000015 10 02 " + hA + "02 0002 6869 706179"},
	{"message_broadcast", "10 04 00 706179", alice, "00000011 10 06 " + hA + "00 706179"},
	{"request_to_alice", "11 01 " + hA + "01 000000000000002a 3f", bob, "00000015 11 02 " + hB + "01 000000000000002a 3f"},
}

var hubRefuses = []struct{ name, hex string }{
	{"from_set", "10 02 " + hA + "00"},
	{"from_set_broadcast", "10 06 " + hA + "00"},
	{"no_destination", "10 00 00 706179"},
	{"reliable_no_destination", "23 00 01 09"},
	{"welcome", "02 00 01 00 " + hA + "05 6c6f626279 00100000 00007530 02 7231"},
	{"peer_set", "03 00 0000000000000005 0002 " + hA + hB},
	{"error", "05 00 0001 04 0000"},
	{"registered", "21 00 04 cb007105 d431"},
	{"path_challenge", "27 00 " + hData},
}

var envelopes = []struct {
	name string
	env  p2pwire.Envelope
	hand string
}{
	{"hand_empty", p2pwire.Envelope{}, "00"},
	{"hand_header_and_payload", p2pwire.Envelope{Header: "file", Payload: []byte{1, 2}}, "02 0004 66696c65 0102"},
}

// TestGenerate checks the hand-written hex against the encoder and rewrites
// (-update) or compares the vector files.
func TestGenerate(t *testing.T) {
	writeOrCompare(t, "messages.json", generateMessages(t))
	writeOrCompare(t, "framing.json", generateFraming(t))
	writeOrCompare(t, "datagrams.json", generateDatagrams(t))
}

func writeOrCompare(t *testing.T, name string, b []byte) {
	path := filepath.Join(vectorDir, name)
	if *update {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(old, b) {
		t.Errorf("%s is stale: run go test ./protocol/p2pwire -run TestGenerate -update", path)
	}
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// items writes one JSON object per line.
func items(t *testing.T, b *bytes.Buffer, indent string, vs []any) {
	for i, v := range vs {
		b.WriteString(indent + mustJSON(t, v))
		if i < len(vs)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
}

func generateMessages(t *testing.T) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "{\n  \"protocol_version\": %d,\n  \"about\": %s,\n  \"hand_written\": %s,\n  \"messages\": [\n",
		p2pwire.Version, mustJSON(t, messagesAbout), mustJSON(t, messagesHandWritten))
	kinds := append(append(genKinds(), genPunchKinds()...), genPathKinds()...)
	for i, gk := range kinds {
		var valid, invalid []any
		for _, g := range gk.valid {
			enc, err := p2pwire.Append(nil, g.msg)
			if err != nil {
				t.Fatalf("%s/%s: %v", gk.kind, g.name, err)
			}
			if g.hand != "" && !bytes.Equal(enc, h(g.hand)) {
				t.Errorf("%s/%s: the encoder gives\n%x\nthe hand-written hex is\n%x", gk.kind, g.name, enc, []byte(h(g.hand)))
			}
			if strings.HasPrefix(g.name, "hand_") != (g.hand != "") {
				t.Errorf("%s/%s: hand-written items, and only they, are named hand_", gk.kind, g.name)
			}
			valid = append(valid, validVector{Name: g.name, Fields: json.RawMessage(mustJSON(t, g.msg)), Hex: enc})
		}
		for _, g := range gk.invalid {
			invalid = append(invalid, invalidVector{Name: g.name, Hex: h(g.hex), Field: g.field, Reason: g.reason})
		}
		fmt.Fprintf(&b, "    {\n      \"kind\": %d,\n      \"name\": %q,\n      \"valid\": [\n", gk.kind, gk.kind)
		items(t, &b, "        ", valid)
		b.WriteString("      ],\n      \"invalid\": [\n")
		items(t, &b, "        ", invalid)
		b.WriteString("      ]\n    }")
		if i < len(kinds)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	var vs []any
	for _, g := range routingInvalid {
		vs = append(vs, invalidVector{Name: g.name, Hex: h(g.hex), Field: g.field, Reason: g.reason})
	}
	b.WriteString("  ],\n  \"routing_invalid\": [\n")
	items(t, &b, "    ", vs)
	vs = nil
	for _, g := range unknownKinds {
		vs = append(vs, unknownVector{Name: g.name, Hex: h(g.hex)})
	}
	b.WriteString("  ],\n  \"unknown_kinds\": [\n")
	items(t, &b, "    ", vs)
	vs = nil
	for _, g := range stamping {
		vs = append(vs, stampVector{Name: g.name, Body: h(g.body), From: g.from, Delivered: h(g.delivered)})
	}
	b.WriteString("  ],\n  \"stamping\": [\n")
	items(t, &b, "    ", vs)
	vs = nil
	for _, g := range hubRefuses {
		vs = append(vs, unknownVector{Name: g.name, Hex: h(g.hex)})
	}
	b.WriteString("  ],\n  \"hub_refuses\": [\n")
	items(t, &b, "    ", vs)
	vs = nil
	for _, g := range peerRefuses {
		vs = append(vs, unknownVector{Name: g.name, Hex: h(g.hex)})
	}
	b.WriteString("  ],\n  \"peer_refuses\": [\n")
	items(t, &b, "    ", vs)
	vs = nil
	for _, g := range envelopes {
		enc, err := g.env.AppendTo(nil)
		if err != nil || !bytes.Equal(enc, h(g.hand)) {
			t.Errorf("envelope %s: %x, %v; hand-written %s", g.name, enc, err, g.hand)
		}
		vs = append(vs, envelopeVector{Name: g.name, Fields: json.RawMessage(mustJSON(t, g.env)), Hex: enc})
	}
	b.WriteString("  ],\n  \"envelopes\": [\n")
	items(t, &b, "    ", vs)
	b.WriteString("  ]\n}\n")
	return b.Bytes()
}

const framingAbout = "TLS framing: u32 big-endian body length, then the body. hex is a byte stream; a reader with maximum max " +
	"(0: the default, 1 MiB) reads bodies, in order, then fails with error (\"\" for a clean end of stream between frames; " +
	"too_large and empty name the frame_length problem, checked before any of the body is read; unexpected_eof for a stream " +
	"that ends inside a frame). Composed by hand."

func generateFraming(t *testing.T) []byte {
	type stream struct {
		Name   string     `json:"name"`
		Max    int        `json:"max"`
		Hex    hexBytes   `json:"hex"`
		Bodies []hexBytes `json:"bodies"`
		Error  string     `json:"error"`
	}
	ss := []stream{
		{"two_frames", 0, h("00000002 0800 0000000a 0600 0102030405060708"), []hexBytes{h("0800"), h("06000102030405060708")}, ""},
		{"at_max", 4096, h("00000002 0800"), []hexBytes{h("0800")}, ""},
		{"over_max_before_body", 4096, h("00001001 10"), nil, "too_large"},
		{"over_default_max", 0, h("00100001"), nil, "too_large"},
		{"over_hard_cap_whatever_max", 1 << 30, h("01000001"), nil, "too_large"},
		{"length_0", 0, h("00000000"), nil, "empty"},
		{"length_1", 0, h("00000001 08"), nil, "empty"},
		{"frame_then_length_1", 0, h("00000002 0800 00000001 08"), []hexBytes{h("0800")}, "empty"},
		{"header_cut", 0, h("000000"), nil, "unexpected_eof"},
		{"body_cut", 0, h("0000000a 0600 0102"), nil, "unexpected_eof"},
	}
	var vs []any
	for _, s := range ss {
		vs = append(vs, s)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "{\n  \"about\": %s,\n  \"streams\": [\n", mustJSON(t, framingAbout))
	items(t, &b, "    ", vs)
	b.WriteString("  ]\n}\n")
	return b.Bytes()
}

const datagramsAbout = "Sealed datagrams: marker 0xe1, key_id u32 (not 0), seq u64, then ciphertext and a 16-byte tag; at most " +
	"1232 bytes in all. sealed: the prefix fields, the AEAD nonce (key_id then seq, big-endian) and the length of the sealed part " +
	"(everything after the 13-byte prefix, the additional data). sealed_invalid: datagrams a receiver drops, with the field and " +
	"reason. jumbo_sizes: a jumbo message of total bytes travels in count chunks of 1024 bytes, the last one last_chunk bytes; " +
	"count 0 means total is not a valid jumbo size. Composed by hand."

func generateDatagrams(t *testing.T) []byte {
	type sealed struct {
		Name      string   `json:"name"`
		Hex       hexBytes `json:"hex"`
		KeyID     uint32   `json:"key_id"`
		Seq       uint64   `json:"seq"`
		Nonce     hexBytes `json:"nonce"`
		SealedLen int      `json:"sealed_len"`
	}
	tag := strings.Repeat("ab", 16)
	ss := []sealed{
		{"tag_only", h("e1 00000001 0000000000000000 " + tag), 1, 0, h("00000001 0000000000000000"), 16},
		{"with_ciphertext", h("e1 deadbeef 0102030405060708 c0ffee " + tag), 0xdeadbeef, 0x0102030405060708,
			h("deadbeef 0102030405060708"), 19},
		{"largest", h("e1 00000002 ffffffffffffffff " + strings.Repeat("00", p2pwire.MaxDatagramSize-13)), 2, 1<<64 - 1,
			h("00000002 ffffffffffffffff"), p2pwire.MaxDatagramSize - 13},
	}
	inv := []genInvalid{
		{"empty", "", "marker", "truncated"},
		{"stun_binding_request", "0001 0000 2112a442 000102030405060708090a0b", "marker", "bad_marker"},
		{"other_marker", "e2 00000001 0000000000000000 " + tag, "marker", "bad_marker"},
		{"key_id_truncated", "e1 0000", "key_id", "truncated"},
		{"key_id_0", "e1 00000000 0000000000000000 " + tag, "key_id", "bad_value"},
		{"seq_truncated", "e1 00000001 00000000", "seq", "truncated"},
		{"tag_truncated", "e1 00000001 0000000000000000 " + tag[:30], "sealed", "truncated"},
		{"one_byte_too_large", "e1 00000002 ffffffffffffffff " + strings.Repeat("00", p2pwire.MaxDatagramSize-13+1), "datagram", "too_large"},
	}
	jumbo := []struct {
		Total     int `json:"total"`
		Count     int `json:"count"`
		LastChunk int `json:"last_chunk"`
	}{{0, 0, 0}, {1, 1, 1}, {1024, 1, 1024}, {1025, 2, 1}, {2048, 2, 1024}, {16256000, 15875, 1024}, {16256001, 0, 0}}
	var b bytes.Buffer
	fmt.Fprintf(&b, "{\n  \"about\": %s,\n  \"sealed\": [\n", mustJSON(t, datagramsAbout))
	var vs []any
	for _, s := range ss {
		vs = append(vs, s)
	}
	items(t, &b, "    ", vs)
	vs = nil
	for _, g := range inv {
		vs = append(vs, invalidVector{Name: g.name, Hex: h(g.hex), Field: g.field, Reason: g.reason})
	}
	b.WriteString("  ],\n  \"sealed_invalid\": [\n")
	items(t, &b, "    ", vs)
	vs = nil
	for _, j := range jumbo {
		vs = append(vs, j)
	}
	b.WriteString("  ],\n  \"jumbo_sizes\": [\n")
	items(t, &b, "    ", vs)
	b.WriteString("  ]\n}\n")
	return b.Bytes()
}
