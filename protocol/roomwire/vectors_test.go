package roomwire_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// vectorDir holds the shared im.game.v1 test vectors (seed section "测试数据").
const vectorDir = "../../testdata/roomwire"

// The files' JSON shapes. Unknown keys at the top level ("about") are
// documentation and ignored.

type messagesFile struct {
	ProtocolVersion int              `json:"protocol_version"`
	Messages        []messageVectors `json:"messages"`
	UnknownTypes    []unknownVector  `json:"unknown_types"`
}

type messageVectors struct {
	Type    int             `json:"type"`
	Name    string          `json:"name"`
	Valid   []validVector   `json:"valid"`
	Invalid []invalidVector `json:"invalid"`
}

type validVector struct {
	Name   string          `json:"name"`
	Fields json.RawMessage `json:"fields"`
	Hex    hexBytes        `json:"hex"`
}

type invalidVector struct {
	Name   string   `json:"name"`
	Hex    hexBytes `json:"hex"`
	Field  string   `json:"field"`
	Reason string   `json:"reason"`
}

type unknownVector struct {
	Name string   `json:"name"`
	Hex  hexBytes `json:"hex"`
}

type handshakeFile struct {
	ProtocolVersion int               `json:"protocol_version"`
	Valid           []handshakeVector `json:"valid"`
	Invalid         []invalidVector   `json:"invalid"`
}

type handshakeVector struct {
	Name       string   `json:"name"`
	Kind       uint8    `json:"kind"`
	TokenHex   hexBytes `json:"token_hex"`
	MessageHex hexBytes `json:"message_hex"`
	Hex        hexBytes `json:"hex"`
}

// dec64 is a 64-bit integer, written as a decimal string in the vectors.
type dec64 uint64

func (d dec64) MarshalJSON() ([]byte, error) {
	return []byte(`"` + strconv.FormatUint(uint64(d), 10) + `"`), nil
}

func (d *dec64) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("64-bit integer must be a decimal string, got %s", b)
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return err
	}
	*d = dec64(v)
	return nil
}

// hexBytes is a byte string, written as lowercase hex in the vectors.
type hexBytes []byte

func (h hexBytes) MarshalJSON() ([]byte, error) { return json.Marshal(hex.EncodeToString(h)) }

func (h *hexBytes) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if s != strings.ToLower(s) {
		return fmt.Errorf("hex must be lowercase: %.40q", s)
	}
	p, err := hex.DecodeString(s)
	if err != nil {
		return err
	}
	*h = p
	return nil
}

// The "fields" object of each message type, keys as the protocol spells them.

type helloFields struct {
	ClientNonce dec64  `json:"client_nonce"`
	SDKVersion  string `json:"sdk_version"`
}

type memberInfoFields struct {
	Seat     uint8  `json:"seat"`
	Username string `json:"username"`
	Online   bool   `json:"online"`
}

type welcomeFields struct {
	Conv         uint32             `json:"conv"`
	Seat         uint8              `json:"seat"`
	SyncMode     uint8              `json:"sync_mode"`
	TickRate     uint8              `json:"tick_rate"`
	RoomState    uint8              `json:"room_state"`
	StartFrame   uint32             `json:"start_frame"`
	Frame        uint32             `json:"frame"`
	Members      []memberInfoFields `json:"members"`
	ResumeToken  hexBytes           `json:"resume_token"`
	ServerTimeMS dec64              `json:"server_time_ms"`
	SnapshotSeat int8               `json:"snapshot_seat"`
	MaxPlayers   uint8              `json:"max_players"`
}

type resumeFields struct {
	ClientNonce dec64  `json:"client_nonce"`
	LastFrame   uint32 `json:"last_frame"`
}

type inputFields struct {
	AckFrame uint32   `json:"ack_frame"`
	Data     hexBytes `json:"data"`
}

type seatInputFields struct {
	Seat uint8    `json:"seat"`
	Data hexBytes `json:"data"`
}

type tickFrameFields struct {
	Frame  uint32            `json:"frame"`
	Inputs []seatInputFields `json:"inputs"`
}

type framesFields struct {
	Frames []tickFrameFields `json:"frames"`
}

type frameReqFields struct {
	From uint32 `json:"from"`
	To   uint32 `json:"to"`
}

type customFields struct {
	To       uint16   `json:"to"`
	From     uint8    `json:"from"`
	Reliable bool     `json:"reliable"`
	Data     hexBytes `json:"data"`
}

type noFields struct{}

type roomStateFields struct {
	State      uint8    `json:"state"`
	StartFrame uint32   `json:"start_frame"`
	Reason     string   `json:"reason"`
	Result     hexBytes `json:"result"`
}

type memberFields struct {
	Seat     uint8  `json:"seat"`
	Username string `json:"username"`
	Kind     uint8  `json:"kind"`
	Reason   string `json:"reason"`
}

type snapshotFields struct {
	Frame uint32   `json:"frame"`
	Data  hexBytes `json:"data"`
}

type pingFields struct {
	ClientMS dec64  `json:"client_ms"`
	RTTMS    uint32 `json:"rtt_ms"`
}

type pongFields struct {
	ClientMS dec64 `json:"client_ms"`
	ServerMS dec64 `json:"server_ms"`
}

type errorFields struct {
	Code    uint8    `json:"code"`
	Message string   `json:"message"`
	Reason  string   `json:"reason"`
	Result  hexBytes `json:"result"`
}

func toFramesFields(frames []roomwire.TickFrame) framesFields {
	out := framesFields{Frames: make([]tickFrameFields, len(frames))}
	for i, f := range frames {
		tf := tickFrameFields{Frame: f.Number, Inputs: make([]seatInputFields, len(f.Inputs))}
		for j, in := range f.Inputs {
			tf.Inputs[j] = seatInputFields{Seat: in.Seat, Data: in.Data}
		}
		out.Frames[i] = tf
	}
	return out
}

func fromFramesFields(f framesFields) []roomwire.TickFrame {
	out := make([]roomwire.TickFrame, len(f.Frames))
	for i, tf := range f.Frames {
		out[i].Number = tf.Frame
		out[i].Inputs = make([]roomwire.SeatInput, len(tf.Inputs))
		for j, in := range tf.Inputs {
			out[i].Inputs[j] = roomwire.SeatInput{Seat: in.Seat, Data: in.Data}
		}
	}
	return out
}

// toFields returns the vector "fields" object of m.
func toFields(m roomwire.Message) any {
	switch m := m.(type) {
	case *roomwire.Hello:
		return helloFields{dec64(m.ClientNonce), m.SDKVersion}
	case *roomwire.Welcome:
		f := welcomeFields{
			Conv: m.Conv, Seat: m.Seat, SyncMode: m.SyncMode, TickRate: m.TickRate,
			RoomState: m.RoomState, StartFrame: m.StartFrame, Frame: m.Frame,
			Members:     make([]memberInfoFields, len(m.Members)),
			ResumeToken: m.ResumeToken, ServerTimeMS: dec64(m.ServerTimeMS),
			SnapshotSeat: m.SnapshotSeat, MaxPlayers: m.MaxPlayers,
		}
		for i, mem := range m.Members {
			f.Members[i] = memberInfoFields{mem.Seat, mem.Username, mem.Online}
		}
		return f
	case *roomwire.Resume:
		return resumeFields{dec64(m.ClientNonce), m.LastFrame}
	case *roomwire.Input:
		return inputFields{m.AckFrame, m.Data}
	case *roomwire.Frame:
		return toFramesFields(m.Frames)
	case *roomwire.FrameReq:
		return frameReqFields{m.From, m.To}
	case *roomwire.FrameBatch:
		return toFramesFields(m.Frames)
	case *roomwire.Custom:
		return customFields{m.To, m.From, m.Reliable, m.Data}
	case *roomwire.Ready, *roomwire.Start, *roomwire.Leave:
		return noFields{}
	case *roomwire.RoomState:
		return roomStateFields{m.State, m.StartFrame, m.Reason, m.Result}
	case *roomwire.Member:
		return memberFields{m.Seat, m.Username, m.Kind, m.Reason}
	case *roomwire.SnapshotPut:
		return snapshotFields{m.Frame, m.Data}
	case *roomwire.Snapshot:
		return snapshotFields{m.Frame, m.Data}
	case *roomwire.Ping:
		return pingFields{dec64(m.ClientMS), m.RTTMS}
	case *roomwire.Pong:
		return pongFields{dec64(m.ClientMS), dec64(m.ServerMS)}
	case *roomwire.Error:
		return errorFields{m.Code, m.Message, m.Reason, m.Result}
	}
	panic(fmt.Sprintf("toFields: unhandled %T", m))
}

// strict decodes raw into a T, rejecting keys T does not have.
func strict[T any](raw json.RawMessage) (T, error) {
	var v T
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(&v)
	return v, err
}

// fromFields builds the message of type t that a vector's "fields" describe.
func fromFields(t roomwire.Type, raw json.RawMessage) (roomwire.Message, error) {
	switch t {
	case roomwire.TypeHello:
		f, err := strict[helloFields](raw)
		return &roomwire.Hello{ClientNonce: uint64(f.ClientNonce), SDKVersion: f.SDKVersion}, err
	case roomwire.TypeWelcome:
		f, err := strict[welcomeFields](raw)
		m := &roomwire.Welcome{
			Conv: f.Conv, Seat: f.Seat, SyncMode: f.SyncMode, TickRate: f.TickRate,
			RoomState: f.RoomState, StartFrame: f.StartFrame, Frame: f.Frame,
			ResumeToken: f.ResumeToken, ServerTimeMS: uint64(f.ServerTimeMS),
			SnapshotSeat: f.SnapshotSeat, MaxPlayers: f.MaxPlayers,
		}
		for _, mem := range f.Members {
			m.Members = append(m.Members, roomwire.MemberInfo{Seat: mem.Seat, Username: mem.Username, Online: mem.Online})
		}
		return m, err
	case roomwire.TypeResume:
		f, err := strict[resumeFields](raw)
		return &roomwire.Resume{ClientNonce: uint64(f.ClientNonce), LastFrame: f.LastFrame}, err
	case roomwire.TypeInput:
		f, err := strict[inputFields](raw)
		return &roomwire.Input{AckFrame: f.AckFrame, Data: f.Data}, err
	case roomwire.TypeFrame:
		f, err := strict[framesFields](raw)
		return &roomwire.Frame{Frames: fromFramesFields(f)}, err
	case roomwire.TypeFrameReq:
		f, err := strict[frameReqFields](raw)
		return &roomwire.FrameReq{From: f.From, To: f.To}, err
	case roomwire.TypeFrameBatch:
		f, err := strict[framesFields](raw)
		return &roomwire.FrameBatch{Frames: fromFramesFields(f)}, err
	case roomwire.TypeCustom:
		f, err := strict[customFields](raw)
		return &roomwire.Custom{To: f.To, From: f.From, Reliable: f.Reliable, Data: f.Data}, err
	case roomwire.TypeReady, roomwire.TypeStart, roomwire.TypeLeave:
		_, err := strict[noFields](raw)
		return roomwire.New(t), err
	case roomwire.TypeRoomState:
		f, err := strict[roomStateFields](raw)
		return &roomwire.RoomState{State: f.State, StartFrame: f.StartFrame, Reason: f.Reason, Result: f.Result}, err
	case roomwire.TypeMember:
		f, err := strict[memberFields](raw)
		return &roomwire.Member{Seat: f.Seat, Username: f.Username, Kind: f.Kind, Reason: f.Reason}, err
	case roomwire.TypeSnapshotPut:
		f, err := strict[snapshotFields](raw)
		return &roomwire.SnapshotPut{Frame: f.Frame, Data: f.Data}, err
	case roomwire.TypeSnapshot:
		f, err := strict[snapshotFields](raw)
		return &roomwire.Snapshot{Frame: f.Frame, Data: f.Data}, err
	case roomwire.TypePing:
		f, err := strict[pingFields](raw)
		return &roomwire.Ping{ClientMS: uint64(f.ClientMS), RTTMS: f.RTTMS}, err
	case roomwire.TypePong:
		f, err := strict[pongFields](raw)
		return &roomwire.Pong{ClientMS: uint64(f.ClientMS), ServerMS: uint64(f.ServerMS)}, err
	case roomwire.TypeError:
		f, err := strict[errorFields](raw)
		return &roomwire.Error{Code: f.Code, Message: f.Message, Reason: f.Reason, Result: f.Result}, err
	}
	return nil, fmt.Errorf("fromFields: unknown type %v", t)
}

// canonical parses JSON into a comparable value; numbers stay as their text.
func canonical(t *testing.T, raw []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("parse %.80s: %v", raw, err)
	}
	return v
}

func readJSON(t testing.TB, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(vectorDir, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func loadMessages(t testing.TB) messagesFile {
	t.Helper()
	var f messagesFile
	readJSON(t, "messages.json", &f)
	return f
}

func loadHandshakes(t testing.TB) handshakeFile {
	t.Helper()
	var f handshakeFile
	readJSON(t, "ws_handshake.json", &f)
	return f
}

// wantFieldError checks that err is a *FieldError naming field and problem
// that matches ErrInvalid and not ErrUnknownType.
func wantFieldError(t *testing.T, err error, field, problem string) *roomwire.FieldError {
	t.Helper()
	var fe *roomwire.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("got error %v (%T), want *FieldError %s %s", err, err, field, problem)
	}
	if fe.Field != field || fe.Problem != problem {
		t.Errorf("got field %q problem %q (%v), want field %q problem %q", fe.Field, fe.Problem, err, field, problem)
	}
	if !errors.Is(err, roomwire.ErrInvalid) {
		t.Errorf("errors.Is(%v, ErrInvalid) = false, want true", err)
	}
	if errors.Is(err, roomwire.ErrUnknownType) {
		t.Errorf("errors.Is(%v, ErrUnknownType) = true, want false", err)
	}
	return fe
}

// knownProblems are the reasons an invalid vector may give.
var knownProblems = []string{
	roomwire.ProblemTruncated, roomwire.ProblemOverCap, roomwire.ProblemBadBool,
	roomwire.ProblemTrailing, roomwire.ProblemBadUTF8, roomwire.ProblemOverlong,
	roomwire.ProblemWrongType, roomwire.ProblemEmpty, roomwire.ProblemBadKind,
	roomwire.ProblemKindMismatch, roomwire.ProblemTokenTooLong,
}

func isKnownProblem(p string) bool {
	for _, k := range knownProblems {
		if p == k {
			return true
		}
	}
	return false
}

func TestMessageVectorsCoverEveryType(t *testing.T) {
	f := loadMessages(t)
	if f.ProtocolVersion != 1 {
		t.Errorf("protocol_version = %d, want 1", f.ProtocolVersion)
	}
	seen := map[roomwire.Type]bool{}
	for _, mv := range f.Messages {
		typ := roomwire.Type(mv.Type)
		if !typ.Known() {
			t.Errorf("type %d (%s) is not a protocol type", mv.Type, mv.Name)
			continue
		}
		if seen[typ] {
			t.Errorf("type %s listed twice", typ)
		}
		seen[typ] = true
		if mv.Name != typ.String() {
			t.Errorf("type %d: name %q, want %q", mv.Type, mv.Name, typ.String())
		}
		if len(mv.Valid) == 0 {
			t.Errorf("%s: no valid vectors", typ)
		}
		if len(mv.Invalid) < 3 {
			t.Errorf("%s: %d invalid vectors, want at least 3", typ, len(mv.Invalid))
		}
		names := map[string]bool{}
		for _, n := range append(validNames(mv.Valid), invalidNames(mv.Invalid)...) {
			if names[n] {
				t.Errorf("%s: vector name %q used twice", typ, n)
			}
			names[n] = true
		}
	}
	for i := range 256 {
		if typ := roomwire.Type(i); typ.Known() && !seen[typ] {
			t.Errorf("no vectors for %s", typ)
		}
	}
	if len(seen) != 18 {
		t.Errorf("vectors for %d types, want 18", len(seen))
	}
}

func validNames(vs []validVector) []string {
	var out []string
	for _, v := range vs {
		out = append(out, "valid/"+v.Name)
	}
	return out
}

func invalidNames(vs []invalidVector) []string {
	var out []string
	for _, v := range vs {
		out = append(out, "invalid/"+v.Name)
	}
	return out
}

func TestValidMessageVectors(t *testing.T) {
	for _, mv := range loadMessages(t).Messages {
		typ := roomwire.Type(mv.Type)
		for _, v := range mv.Valid {
			t.Run(mv.Name+"/"+v.Name, func(t *testing.T) {
				// Decoding hex gives fields.
				m, err := roomwire.Decode(v.Hex)
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				if m.Type() != typ {
					t.Fatalf("Decode: got type %s, want %s", m.Type(), typ)
				}
				got, err := json.Marshal(toFields(m))
				if err != nil {
					t.Fatal(err)
				}
				if g, w := canonical(t, got), canonical(t, v.Fields); !reflect.DeepEqual(g, w) {
					t.Errorf("decoded fields\n got %.300s\nwant %.300s", got, v.Fields)
				}
				// Whatever decodes re-encodes to the same bytes.
				re, err := roomwire.Append(nil, m)
				if err != nil {
					t.Fatalf("re-encode: %v", err)
				}
				if !bytes.Equal(re, v.Hex) {
					t.Errorf("re-encoded\n got %.300x\nwant %.300x", re, []byte(v.Hex))
				}
				// Encoding fields gives hex, appended after existing bytes.
				in, err := fromFields(typ, v.Fields)
				if err != nil {
					t.Fatalf("fields: %v", err)
				}
				prefix := []byte{0xAA, 0xBB}
				enc, err := roomwire.Append(prefix, in)
				if err != nil {
					t.Fatalf("Append: %v", err)
				}
				if !bytes.Equal(enc[:2], prefix) || !bytes.Equal(enc[2:], v.Hex) {
					t.Errorf("encoded\n got %.300x\nwant aabb%.300x", enc, []byte(v.Hex))
				}
				// The typed decoder agrees with Decode.
				typed := roomwire.New(typ)
				if err := typed.Unmarshal(v.Hex); err != nil {
					t.Fatalf("%T.Unmarshal: %v", typed, err)
				}
				if !reflect.DeepEqual(typed, m) {
					t.Errorf("%T.Unmarshal = %+v, Decode = %+v", typed, typed, m)
				}
			})
		}
	}
}

func TestInvalidMessageVectors(t *testing.T) {
	for _, mv := range loadMessages(t).Messages {
		typ := roomwire.Type(mv.Type)
		for _, v := range mv.Invalid {
			t.Run(mv.Name+"/"+v.Name, func(t *testing.T) {
				if !isKnownProblem(v.Reason) {
					t.Fatalf("reason %q is not a roomwire Problem constant", v.Reason)
				}
				// The decoder of the type the vector is listed under.
				err := roomwire.New(typ).Unmarshal(v.Hex)
				fe := wantFieldError(t, err, v.Field, v.Reason)
				if fe.Type != typ {
					t.Errorf("FieldError.Type = %s, want %s", fe.Type, typ)
				}
				// The generic decoder, which reads the type from the first
				// byte; wrong_type vectors hold another valid type by design.
				if v.Reason == roomwire.ProblemWrongType {
					return
				}
				m, err := roomwire.Decode(v.Hex)
				if m != nil {
					t.Errorf("Decode returned %+v with error %v, want nil message", m, err)
				}
				wantFieldError(t, err, v.Field, v.Reason)
			})
		}
	}
}

func TestUnknownTypeVectors(t *testing.T) {
	f := loadMessages(t)
	if len(f.UnknownTypes) == 0 {
		t.Fatal("no unknown_types vectors")
	}
	for _, v := range f.UnknownTypes {
		t.Run(v.Name, func(t *testing.T) {
			if len(v.Hex) == 0 {
				t.Fatal("empty unknown-type vector")
			}
			m, err := roomwire.Decode(v.Hex)
			if m != nil || !errors.Is(err, roomwire.ErrUnknownType) {
				t.Fatalf("Decode = %v, %v; want nil, ErrUnknownType", m, err)
			}
			if errors.Is(err, roomwire.ErrInvalid) {
				t.Errorf("unknown type matches ErrInvalid; it must be distinct")
			}
			var fe *roomwire.FieldError
			if errors.As(err, &fe) {
				t.Errorf("unknown type gave a *FieldError %v", fe)
			}
			typ, err := roomwire.Peek(v.Hex)
			if !errors.Is(err, roomwire.ErrUnknownType) || typ != roomwire.Type(v.Hex[0]) {
				t.Errorf("Peek = %v, %v; want %v, ErrUnknownType", typ, err, roomwire.Type(v.Hex[0]))
			}
			if roomwire.New(typ) != nil {
				t.Errorf("New(%v) != nil", typ)
			}
		})
	}
}

func TestHandshakeVectors(t *testing.T) {
	f := loadHandshakes(t)
	if f.ProtocolVersion != 1 {
		t.Errorf("protocol_version = %d, want 1", f.ProtocolVersion)
	}
	kinds := map[roomwire.HandshakeKind]bool{}
	for _, v := range f.Valid {
		t.Run("valid/"+v.Name, func(t *testing.T) {
			kind := roomwire.HandshakeKind(v.Kind)
			kinds[kind] = true
			// kind | u16 length | token | message is hex.
			cat := []byte{v.Kind, byte(len(v.TokenHex) >> 8), byte(len(v.TokenHex))}
			cat = append(append(cat, v.TokenHex...), v.MessageHex...)
			if !bytes.Equal(cat, v.Hex) {
				t.Fatalf("kind|length|token|message\n got %.200x\nwant %.200x", cat, []byte(v.Hex))
			}
			h, err := roomwire.ParseHandshake(v.Hex)
			if err != nil {
				t.Fatalf("ParseHandshake: %v", err)
			}
			if h.Kind != kind || !bytes.Equal(h.Token, v.TokenHex) {
				t.Errorf("parsed kind %d token %x, want %d %x", h.Kind, h.Token, kind, []byte(v.TokenHex))
			}
			var msg roomwire.Message
			switch kind {
			case roomwire.KindHello:
				if h.Hello == nil || h.Resume != nil {
					t.Fatalf("HELLO handshake parsed as %+v", h)
				}
				msg = h.Hello
			case roomwire.KindResume:
				if h.Resume == nil || h.Hello != nil {
					t.Fatalf("RESUME handshake parsed as %+v", h)
				}
				msg = h.Resume
			default:
				t.Fatalf("valid vector with kind %d", kind)
			}
			m, err := roomwire.Decode(v.MessageHex)
			if err != nil {
				t.Fatalf("Decode(message_hex): %v", err)
			}
			if !reflect.DeepEqual(m, msg) {
				t.Errorf("handshake message %+v, message_hex decodes to %+v", msg, m)
			}
			enc, err := roomwire.AppendHandshake([]byte{0xAA}, kind, v.TokenHex, msg)
			if err != nil {
				t.Fatalf("AppendHandshake: %v", err)
			}
			if enc[0] != 0xAA || !bytes.Equal(enc[1:], v.Hex) {
				t.Errorf("AppendHandshake\n got %.200x\nwant aa%.200x", enc, []byte(v.Hex))
			}
		})
	}
	if !kinds[roomwire.KindHello] || !kinds[roomwire.KindResume] {
		t.Errorf("valid handshakes cover kinds %v, want HELLO and RESUME", kinds)
	}
	for _, v := range f.Invalid {
		t.Run("invalid/"+v.Name, func(t *testing.T) {
			if !isKnownProblem(v.Reason) {
				t.Fatalf("reason %q is not a roomwire Problem constant", v.Reason)
			}
			h, err := roomwire.ParseHandshake(v.Hex)
			if h.Hello != nil || h.Resume != nil || h.Token != nil {
				t.Errorf("ParseHandshake returned %+v with its error", h)
			}
			wantFieldError(t, err, v.Field, v.Reason)
		})
	}
}

func TestSpecWorkedExample(t *testing.T) {
	// The seed's example, byte for byte: connect_ticket "AQ3k",
	// client_nonce 0x0123456789ABCDEF, sdk_version "godot/0.1".
	want := []byte{
		0x01,       // kind = HELLO
		0x00, 0x04, // token length
		0x41, 0x51, 0x33, 0x6B, // "AQ3k"
		0x01,                                           // HELLO
		0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF, // client_nonce
		0x09,                                                 // sdk_version length
		0x67, 0x6F, 0x64, 0x6F, 0x74, 0x2F, 0x30, 0x2E, 0x31, // "godot/0.1"
	}
	got, err := roomwire.AppendHandshake(nil, roomwire.KindHello, []byte("AQ3k"),
		&roomwire.Hello{ClientNonce: 0x0123456789ABCDEF, SDKVersion: "godot/0.1"})
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("AppendHandshake = %x, %v; want %x", got, err, want)
	}
	var found bool
	for _, v := range loadHandshakes(t).Valid {
		if bytes.Equal(v.Hex, want) {
			found = true
		}
	}
	if !found {
		t.Error("ws_handshake.json lacks the seed's worked example")
	}
}
