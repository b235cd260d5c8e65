package p2pwire_test

import "github.com/switchboardgg/switchboard/protocol/p2pwire"

// The path-validation kinds' vectors (docs/protocol/p2p.md §12.4), merged
// into messages.json by TestGenerate.

const hData = "0123456789abcdef "

func genPathKinds() []genKind {
	data := p2pwire.PathData{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}
	return []genKind{
		{p2pwire.KindPathChallenge, []genValid{
			{"hand_data", &p2pwire.PathChallenge{Data: data}, "27 00 " + hData},
			{"hand_zero", &p2pwire.PathChallenge{}, "27 00 0000000000000000"},
		}, []genInvalid{
			{"data_7_bytes", "27 00 0123456789abcd", "data", "truncated"},
			{"data_missing", "27 00", "data", "truncated"},
			{"data_9_bytes", "27 00 " + hData + "00", "message", "trailing_bytes"},
			{"to_set", "27 01 " + hB + hData, "route_flags", "bad_flags"},
			{"response_under_challenge", "28 00 " + hData, "kind", "wrong_kind"},
		}},
		{p2pwire.KindPathResponse, []genValid{
			{"hand_data", &p2pwire.PathResponse{Data: data}, "28 00 " + hData},
		}, []genInvalid{
			{"data_7_bytes", "28 00 0123456789abcd", "data", "truncated"},
			{"data_9_bytes", "28 00 " + hData + "ff", "message", "trailing_bytes"},
			{"broadcast", "28 04 " + hData, "route_flags", "bad_flags"},
			{"challenge_under_response", "27 00 " + hData, "kind", "wrong_kind"},
		}},
	}
}

// peerRefuses are well-formed bodies a peer drops when they come from the
// hub (or from another peer): kinds only a peer sends, to a hub.
var peerRefuses = []struct{ name, hex string }{
	{"path_response", "28 00 " + hData},
	{"register", "20 00 00"},
	{"goodbye", "08 00"},
}
