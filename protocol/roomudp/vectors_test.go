package roomudp_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboardgg/switchboard/internal/sealed"
	"github.com/switchboardgg/switchboard/protocol/roomudp"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
	"github.com/switchboardgg/switchboard/tokens"
)

// update rewrites testdata/roomwire/udp.json from the Go code:
//
//	go test ./protocol/roomudp -run TestVectors -update
var update = flag.Bool("update", false, "rewrite testdata/roomwire/udp.json")

var vectorsPath = filepath.Join("..", "..", "testdata", "roomwire", "udp.json")

type vectorFile struct {
	About     string            `json:"about"`
	Derive    []deriveVector    `json:"derive"`
	Seal      []sealVector      `json:"seal"`
	Handshake []handshakeVector `json:"handshake"`
	Reply     []replyVector     `json:"reply"`
	Replay    []replayVector    `json:"replay"`
	Inputs    []inputsVector    `json:"inputs"`
	Frame     []frameVector     `json:"frame"`
	Path      []pathVector      `json:"path"`
}

// pathVector is a PATH_CHALLENGE (channel 4) or PATH_RESPONSE (channel 5)
// body, who sends it, and whether the receiver accepts it: exactly 8
// bytes, in its direction (challenge node → client, response client →
// node).
type pathVector struct {
	Name     string `json:"name"`
	Channel  int    `json:"channel"`
	FromNode bool   `json:"from_node"`
	Body     string `json:"body"`
	Valid    bool   `json:"valid"`
}

// inputsVector is an INPUTS body (channel 2) and what a node reads from
// it: valid or not, and the INPUT message of each sequence number.
type inputsVector struct {
	Name     string        `json:"name"`
	Body     string        `json:"body"`
	Valid    bool          `json:"valid"`
	FirstSeq uint32        `json:"first_seq,omitempty"`
	Inputs   []inputsEntry `json:"inputs,omitempty"`
}

type inputsEntry struct {
	Seq      uint32 `json:"seq"`
	AckFrame uint32 `json:"ack_frame"`
	Data     string `json:"data"`
	Message  string `json:"message"`
}

// frameVector is a FRAME body (channel 3) and what a client reads from it.
type frameVector struct {
	Name     string `json:"name"`
	Body     string `json:"body"`
	Valid    bool   `json:"valid"`
	InputSeq uint32 `json:"input_seq,omitempty"`
	Frame    string `json:"frame,omitempty"`
}

type deriveVector struct {
	Name         string `json:"name"`
	SigningKey   string `json:"signing_key"`
	KeyID        string `json:"key_id"`
	UDPSecret    string `json:"udp_secret"`
	SessionKey   string `json:"session_key"`
	ClientNonce  string `json:"client_nonce"`
	ServerNonce  string `json:"server_nonce"`
	HandshakeI2R string `json:"handshake_i2r"`
	HandshakeR2I string `json:"handshake_r2i"`
	SessionI2R   string `json:"session_i2r"`
	SessionR2I   string `json:"session_r2i"`
}

type sealVector struct {
	Name     string `json:"name"`
	Key      string `json:"key"`
	KeyID    uint32 `json:"key_id"`
	Sequence uint64 `json:"sequence"`
	Channel  int    `json:"channel"`
	Body     string `json:"body"`
	Datagram string `json:"datagram"`
}

type handshakeVector struct {
	Name        string `json:"name"`
	SessionKey  string `json:"session_key"`
	KeyID       string `json:"key_id"`
	ClientNonce string `json:"client_nonce"`
	Sequence    uint64 `json:"sequence"`
	Handshake   string `json:"handshake"`
	Datagram    string `json:"datagram"`
}

type replyVector struct {
	Name        string `json:"name"`
	SessionKey  string `json:"session_key"`
	ClientNonce string `json:"client_nonce"`
	ServerNonce string `json:"server_nonce"`
	Sequence    uint64 `json:"sequence"`
	Message     string `json:"message"`
	Datagram    string `json:"datagram"`
}

type replayVector struct {
	Name  string `json:"name"`
	Key   string `json:"key"`
	KeyID uint32 `json:"key_id"`
	Steps []struct {
		Datagram string `json:"datagram"`
		Result   string `json:"result"` // ok, replay, auth
	} `json:"steps"`
}

const about = "Vectors of docs/protocol/rooms-udp.md. Byte strings are lowercase hex; key_id in derive and " +
	"handshake is connect.key_id (unpadded base64url). derive: signing_key -> udp_secret -> session_key, then the " +
	"handshake keys (server nonce all zeros) and session keys for the nonces. seal: SESSION datagrams, payload = " +
	"channel byte || body, sealed with key, key_id, sequence. handshake: HANDSHAKE datagrams (1200 bytes) carrying " +
	"the rooms.md handshake bytes, sealed with the handshake I2R key (key id 0). reply: HANDSHAKE REPLY datagrams, " +
	"server_nonce || message sealed with the handshake R2I key (key id 0). replay: datagrams given in order to one " +
	"opener of key and key_id, with what it must do (ok, replay: dropped as already seen or too old, auth: dropped as forged). " +
	"inputs: INPUTS bodies (channel 2: first_seq u32, count u8, count x (length u8, INPUT message)) and whether a node " +
	"accepts them, with each entry's sequence number and INPUT. frame: FRAME bodies (channel 3: input_seq u32, FRAME " +
	"message) and whether a client accepts them. path: PATH_CHALLENGE (channel 4, node -> client) and PATH_RESPONSE " +
	"(channel 5, client -> node) bodies, the sender (from_node) and whether the receiver accepts them (8 bytes, right direction)."

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func key32(t testing.TB, s string) *[32]byte {
	t.Helper()
	var k [32]byte
	if copy(k[:], unhex(t, s)) != 32 {
		t.Fatalf("key %q is not 32 bytes", s)
	}
	return &k
}

func nonce16(t testing.TB, s string) *[16]byte {
	t.Helper()
	var n [16]byte
	if copy(n[:], unhex(t, s)) != 16 {
		t.Fatalf("nonce %q is not 16 bytes", s)
	}
	return &n
}

// sealAt seals payload with key at sequence seq (by sealing seq
// throwaway datagrams first: a Sealer only counts up).
func sealAt(t testing.TB, key []byte, keyID uint32, seq uint64, dst, payload []byte) []byte {
	t.Helper()
	s, err := sealed.NewSealer(key, keyID)
	if err != nil {
		t.Fatal(err)
	}
	for range seq {
		if _, err := s.Seal(nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	out, err := s.Seal(dst, payload)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func rep(b byte, n int) string { return strings.Repeat(hex.EncodeToString([]byte{b}), n) }

// specHello is the worked example of rooms.md §3 and rooms-udp.md §6.
func specHello(t testing.TB) []byte {
	t.Helper()
	hs, err := roomwire.AppendHandshake(nil, roomwire.KindHello, []byte("AQ3k"),
		&roomwire.Hello{ClientNonce: 0x0123456789ABCDEF, SDKVersion: "godot/0.1"})
	if err != nil {
		t.Fatal(err)
	}
	return hs
}

func generate(t *testing.T) vectorFile {
	f := vectorFile{About: about}
	kid := roomudp.KeyID{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	for _, d := range []struct{ name, sk, cn, sn string }{
		{"spec_example", rep(0x5a, 32), rep(0x11, 16), rep(0x22, 16)},
		{"counting", "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", "f0e0d0c0b0a090807060504030201000", "0f0e0d0c0b0a09080706050403020100"},
	} {
		secret := roomudp.Secret(unhex(t, d.sk))
		sk := roomudp.SessionKey(&secret, kid)
		hk, err := roomudp.HandshakeKeys(&sk, nonce16(t, d.cn))
		if err != nil {
			t.Fatal(err)
		}
		ss, err := roomudp.SessionKeys(&sk, nonce16(t, d.cn), nonce16(t, d.sn))
		if err != nil {
			t.Fatal(err)
		}
		f.Derive = append(f.Derive, deriveVector{
			Name: d.name, SigningKey: d.sk, KeyID: kid.String(),
			UDPSecret: hex.EncodeToString(secret[:]), SessionKey: hex.EncodeToString(sk[:]),
			ClientNonce: d.cn, ServerNonce: d.sn,
			HandshakeI2R: hex.EncodeToString(hk.I2R[:]), HandshakeR2I: hex.EncodeToString(hk.R2I[:]),
			SessionI2R: hex.EncodeToString(ss.I2R[:]), SessionR2I: hex.EncodeToString(ss.R2I[:]),
		})
	}
	kcpSeg := "2a00000051000001" + "00000000" + "00000000" + "00000000" + "01000000" + "07" // a KCP PUSH segment of conv 42 carrying one byte; opaque to this codec
	frame, err := (&roomwire.Frame{Frames: []roomwire.TickFrame{{Number: 9, Inputs: []roomwire.SeatInput{{Seat: 0, Data: []byte{1}}}}}}).AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		name    string
		key     string
		keyID   uint32
		seq     uint64
		channel int
		body    string
	}{
		{"kcp_first", rep(0x42, 32), 0x2a, 0, roomudp.ChannelKCP, kcpSeg},
		{"frame_unreliable", rep(0x42, 32), 0x2a, 5, roomudp.ChannelMessage, hex.EncodeToString(frame)},
		{"custom_unreliable_big_seq", rep(0x07, 32), 0xdeadbeef, 1000, roomudp.ChannelMessage, "200003010003616263"},
		{"inputs_two", rep(0x42, 32), 0x2a, 6, roomudp.ChannelInputs, hex.EncodeToString(inputsBody(t, 11, 8, [][]byte{{0xa1}, {0xa2, 0xa3}}))},
		{"frame_acked", rep(0x42, 32), 0x2a, 7, roomudp.ChannelFrame, hex.EncodeToString(roomudp.AppendFrame(nil, 12, frame))},
		{"path_challenge", rep(0x42, 32), 0x2a, 8, roomudp.ChannelPathChallenge, "0102030405060708"},
		{"path_response", rep(0x43, 32), 0x2a, 9, roomudp.ChannelPathResponse, "0102030405060708"},
	} {
		payload := append([]byte{byte(s.channel)}, unhex(t, s.body)...)
		d := sealAt(t, unhex(t, s.key), s.keyID, s.seq, nil, payload)
		f.Seal = append(f.Seal, sealVector{Name: s.name, Key: s.key, KeyID: s.keyID, Sequence: s.seq,
			Channel: s.channel, Body: s.body, Datagram: hex.EncodeToString(d)})
	}
	resume, err := roomwire.AppendHandshake(nil, roomwire.KindResume, []byte("rt1.example"),
		&roomwire.Resume{ClientNonce: 42, LastFrame: 300})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []struct {
		name string
		seq  uint64
		hs   []byte
	}{{"spec_example_hello", 0, specHello(t)}, {"resume_retransmitted", 3, resume}} {
		sk := key32(t, rep(0x42, 32))
		cn := nonce16(t, rep(0x11, 16))
		hk, err := roomudp.HandshakeKeys(sk, cn)
		if err != nil {
			t.Fatal(err)
		}
		s, err := sealed.NewSealer(hk.I2R[:], roomudp.HandshakeKeyID)
		if err != nil {
			t.Fatal(err)
		}
		for range h.seq {
			_, _ = s.Seal(nil, nil)
		}
		d, err := roomudp.AppendHandshake(nil, s, kid, cn, h.hs)
		if err != nil {
			t.Fatal(err)
		}
		f.Handshake = append(f.Handshake, handshakeVector{Name: h.name, SessionKey: rep(0x42, 32), KeyID: kid.String(),
			ClientNonce: rep(0x11, 16), Sequence: h.seq, Handshake: hex.EncodeToString(h.hs), Datagram: hex.EncodeToString(d)})
	}
	welcome, err := (&roomwire.Welcome{Conv: 0x01020304, Seat: 1, SyncMode: 1, TickRate: 30, RoomState: 1,
		Members:     []roomwire.MemberInfo{{Seat: 0, Username: "alice", Online: true}, {Seat: 1, Username: "bob", Online: true}},
		ResumeToken: []byte("rt1.example"), ServerTimeMS: 1764600000000, SnapshotSeat: -1, MaxPlayers: 4}).AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	errMsg, err := (&roomwire.Error{Code: roomwire.CodeTicketInvalid, Message: "connect ticket invalid", Reason: "ticket_invalid"}).AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		name string
		msg  []byte
	}{{"welcome", welcome}, {"error", errMsg}} {
		sk := key32(t, rep(0x42, 32))
		cn, sn := nonce16(t, rep(0x11, 16)), nonce16(t, rep(0x22, 16))
		hk, err := roomudp.HandshakeKeys(sk, cn)
		if err != nil {
			t.Fatal(err)
		}
		d := sealAt(t, hk.R2I[:], roomudp.HandshakeKeyID, 0, nil, roomudp.AppendReply(nil, sn, r.msg))
		f.Reply = append(f.Reply, replyVector{Name: r.name, SessionKey: rep(0x42, 32), ClientNonce: rep(0x11, 16),
			ServerNonce: rep(0x22, 16), Sequence: 0, Message: hex.EncodeToString(r.msg), Datagram: hex.EncodeToString(d)})
	}
	{
		key := rep(0x42, 32)
		s, err := sealed.NewSealer(unhex(t, key), 0x2a)
		if err != nil {
			t.Fatal(err)
		}
		var ds [][]byte
		for i := range 3 {
			d, err := s.Seal(nil, []byte{roomudp.ChannelMessage, 0x50, byte(i)})
			if err != nil {
				t.Fatal(err)
			}
			ds = append(ds, d)
		}
		forged := bytes.Clone(ds[2])
		forged[len(forged)-1] ^= 1
		v := replayVector{Name: "replayed_and_forged", Key: key, KeyID: 0x2a}
		for _, st := range []struct {
			d []byte
			r string
		}{{ds[0], "ok"}, {ds[2], "ok"}, {ds[0], "replay"}, {ds[1], "ok"}, {ds[1], "replay"}, {forged, "replay"}} {
			v.Steps = append(v.Steps, struct {
				Datagram string `json:"datagram"`
				Result   string `json:"result"`
			}{hex.EncodeToString(st.d), st.r})
		}
		fresh, err := s.Seal(nil, []byte{roomudp.ChannelMessage, 0x50, 3})
		if err != nil {
			t.Fatal(err)
		}
		forged = bytes.Clone(fresh)
		forged[20] ^= 0x80
		for _, st := range []struct {
			d []byte
			r string
		}{{forged, "auth"}, {fresh, "ok"}, {fresh, "replay"}} {
			v.Steps = append(v.Steps, struct {
				Datagram string `json:"datagram"`
				Result   string `json:"result"`
			}{hex.EncodeToString(st.d), st.r})
		}
		f.Replay = append(f.Replay, v)
	}
	f.Inputs = inputsVectors(t)
	f.Frame = frameVectors(t, frame)
	f.Path = pathVectors()
	return f
}

func pathVectors() []pathVector {
	const data = "a1b2c3d4e5f60718"
	return []pathVector{
		{Name: "challenge", Channel: roomudp.ChannelPathChallenge, FromNode: true, Body: data, Valid: true},
		{Name: "response", Channel: roomudp.ChannelPathResponse, Body: data, Valid: true},
		{Name: "challenge_short", Channel: roomudp.ChannelPathChallenge, FromNode: true, Body: data[:14]},
		{Name: "challenge_long", Channel: roomudp.ChannelPathChallenge, FromNode: true, Body: data + "00"},
		{Name: "response_short", Channel: roomudp.ChannelPathResponse, Body: "00"},
		{Name: "response_long", Channel: roomudp.ChannelPathResponse, Body: data + data},
		{Name: "challenge_from_client", Channel: roomudp.ChannelPathChallenge, Body: data},
		{Name: "response_from_node", Channel: roomudp.ChannelPathResponse, FromNode: true, Body: data},
	}
}

// inputsBody builds an INPUTS body of len(data) inputs from first, the
// i-th acknowledging frame ack+i.
func inputsBody(t testing.TB, first, ack uint32, data [][]byte) []byte {
	t.Helper()
	b := roomudp.AppendInputsHeader(nil, first, len(data))
	for i, d := range data {
		m, err := (&roomwire.Input{AckFrame: ack + uint32(i), Data: d}).AppendTo(nil)
		if err != nil {
			t.Fatal(err)
		}
		b = roomudp.AppendInputEntry(b, m)
	}
	return b
}

func inputsVectors(t testing.TB) []inputsVector {
	valid := func(name string, first, ack uint32, data [][]byte) inputsVector {
		v := inputsVector{Name: name, Body: hex.EncodeToString(inputsBody(t, first, ack, data)), Valid: true, FirstSeq: first}
		for i, d := range data {
			m, _ := (&roomwire.Input{AckFrame: ack + uint32(i), Data: d}).AppendTo(nil)
			v.Inputs = append(v.Inputs, inputsEntry{Seq: first + uint32(i), AckFrame: ack + uint32(i),
				Data: hex.EncodeToString(d), Message: hex.EncodeToString(m)})
		}
		return v
	}
	full := make([][]byte, roomudp.MaxInputsPerDatagram)
	for i := range full {
		full[i] = bytes.Repeat([]byte{byte(i + 1)}, roomwire.MaxInputLen)
	}
	one := inputsBody(t, 5, 3, [][]byte{{1, 2}})
	bad := func(name string, b []byte) inputsVector {
		return inputsVector{Name: name, Body: hex.EncodeToString(b)}
	}
	ping, _ := (&roomwire.Ping{ClientMS: 1}).AppendTo(nil)
	return []inputsVector{
		valid("one", 1, 0, [][]byte{{0x07}}),
		valid("three_repeated", 40, 37, [][]byte{{0x01}, {0x02}, {}}),
		valid("eight_full", 1000, 990, full),
		valid("last_sequence", 1<<32-2, 5, [][]byte{{1}, {2}}),
		bad("first_seq_zero", inputsBody(t, 0, 0, [][]byte{{1}})),
		bad("count_zero", roomudp.AppendInputsHeader(nil, 5, 0)),
		bad("count_nine", inputsBody(t, 5, 0, make([][]byte, 9))),
		bad("sequence_overflow", inputsBody(t, 1<<32-1, 0, [][]byte{{1}, {2}})),
		bad("trailing_byte", append(append([]byte(nil), one...), 0)),
		bad("truncated", one[:len(one)-1]),
		bad("count_over_entries", append(append([]byte(nil), one[:4]...), append([]byte{2}, one[5:]...)...)),
		bad("empty_entry", append(roomudp.AppendInputsHeader(nil, 5, 1), 0)),
		bad("not_an_input", roomudp.AppendInputEntry(roomudp.AppendInputsHeader(nil, 5, 1), ping)),
		bad("short", []byte{0, 0, 0, 1}),
	}
}

func frameVectors(t testing.TB, frame []byte) []frameVector {
	ping, _ := (&roomwire.Ping{ClientMS: 1}).AppendTo(nil)
	return []frameVector{
		{Name: "acked", Body: hex.EncodeToString(roomudp.AppendFrame(nil, 12, frame)), Valid: true, InputSeq: 12, Frame: hex.EncodeToString(frame)},
		{Name: "no_input_yet", Body: hex.EncodeToString(roomudp.AppendFrame(nil, 0, frame)), Valid: true, Frame: hex.EncodeToString(frame)},
		{Name: "not_a_frame", Body: hex.EncodeToString(roomudp.AppendFrame(nil, 3, ping))},
		{Name: "no_message", Body: "00000003"},
	}
}

func readVectors(t testing.TB) vectorFile {
	t.Helper()
	b, err := os.ReadFile(vectorsPath)
	if err != nil {
		t.Fatal(err)
	}
	var f vectorFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestVectors checks that the vectors file is what the code produces
// (or rewrites it with -update), then replays every vector through the
// parsers and openers as a client or the node would.
func TestVectors(t *testing.T) {
	gen := generate(t)
	if *update {
		b, err := json.MarshalIndent(gen, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(vectorsPath, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := readVectors(t)
	g, _ := json.Marshal(gen)
	h, _ := json.Marshal(f)
	if !bytes.Equal(g, h) {
		t.Fatalf("%s differs from what the code produces; rerun with -update and review the diff", vectorsPath)
	}

	for _, v := range f.Derive {
		t.Run("derive/"+v.Name, func(t *testing.T) {
			kid, err := roomudp.ParseKeyID(v.KeyID)
			if err != nil {
				t.Fatal(err)
			}
			secret := roomudp.Secret(unhex(t, v.SigningKey))
			sk := roomudp.SessionKey(&secret, kid)
			if hex.EncodeToString(secret[:]) != v.UDPSecret || hex.EncodeToString(sk[:]) != v.SessionKey {
				t.Fatal("udp_secret or session_key differs")
			}
		})
	}
	for _, v := range f.Seal {
		t.Run("seal/"+v.Name, func(t *testing.T) {
			o, err := sealed.NewOpener(unhex(t, v.Key), v.KeyID)
			if err != nil {
				t.Fatal(err)
			}
			p, seq, err := o.Open(nil, unhex(t, v.Datagram))
			if err != nil || seq != v.Sequence {
				t.Fatalf("open: seq %d, %v", seq, err)
			}
			ch, body, err := roomudp.ParseSession(p)
			if err != nil || int(ch) != v.Channel || hex.EncodeToString(body) != v.Body {
				t.Fatalf("channel %d body %x err %v", ch, body, err)
			}
			switch ch {
			case roomudp.ChannelMessage:
				if _, err := roomwire.Decode(body); err != nil || !roomudp.Unreliable(body, true) {
					t.Fatalf("message %x: %v, or not allowed unreliable", body, err)
				}
			case roomudp.ChannelInputs:
				if _, err := roomudp.ParseInputs(body); err != nil {
					t.Fatal(err)
				}
			case roomudp.ChannelFrame:
				if _, _, err := roomudp.ParseFrame(body); err != nil {
					t.Fatal(err)
				}
			case roomudp.ChannelPathChallenge, roomudp.ChannelPathResponse:
				if _, err := roomudp.ParsePath(body); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	for _, v := range f.Handshake {
		t.Run("handshake/"+v.Name, func(t *testing.T) {
			d := unhex(t, v.Datagram)
			h, err := roomudp.ParseHandshake(d)
			if err != nil {
				t.Fatal(err)
			}
			if h.KeyID.String() != v.KeyID || hex.EncodeToString(h.ClientNonce[:]) != v.ClientNonce {
				t.Fatal("cleartext differs")
			}
			hk, err := roomudp.HandshakeKeys(key32(t, v.SessionKey), &h.ClientNonce)
			if err != nil {
				t.Fatal(err)
			}
			o, _ := sealed.NewOpener(hk.I2R[:], roomudp.HandshakeKeyID)
			p, seq, err := o.Open(nil, h.Sealed)
			if err != nil || seq != v.Sequence {
				t.Fatalf("open: seq %d, %v", seq, err)
			}
			hs, err := roomudp.HandshakeBytes(p)
			if err != nil || hex.EncodeToString(hs) != v.Handshake {
				t.Fatalf("handshake %x, %v", hs, err)
			}
			if _, err := roomwire.ParseHandshake(hs); err != nil {
				t.Fatal(err)
			}
		})
	}
	for _, v := range f.Reply {
		t.Run("reply/"+v.Name, func(t *testing.T) {
			hk, err := roomudp.HandshakeKeys(key32(t, v.SessionKey), nonce16(t, v.ClientNonce))
			if err != nil {
				t.Fatal(err)
			}
			o, _ := sealed.NewOpener(hk.R2I[:], roomudp.HandshakeKeyID)
			p, _, err := o.Open(nil, unhex(t, v.Datagram))
			if err != nil {
				t.Fatal(err)
			}
			sn, msg, err := roomudp.ParseReply(p)
			if err != nil || hex.EncodeToString(sn[:]) != v.ServerNonce || hex.EncodeToString(msg) != v.Message {
				t.Fatalf("nonce %x msg %x err %v", sn, msg, err)
			}
			if _, err := roomwire.Decode(msg); err != nil {
				t.Fatal(err)
			}
		})
	}
	for _, v := range f.Inputs {
		t.Run("inputs/"+v.Name, func(t *testing.T) {
			in, err := roomudp.ParseInputs(unhex(t, v.Body))
			if (err == nil) != v.Valid {
				t.Fatalf("valid %v, got %v", v.Valid, err)
			}
			if !v.Valid {
				return
			}
			if in.FirstSeq != v.FirstSeq || in.Count != len(v.Inputs) || in.Last() != v.FirstSeq+uint32(len(v.Inputs))-1 {
				t.Fatalf("first %d count %d", in.FirstSeq, in.Count)
			}
			for i := 0; ; i++ {
				seq, msg, ok := in.Next()
				if !ok {
					if i != len(v.Inputs) {
						t.Fatalf("%d entries, want %d", i, len(v.Inputs))
					}
					break
				}
				var m roomwire.Input
				if err := m.Unmarshal(msg); err != nil || seq != v.Inputs[i].Seq || hex.EncodeToString(msg) != v.Inputs[i].Message ||
					m.AckFrame != v.Inputs[i].AckFrame || hex.EncodeToString(m.Data) != v.Inputs[i].Data {
					t.Fatalf("entry %d: seq %d msg %x err %v", i, seq, msg, err)
				}
			}
		})
	}
	for _, v := range f.Frame {
		t.Run("frame/"+v.Name, func(t *testing.T) {
			seq, fr, err := roomudp.ParseFrame(unhex(t, v.Body))
			if (err == nil) != v.Valid {
				t.Fatalf("valid %v, got %v", v.Valid, err)
			}
			if v.Valid && (seq != v.InputSeq || hex.EncodeToString(fr) != v.Frame) {
				t.Fatalf("input_seq %d frame %x", seq, fr)
			}
		})
	}
	for _, v := range f.Path {
		t.Run("path/"+v.Name, func(t *testing.T) {
			payload := append([]byte{byte(v.Channel)}, unhex(t, v.Body)...)
			ch, body, err := roomudp.ParseSession(payload)
			if err != nil {
				t.Fatalf("channel %d: %v", v.Channel, err)
			}
			derr := roomudp.CheckDirection(ch, v.FromNode)
			d, perr := roomudp.ParsePath(body)
			if got := derr == nil && perr == nil; got != v.Valid {
				t.Fatalf("valid %v, got direction %v, body %v", v.Valid, derr, perr)
			}
			if v.Valid && hex.EncodeToString(d[:]) != v.Body {
				t.Fatalf("data %x, body %s", d, v.Body)
			}
			if v.Valid && !bytes.Equal(roomudp.AppendPath([]byte{ch}, &d), payload) {
				t.Fatal("AppendPath does not re-encode the body")
			}
		})
	}
	for _, v := range f.Replay {
		t.Run("replay/"+v.Name, func(t *testing.T) {
			o, err := sealed.NewOpener(unhex(t, v.Key), v.KeyID)
			if err != nil {
				t.Fatal(err)
			}
			for i, st := range v.Steps {
				_, _, err := o.Open(nil, unhex(t, st.Datagram))
				got := "ok"
				switch {
				case errors.Is(err, sealed.ErrReplay):
					got = "replay"
				case errors.Is(err, sealed.ErrAuth):
					got = "auth"
				case err != nil:
					got = err.Error()
				}
				if got != st.Result {
					t.Fatalf("step %d: %s, want %s", i, got, st.Result)
				}
			}
		})
	}
}

// TestSpecExample checks the bytes rooms-udp.md §6 shows.
func TestSpecExample(t *testing.T) {
	hs := specHello(t)
	want := "01000441513" + "36b010123456789abcdef09676f646f742f302e31"
	if hex.EncodeToString(hs) != want {
		t.Fatalf("handshake %x", hs)
	}
	if n := roomudp.HandshakeSize - roomudp.HandshakeHeaderSize - sealed.Overhead - 2 - len(hs); n != 1110 {
		t.Fatalf("padding %d, the page says 1110", n)
	}
	kid, err := roomudp.ParseKeyID("AAECAwQFBgcICQoLDA0ODw")
	if err != nil || kid != (roomudp.KeyID{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}) {
		t.Fatalf("key id %v, %v", kid, err)
	}
}

// TestSecretIsSignerDerive: control and nodes derive the UDP secret from
// the tokens.Signer they hold; it must equal Secret of the raw key.
func TestSecretIsSignerDerive(t *testing.T) {
	key := bytes.Repeat([]byte{0x5a}, 32)
	s, err := tokens.NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	if s.Derive(roomudp.SecretLabel) != roomudp.Secret(key) {
		t.Fatal("tokens.Signer.Derive(SecretLabel) differs from Secret")
	}
}
