package sealed_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/switchboardgg/switchboard/internal/sealed"
)

// The vectors in testdata/sealed are written by gen.py beside them with
// Python's cryptography package, an implementation independent of ours.

func readJSON(t testing.TB, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "sealed", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestVectorsDerive(t *testing.T) {
	var vs []struct {
		Name, Secret, Label, I2R, R2I string
		InitiatorNonce                string `json:"initiator_nonce"`
		ResponderNonce                string `json:"responder_nonce"`
	}
	readJSON(t, "derive.json", &vs)
	if len(vs) == 0 {
		t.Fatal("no vectors")
	}
	for _, v := range vs {
		t.Run(v.Name, func(t *testing.T) {
			k, err := sealed.DeriveKeys(unhex(t, v.Secret), unhex(t, v.InitiatorNonce), unhex(t, v.ResponderNonce), v.Label)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := hex.EncodeToString(k.I2R[:]), v.I2R; got != want {
				t.Errorf("i2r: got %s, want %s", got, want)
			}
			if got, want := hex.EncodeToString(k.R2I[:]), v.R2I; got != want {
				t.Errorf("r2i: got %s, want %s", got, want)
			}
		})
	}
}

func TestVectorsSeal(t *testing.T) {
	var vs []struct {
		Name     string
		Key      string
		KeyID    uint32 `json:"key_id"`
		Sequence uint64
		Payload  string
		Datagram string
	}
	readJSON(t, "seal.json", &vs)
	if len(vs) == 0 {
		t.Fatal("no vectors")
	}
	for _, v := range vs {
		t.Run(v.Name, func(t *testing.T) {
			s, err := sealed.NewSealer(unhex(t, v.Key), v.KeyID)
			if err != nil {
				t.Fatal(err)
			}
			s.SetNext(v.Sequence)
			got, err := s.Seal([]byte("prefix"), unhex(t, v.Payload))
			if err != nil {
				t.Fatal(err)
			}
			if want := "prefix" + string(unhex(t, v.Datagram)); string(got) != want {
				t.Fatalf("sealed: got %x, want %x", got, want)
			}
			o, err := sealed.NewOpener(unhex(t, v.Key), v.KeyID)
			if err != nil {
				t.Fatal(err)
			}
			p, seq, err := o.Open(nil, unhex(t, v.Datagram))
			if err != nil {
				t.Fatal(err)
			}
			if seq != v.Sequence || !bytes.Equal(p, unhex(t, v.Payload)) {
				t.Fatalf("opened: got seq %d payload %x, want %d %s", seq, p, v.Sequence, v.Payload)
			}
		})
	}
}

var wantErrs = map[string]error{
	"":        nil,
	"replay":  sealed.ErrReplay,
	"auth":    sealed.ErrAuth,
	"keyid":   sealed.ErrKeyID,
	"short":   sealed.ErrShort,
	"version": sealed.ErrVersion,
}

func TestVectorsReplay(t *testing.T) {
	var v struct {
		Key   string
		KeyID uint32 `json:"key_id"`
		Steps []struct{ Note, Datagram, Want, Payload string }
	}
	readJSON(t, "replay.json", &v)
	o, err := sealed.NewOpener(unhex(t, v.Key), v.KeyID)
	if err != nil {
		t.Fatal(err)
	}
	for i, st := range v.Steps {
		want, ok := wantErrs[st.Want]
		if !ok {
			t.Fatalf("step %d: unknown want %q", i, st.Want)
		}
		p, _, err := o.Open(nil, unhex(t, st.Datagram))
		if !errors.Is(err, want) || (want == nil) != (err == nil) {
			t.Fatalf("step %d (%s): got error %v, want %v", i, st.Note, err, want)
		}
		if err == nil && !bytes.Equal(p, unhex(t, st.Payload)) {
			t.Fatalf("step %d (%s): got payload %x, want %s", i, st.Note, p, st.Payload)
		}
	}
}
