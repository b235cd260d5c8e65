package p2pwire_test

import (
	"net/netip"
	"strings"

	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// The hole-punch kinds' vectors (docs/protocol/p2p.md §20), merged into
// messages.json by TestGenerate.

const (
	hSecret = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f "
	hPubB   = "04 c6120003 9c41 "                         // 198.18.0.3:40001
	hPubA   = "04 c6120002 9c41 "                         // 198.18.0.2:40001
	hV6     = "06 20010db8000000000000000000000001 01bb " // [2001:db8::1]:443
)

func genPunchKinds() []genKind {
	ap := netip.MustParseAddrPort
	many := make([]netip.AddrPort, p2pwire.MaxCandidates)
	for i := range many {
		many[i] = netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)}), uint16(50000+i))
	}
	return []genKind{
		{p2pwire.KindPunchRequest, []genValid{
			{"hand_udp", &p2pwire.PunchRequest{RequestID: 7, Transport: p2pwire.TransportUDP, TimeoutMS: 5000, Peer: bob},
				"09 00 0000000000000007 01 00001388 " + hB},
			{"tcp_max_timeout", &p2pwire.PunchRequest{RequestID: 1<<64 - 1, Transport: p2pwire.TransportTCP,
				TimeoutMS: p2pwire.MaxPunchTimeoutMS, Peer: p2pwire.PeerID(strings.Repeat("p", 90) + "~12345")}, ""},
		}, []genInvalid{
			{"request_id_0", "09 00 0000000000000000 01 00001388 " + hB, "request_id", "bad_value"},
			{"transport_3", "09 00 0000000000000007 03 00001388 " + hB, "transport", "bad_value"},
			{"transport_0", "09 00 0000000000000007 00 00001388 " + hB, "transport", "bad_value"},
			{"timeout_0", "09 00 0000000000000007 01 00000000 " + hB, "timeout_ms", "bad_value"},
			{"timeout_over_60000", "09 00 0000000000000007 01 0000ea61 " + hB, "timeout_ms", "bad_value"},
			{"peer_empty", "09 00 0000000000000007 01 00001388 00", "peer", "empty"},
			{"peer_truncated", "09 00 0000000000000007 01 00001388 08 626f62", "peer", "truncated"},
			{"trailing_byte", "09 00 0000000000000007 01 00001388 " + hB + "00", "message", "trailing_bytes"},
			{"route_flags_set", "09 01 " + hB + "0000000000000007 01 00001388 " + hB, "route_flags", "bad_flags"},
		}},
		{p2pwire.KindPunchOffer, []genValid{
			{"hand_initiator_udp", &p2pwire.PunchOffer{PunchID: 1, RequestID: 7, Transport: p2pwire.TransportUDP,
				TimeoutMS: 4990, Peer: bob, KeyID: 0x80000001, Secret: secret(), Public: ap("198.18.0.3:40001"),
				Candidates: []netip.AddrPort{ap("198.19.2.2:40001")}},
				"0a 00 0000000000000001 0000000000000007 01 0000137e " + hB + "80000001 " + hSecret + hPubB + "01 04 c6130202 9c41"},
			{"hand_responder_tcp_v6", &p2pwire.PunchOffer{PunchID: 1, Transport: p2pwire.TransportTCP,
				TimeoutMS: 4990, Peer: alice, KeyID: 0x80000001, Secret: secret(), Public: ap("[2001:db8::1]:443")},
				"0a 00 0000000000000001 0000000000000000 02 0000137e " + hA + "80000001 " + hSecret + hV6 + "00"},
			{"max_candidates", &p2pwire.PunchOffer{PunchID: 1<<64 - 1, RequestID: 1, Transport: p2pwire.TransportUDP,
				TimeoutMS: p2pwire.MaxPunchTimeoutMS, Peer: bob, KeyID: 1<<32 - 1, Secret: secret(),
				Public: ap("198.18.0.3:65535"), Candidates: many}, ""},
		}, []genInvalid{
			{"punch_id_0", "0a 00 0000000000000000 0000000000000007 01 0000137e " + hB + "80000001 " + hSecret + hPubB + "00",
				"punch_id", "bad_value"},
			{"transport_9", "0a 00 0000000000000001 0000000000000007 09 0000137e " + hB + "80000001 " + hSecret + hPubB + "00",
				"transport", "bad_value"},
			{"key_id_0", "0a 00 0000000000000001 0000000000000007 01 0000137e " + hB + "00000000 " + hSecret + hPubB + "00",
				"key_id", "bad_value"},
			{"secret_truncated", "0a 00 0000000000000001 0000000000000007 01 0000137e " + hB + "80000001 0001",
				"secret", "truncated"},
			{"public_port_0", "0a 00 0000000000000001 0000000000000007 01 0000137e " + hB + "80000001 " + hSecret + "04 c6120003 0000 00",
				"public", "bad_endpoint"},
			{"public_family_5", "0a 00 0000000000000001 0000000000000007 01 0000137e " + hB + "80000001 " + hSecret + "05 c6120003 9c41 00",
				"public", "bad_endpoint"},
			{"count_17", "0a 00 0000000000000001 0000000000000007 01 0000137e " + hB + "80000001 " + hSecret + hPubB + "11",
				"count", "over_cap"},
			{"candidate_missing", "0a 00 0000000000000001 0000000000000007 01 0000137e " + hB + "80000001 " + hSecret + hPubB + "01",
				"candidate", "truncated"},
			{"candidate_v4_mapped", "0a 00 0000000000000001 0000000000000007 01 0000137e " + hB + "80000001 " + hSecret + hPubB +
				"01 06 00000000000000000000ffffc6130202 9c41", "candidate", "bad_endpoint"},
		}},
		{p2pwire.KindPunchResult, []genValid{
			{"hand_up", &p2pwire.PunchResult{PunchID: 1, Outcome: p2pwire.PunchUp}, "0b 00 0000000000000001 01"},
			{"hand_failed", &p2pwire.PunchResult{PunchID: 1<<64 - 1, Outcome: p2pwire.PunchFailed}, "0b 00 ffffffffffffffff 02"},
		}, []genInvalid{
			{"punch_id_0", "0b 00 0000000000000000 01", "punch_id", "bad_value"},
			{"outcome_0", "0b 00 0000000000000001 00", "outcome", "bad_value"},
			{"outcome_3", "0b 00 0000000000000001 03", "outcome", "bad_value"},
			{"outcome_missing", "0b 00 0000000000000001", "outcome", "truncated"},
		}},
		{p2pwire.KindPunchProbe, []genValid{
			{"hand_v4", &p2pwire.PunchProbe{PunchID: 1, Target: ap("198.18.0.3:40001")}, "25 00 0000000000000001 " + hPubB},
			{"hand_v6", &p2pwire.PunchProbe{PunchID: 2, Target: ap("[2001:db8::1]:443")}, "25 00 0000000000000002 " + hV6},
		}, []genInvalid{
			{"punch_id_0", "25 00 0000000000000000 " + hPubB, "punch_id", "bad_value"},
			{"target_port_0", "25 00 0000000000000001 04 c6120003 0000", "target", "bad_endpoint"},
			{"to_set", "25 01 " + hB + "0000000000000001 " + hPubB, "route_flags", "bad_flags"},
		}},
		{p2pwire.KindPunchAck, []genValid{
			{"hand_v4", &p2pwire.PunchAck{PunchID: 1, Target: ap("198.18.0.3:40001"), Observed: ap("198.18.0.2:40001")},
				"26 00 0000000000000001 " + hPubB + hPubA},
		}, []genInvalid{
			{"observed_missing", "26 00 0000000000000001 " + hPubB, "observed", "truncated"},
			{"trailing_byte", "26 00 0000000000000001 " + hPubB + hPubA + "00", "message", "trailing_bytes"},
		}},
	}
}
