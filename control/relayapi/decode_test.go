package relayapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/switchboardgg/switchboard/api"
)

// FuzzDecode: the relay body rule never panics, answers every refusal with
// a 400 problem, and accepts only what encoding/json reads the same way.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `{"maxConnections":3,"region":"eu"}`, `{"maxConnections":3,"maxConnections":4}`,
		`{"a":{"b":[{"c":1,"C":2}]}}`, `{"maxConnections":"3"}`, `[1,2]`, `{"x":` + string(bytes.Repeat([]byte("["), 40)),
		"{\"region\":\"\xff\"}", `{"maxConnections":1} {}`, `{"future":{"x":[1,2,{"y":null}]},"maxConnections":100}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest(http.MethodPost, "/relay/v1/allocate", bytes.NewReader(body))
		var got api.RelayAllocateRequest
		err := decode(httptest.NewRecorder(), r, DefaultMaxBodyBytes, &got)
		if err != nil {
			var p *problem
			if !errors.As(err, &p) || p.status != http.StatusBadRequest {
				t.Fatalf("refusal %v is not a 400 problem", err)
			}
			return
		}
		if len(bytes.TrimSpace(body)) == 0 {
			return
		}
		var want api.RelayAllocateRequest
		if err := json.Unmarshal(body, &want); err != nil {
			t.Fatalf("accepted %q, which encoding/json refuses: %v", body, err)
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if !bytes.Equal(g, w) {
			t.Fatalf("%q decoded as %s, encoding/json reads %s", body, g, w)
		}
	})
}
