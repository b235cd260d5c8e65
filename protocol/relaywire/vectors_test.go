package relaywire_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/switchboardgg/switchboard/protocol/relaywire"
)

// vectorDir holds the shared Unity Relay test vectors.
const vectorDir = "../../testdata/relaywire"

// The files' JSON shapes. Unknown keys at the top level ("about",
// "hand_written") are documentation and ignored.

type messagesFile struct {
	ProtocolVersion int              `json:"protocol_version"`
	Messages        []messageVectors `json:"messages"`
	HeaderInvalid   []invalidVector  `json:"header_invalid"`
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

type hmacFile struct {
	Vectors []hmacVector `json:"vectors"`
}

type hmacVector struct {
	Name                 string   `json:"name"`
	Key                  hexBytes `json:"key"`
	Nonce                uint16   `json:"nonce"`
	ConnectionDataLength uint8    `json:"connection_data_length"`
	Blob                 hexBytes `json:"blob"`
	HMAC                 hexBytes `json:"hmac"`
	Bind                 hexBytes `json:"bind"`
}

type allocationIDsFile struct {
	Valid []struct {
		Text      string   `json:"text"`
		Canonical string   `json:"canonical"`
		Bytes     hexBytes `json:"bytes"`
		Base64    string   `json:"base64"`
	} `json:"valid"`
	Invalid []struct {
		Name string `json:"name"`
		Text string `json:"text"`
	} `json:"invalid"`
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

// The "fields" object of each message type, keys as the layouts name the
// fields. Allocation ids are UUID strings (relaywire.AllocationID is a
// text marshaler); byte strings are hex.

type bindFields struct {
	AcceptMode           uint8    `json:"accept_mode"`
	Nonce                uint16   `json:"nonce"`
	ConnectionDataLength uint8    `json:"connection_data_length"`
	ConnectionData       hexBytes `json:"connection_data"`
	HMAC                 hexBytes `json:"hmac"`
}

type noFields struct{}

type pingFields struct {
	From     relaywire.AllocationID `json:"from_allocation_id"`
	Sequence uint16                 `json:"sequence_number"`
}

type connectRequestFields struct {
	AllocationID           relaywire.AllocationID `json:"allocation_id"`
	ToConnectionDataLength uint8                  `json:"to_connection_data_length"`
	ToConnectionData       hexBytes               `json:"to_connection_data"`
}

type pairFields struct {
	From relaywire.AllocationID `json:"from_allocation_id"`
	To   relaywire.AllocationID `json:"to_allocation_id"`
}

type relayFields struct {
	From relaywire.AllocationID `json:"from_allocation_id"`
	To   relaywire.AllocationID `json:"to_allocation_id"`
	Data hexBytes               `json:"data"`
}

type closeFields struct {
	AllocationID *relaywire.AllocationID `json:"allocation_id"` // null: the bare form
}

type peersSubscribeFields struct {
	AllocationID relaywire.AllocationID `json:"allocation_id"`
}

type peerEventFields struct {
	Event uint8                  `json:"event"`
	Peer  relaywire.AllocationID `json:"peer_allocation_id"`
}

type errorFields struct {
	AllocationID relaywire.AllocationID `json:"allocation_id"`
	ErrorCode    uint8                  `json:"error_code"`
}

// toFields returns the vector "fields" object of m.
func toFields(m relaywire.Message) any {
	switch m := m.(type) {
	case *relaywire.Bind:
		return bindFields{m.AcceptMode, m.Nonce, m.ConnectionDataLength, m.ConnectionData[:], m.HMAC[:]}
	case *relaywire.BindReceived:
		return noFields{}
	case *relaywire.Ping:
		return pingFields{m.From, m.Sequence}
	case *relaywire.ConnectRequest:
		return connectRequestFields{m.AllocationID, m.ToConnectionDataLength, m.ToConnectionData[:]}
	case *relaywire.Accepted:
		return pairFields{m.From, m.To}
	case *relaywire.Rejected:
		return pairFields{m.From, m.To}
	case *relaywire.Disconnect:
		return pairFields{m.From, m.To}
	case *relaywire.Relay:
		return relayFields{m.From, m.To, m.Data}
	case *relaywire.Close:
		if !m.HasAllocationID {
			return closeFields{}
		}
		return closeFields{&m.AllocationID}
	case *relaywire.Error:
		return errorFields{m.AllocationID, uint8(m.Code)}
	case *relaywire.PeersSubscribe:
		return peersSubscribeFields{m.AllocationID}
	case *relaywire.PeerEvent:
		return peerEventFields{uint8(m.Event), m.Peer}
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

// toArray copies b into an array of exactly len(dst) bytes.
func toArray(dst []byte, b []byte, name string) error {
	if len(b) != len(dst) {
		return fmt.Errorf("%s: %d bytes, want %d", name, len(b), len(dst))
	}
	copy(dst, b)
	return nil
}

// fromFields builds the message of type t that a vector's "fields" describe.
func fromFields(t relaywire.Type, raw json.RawMessage) (relaywire.Message, error) {
	switch t {
	case relaywire.TypeBind:
		f, err := strict[bindFields](raw)
		m := &relaywire.Bind{AcceptMode: f.AcceptMode, Nonce: f.Nonce, ConnectionDataLength: f.ConnectionDataLength}
		return m, errors.Join(err, toArray(m.ConnectionData[:], f.ConnectionData, "connection_data"), toArray(m.HMAC[:], f.HMAC, "hmac"))
	case relaywire.TypeBindReceived:
		_, err := strict[noFields](raw)
		return &relaywire.BindReceived{}, err
	case relaywire.TypePing:
		f, err := strict[pingFields](raw)
		return &relaywire.Ping{From: f.From, Sequence: f.Sequence}, err
	case relaywire.TypeConnectRequest:
		f, err := strict[connectRequestFields](raw)
		m := &relaywire.ConnectRequest{AllocationID: f.AllocationID, ToConnectionDataLength: f.ToConnectionDataLength}
		return m, errors.Join(err, toArray(m.ToConnectionData[:], f.ToConnectionData, "to_connection_data"))
	case relaywire.TypeAccepted:
		f, err := strict[pairFields](raw)
		return &relaywire.Accepted{From: f.From, To: f.To}, err
	case relaywire.TypeRejected:
		f, err := strict[pairFields](raw)
		return &relaywire.Rejected{From: f.From, To: f.To}, err
	case relaywire.TypeDisconnect:
		f, err := strict[pairFields](raw)
		return &relaywire.Disconnect{From: f.From, To: f.To}, err
	case relaywire.TypeRelay:
		f, err := strict[relayFields](raw)
		return &relaywire.Relay{From: f.From, To: f.To, Data: f.Data}, err
	case relaywire.TypeClose:
		f, err := strict[closeFields](raw)
		if f.AllocationID == nil {
			return &relaywire.Close{}, err
		}
		return &relaywire.Close{HasAllocationID: true, AllocationID: *f.AllocationID}, err
	case relaywire.TypeError:
		f, err := strict[errorFields](raw)
		return &relaywire.Error{AllocationID: f.AllocationID, Code: relaywire.ErrorCode(f.ErrorCode)}, err
	case relaywire.TypePeersSubscribe:
		f, err := strict[peersSubscribeFields](raw)
		return &relaywire.PeersSubscribe{AllocationID: f.AllocationID}, err
	case relaywire.TypePeerEvent:
		f, err := strict[peerEventFields](raw)
		return &relaywire.PeerEvent{Event: relaywire.PeerEventKind(f.Event), Peer: f.Peer}, err
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

func loadHMAC(t testing.TB) hmacFile {
	t.Helper()
	var f hmacFile
	readJSON(t, "bind_hmac.json", &f)
	return f
}

// wantFieldError checks that err is a *FieldError of type typ naming field
// and problem, that matches ErrInvalid and not ErrUnknownType.
func wantFieldError(t *testing.T, err error, typ relaywire.Type, field, problem string) {
	t.Helper()
	var fe *relaywire.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("got error %v (%T), want *FieldError %s %s", err, err, field, problem)
	}
	if fe.Type != typ || fe.Field != field || fe.Problem != problem {
		t.Errorf("got %s field %q problem %q (%v), want %s field %q problem %q",
			fe.Type, fe.Field, fe.Problem, err, typ, field, problem)
	}
	if !errors.Is(err, relaywire.ErrInvalid) {
		t.Errorf("errors.Is(%v, ErrInvalid) = false, want true", err)
	}
	if errors.Is(err, relaywire.ErrUnknownType) {
		t.Errorf("errors.Is(%v, ErrUnknownType) = true, want false", err)
	}
	if got, want := errors.Is(err, relaywire.ErrUnsupportedVersion), problem == relaywire.ProblemBadVersion; got != want {
		t.Errorf("errors.Is(%v, ErrUnsupportedVersion) = %v, want %v", err, got, want)
	}
}

// knownProblems are the reasons an invalid vector may give.
var knownProblems = []string{
	relaywire.ProblemTruncated, relaywire.ProblemTrailing, relaywire.ProblemBadSignature,
	relaywire.ProblemBadVersion, relaywire.ProblemWrongType, relaywire.ProblemBadAcceptMode,
	relaywire.ProblemBadPadding, relaywire.ProblemBadEvent,
}

func isKnownProblem(p string) bool {
	for _, k := range knownProblems {
		if p == k {
			return true
		}
	}
	return false
}

// knownTypes are the twelve message types: Unity's ten and Switchboard's two.
var knownTypes = []relaywire.Type{
	relaywire.TypeBind, relaywire.TypeBindReceived, relaywire.TypePing, relaywire.TypeConnectRequest,
	relaywire.TypeAccepted, relaywire.TypeRejected, relaywire.TypeDisconnect, relaywire.TypeRelay,
	relaywire.TypeClose, relaywire.TypeError, relaywire.TypePeersSubscribe, relaywire.TypePeerEvent,
}

func TestMessageVectorsCoverEveryType(t *testing.T) {
	f := loadMessages(t)
	if f.ProtocolVersion != int(relaywire.Version) {
		t.Errorf("protocol_version = %d, want %d", f.ProtocolVersion, relaywire.Version)
	}
	seen := map[relaywire.Type]bool{}
	for _, mv := range f.Messages {
		typ := relaywire.Type(mv.Type)
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
		for _, v := range mv.Valid {
			if names["valid/"+v.Name] {
				t.Errorf("%s: vector name valid/%s used twice", typ, v.Name)
			}
			names["valid/"+v.Name] = true
		}
		for _, v := range mv.Invalid {
			if names["invalid/"+v.Name] {
				t.Errorf("%s: vector name invalid/%s used twice", typ, v.Name)
			}
			names["invalid/"+v.Name] = true
		}
	}
	for _, typ := range knownTypes {
		if !seen[typ] {
			t.Errorf("no vectors for %s", typ)
		}
	}
	for i := range 256 {
		if relaywire.Type(i).Known() != (relaywire.New(relaywire.Type(i)) != nil) {
			t.Errorf("type %d: Known and New disagree", i)
		}
	}
	if len(seen) != len(knownTypes) {
		t.Errorf("vectors for %d types, want %d", len(seen), len(knownTypes))
	}
}

// sizes are the exact sizes of the fixed-size messages (reference §1.4,
// §8): a valid vector must have exactly this many bytes.
var sizes = map[relaywire.Type]int{
	relaywire.TypeBind: 295, relaywire.TypeBindReceived: 4, relaywire.TypePing: 22,
	relaywire.TypeConnectRequest: 276, relaywire.TypeAccepted: 36, relaywire.TypeRejected: 36,
	relaywire.TypeDisconnect: 36, relaywire.TypeError: 21,
	relaywire.TypePeersSubscribe: 20, relaywire.TypePeerEvent: 21,
}

func TestValidMessageVectors(t *testing.T) {
	for _, mv := range loadMessages(t).Messages {
		typ := relaywire.Type(mv.Type)
		for _, v := range mv.Valid {
			t.Run(mv.Name+"/"+v.Name, func(t *testing.T) {
				// The header is DA 72 00 type and the size is the type's.
				if len(v.Hex) < 4 || !bytes.Equal(v.Hex[:4], []byte{0xDA, 0x72, 0x00, byte(typ)}) {
					t.Fatalf("header %x, want da7200%02x", v.Hex[:min(4, len(v.Hex))], byte(typ))
				}
				switch n := len(v.Hex); typ {
				case relaywire.TypeRelay:
					if n < 38 || n-38 != int(v.Hex[36])<<8|int(v.Hex[37]) {
						t.Errorf("RELAY of %d bytes with big-endian length %x", n, v.Hex[36:38])
					}
				case relaywire.TypeClose:
					if n != 4 && n != 20 {
						t.Errorf("CLOSE of %d bytes, want 4 or 20", n)
					}
				default:
					if n != sizes[typ] {
						t.Errorf("%d bytes, want %d", n, sizes[typ])
					}
				}
				// Decoding hex gives fields.
				m, err := relaywire.Decode(v.Hex)
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
				re, err := relaywire.Append(nil, m)
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
				enc, err := relaywire.Append(prefix, in)
				if err != nil {
					t.Fatalf("Append: %v", err)
				}
				if !bytes.Equal(enc[:2], prefix) || !bytes.Equal(enc[2:], v.Hex) {
					t.Errorf("encoded\n got %.300x\nwant aabb%.300x", enc, []byte(v.Hex))
				}
				// The typed decoder agrees with Decode, also into a value that
				// holds every other valid vector of the type first.
				for _, other := range mv.Valid {
					typed := relaywire.New(typ)
					if err := typed.Unmarshal(other.Hex); err != nil {
						t.Fatalf("%T.Unmarshal(%s): %v", typed, other.Name, err)
					}
					if err := typed.Unmarshal(v.Hex); err != nil {
						t.Fatalf("%T.Unmarshal: %v", typed, err)
					}
					if !reflect.DeepEqual(typed, m) {
						t.Errorf("%T.Unmarshal after %s = %+v, Decode = %+v", typed, other.Name, typed, m)
					}
				}
			})
		}
	}
}

func TestInvalidMessageVectors(t *testing.T) {
	for _, mv := range loadMessages(t).Messages {
		typ := relaywire.Type(mv.Type)
		for _, v := range mv.Invalid {
			t.Run(mv.Name+"/"+v.Name, func(t *testing.T) {
				if !isKnownProblem(v.Reason) {
					t.Fatalf("reason %q is not a relaywire Problem constant", v.Reason)
				}
				// The decoder of the type the vector is listed under, into a
				// value that held a valid message.
				m := relaywire.New(typ)
				if err := m.Unmarshal(mv.Valid[len(mv.Valid)-1].Hex); err != nil {
					t.Fatal(err)
				}
				wantFieldError(t, m.Unmarshal(v.Hex), typ, v.Field, v.Reason)
				if !reflect.DeepEqual(m, relaywire.New(typ)) {
					t.Errorf("Unmarshal left %+v after its error, want the zero value", m)
				}
				// The generic decoder, which reads the type from byte 3;
				// wrong_type vectors hold another valid type by design.
				if v.Reason == relaywire.ProblemWrongType {
					return
				}
				got, err := relaywire.Decode(v.Hex)
				if got != nil {
					t.Errorf("Decode returned %+v with error %v, want nil message", got, err)
				}
				wantFieldError(t, err, typ, v.Field, v.Reason)
			})
		}
	}
}

func TestHeaderInvalidVectors(t *testing.T) {
	f := loadMessages(t)
	if len(f.HeaderInvalid) == 0 {
		t.Fatal("no header_invalid vectors")
	}
	for _, v := range f.HeaderInvalid {
		t.Run(v.Name, func(t *testing.T) {
			typ, err := relaywire.Peek(v.Hex)
			if typ != relaywire.TypeNone {
				t.Errorf("Peek returned type %s with its error, want TypeNone", typ)
			}
			wantFieldError(t, err, relaywire.TypeNone, v.Field, v.Reason)
			m, err := relaywire.Decode(v.Hex)
			if m != nil {
				t.Errorf("Decode returned %+v with its error", m)
			}
			wantFieldError(t, err, relaywire.TypeNone, v.Field, v.Reason)
			// Every typed decoder fails on the header the same way.
			for _, typ := range knownTypes {
				wantFieldError(t, relaywire.New(typ).Unmarshal(v.Hex), typ, v.Field, v.Reason)
			}
		})
	}
}

func TestUnknownTypeVectors(t *testing.T) {
	f := loadMessages(t)
	if len(f.UnknownTypes) == 0 {
		t.Fatal("no unknown_types vectors")
	}
	for _, v := range f.UnknownTypes {
		t.Run(v.Name, func(t *testing.T) {
			m, err := relaywire.Decode(v.Hex)
			if m != nil || !errors.Is(err, relaywire.ErrUnknownType) {
				t.Fatalf("Decode = %v, %v; want nil, ErrUnknownType", m, err)
			}
			if errors.Is(err, relaywire.ErrInvalid) {
				t.Errorf("unknown type matches ErrInvalid; it must be distinct")
			}
			typ, err := relaywire.Peek(v.Hex)
			if !errors.Is(err, relaywire.ErrUnknownType) || typ != relaywire.Type(v.Hex[3]) || typ.Known() {
				t.Errorf("Peek = %v, %v; want %v, ErrUnknownType", typ, err, relaywire.Type(v.Hex[3]))
			}
			for _, k := range knownTypes {
				wantFieldError(t, relaywire.New(k).Unmarshal(v.Hex), k, "type", relaywire.ProblemWrongType)
			}
		})
	}
}

func TestBindHMACVectors(t *testing.T) {
	f := loadHMAC(t)
	var reference int
	for _, v := range f.Vectors {
		if strings.HasPrefix(v.Name, "reference_") {
			reference++
		}
		t.Run(v.Name, func(t *testing.T) {
			key, err := relaywire.NewKey(v.Key)
			if err != nil {
				t.Fatal(err)
			}
			cd, err := relaywire.NewConnectionData(v.Blob)
			if err != nil {
				t.Fatal(err)
			}
			// The BIND is header, accept mode 0, nonce LE, length, padded blob, HMAC.
			signed := append([]byte{0xDA, 0x72, 0, 0, 0, byte(v.Nonce), byte(v.Nonce >> 8), v.ConnectionDataLength}, cd[:]...)
			if want := append(signed, v.HMAC...); !bytes.Equal(v.Bind, want) {
				t.Fatalf("bind is not its parts:\n got %x\nwant %x", []byte(v.Bind), want)
			}
			m := &relaywire.Bind{Nonce: v.Nonce, ConnectionDataLength: v.ConnectionDataLength, ConnectionData: cd}
			if got := m.ComputeHMAC(&key); !bytes.Equal(got[:], v.HMAC) {
				t.Errorf("ComputeHMAC = %x, want %x", got, []byte(v.HMAC))
			}
			if v.ConnectionDataLength == relaywire.ConnectionDataSize {
				nb, err := relaywire.NewBind(v.Nonce, v.Blob, &key)
				if err != nil {
					t.Fatal(err)
				}
				enc, _ := nb.AppendTo(nil)
				if !bytes.Equal(enc, v.Bind) {
					t.Errorf("NewBind encodes\n got %x\nwant %x", enc, []byte(v.Bind))
				}
			}
			var dec relaywire.Bind
			if err := dec.Unmarshal(v.Bind); err != nil {
				t.Fatal(err)
			}
			if !dec.Verify(&key) {
				t.Error("Verify = false for the vector's BIND")
			}
			if !bytes.Equal(dec.Blob(), cd[:v.ConnectionDataLength]) {
				t.Errorf("Blob = %x, want %x", dec.Blob(), cd[:v.ConnectionDataLength])
			}
			// Any flipped bit of the signed bytes, the HMAC or the key fails.
			for _, i := range []int{0, 5, 6, 7, 8, 262} {
				bad := dec
				mut := bytes.Clone(v.Bind)
				mut[i] ^= 1
				if err := bad.Unmarshal(mut); err == nil && bad.Verify(&key) {
					t.Errorf("Verify = true with byte %d flipped", i)
				}
			}
			bad := dec
			bad.HMAC[31] ^= 0x80
			if bad.Verify(&key) {
				t.Error("Verify = true with a flipped HMAC bit")
			}
			badKey := key
			badKey[63] ^= 1
			if dec.Verify(&badKey) {
				t.Error("Verify = true under another key")
			}
		})
	}
	if reference != 3 {
		t.Errorf("%d reference vectors, want the reference's 3", reference)
	}
}

func TestAllocationIDVectors(t *testing.T) {
	var f allocationIDsFile
	readJSON(t, "allocation_ids.json", &f)
	if len(f.Valid) == 0 || len(f.Invalid) == 0 {
		t.Fatal("no allocation id vectors")
	}
	for _, v := range f.Valid {
		t.Run("valid/"+v.Text, func(t *testing.T) {
			id, err := relaywire.ParseAllocationID(v.Text)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(id[:], v.Bytes) {
				t.Errorf("bytes %x, want %x", id[:], []byte(v.Bytes))
			}
			if id.String() != v.Canonical {
				t.Errorf("String = %q, want %q", id.String(), v.Canonical)
			}
			if got := base64.StdEncoding.EncodeToString(id[:]); got != v.Base64 {
				t.Errorf("base64 = %q, want %q", got, v.Base64)
			}
			js, err := json.Marshal(id)
			if err != nil || string(js) != `"`+v.Canonical+`"` {
				t.Errorf("json.Marshal = %s, %v; want %q", js, err, v.Canonical)
			}
			var back relaywire.AllocationID
			if err := json.Unmarshal([]byte(`"`+v.Text+`"`), &back); err != nil || back != id {
				t.Errorf("json.Unmarshal = %v, %v; want %v", back, err, id)
			}
		})
	}
	for _, v := range f.Invalid {
		t.Run("invalid/"+v.Name, func(t *testing.T) {
			id, err := relaywire.ParseAllocationID(v.Text)
			if !errors.Is(err, relaywire.ErrBadAllocationID) || !id.IsZero() {
				t.Errorf("ParseAllocationID(%q) = %v, %v; want zero, ErrBadAllocationID", v.Text, id, err)
			}
			var u relaywire.AllocationID
			if err := u.UnmarshalText([]byte(v.Text)); !errors.Is(err, relaywire.ErrBadAllocationID) {
				t.Errorf("UnmarshalText(%q) = %v, want ErrBadAllocationID", v.Text, err)
			}
		})
	}
}
