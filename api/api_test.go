package api_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/api"
)

func TestTimeJSON(t *testing.T) {
	at := time.Date(2026, 11, 10, 9, 1, 0, 0, time.FixedZone("CET", 3600))
	b, err := json.Marshal(api.NewTime(at))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `"2026-11-10T08:01:00.000Z"`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	var back api.Time
	if err := json.Unmarshal([]byte(`"2026-11-10T08:01:00.123Z"`), &back); err != nil {
		t.Fatal(err)
	}
	if want := at.Add(123 * time.Millisecond); !back.Equal(want) {
		t.Fatalf("got %v, want %v", back, want)
	}
	if b, _ := json.Marshal(api.Time{}); string(b) != "null" {
		t.Fatalf("zero Time: got %s, want null", b)
	}
	if err := json.Unmarshal([]byte(`null`), &back); err != nil || !back.IsZero() {
		t.Fatalf("null: got %v, %v; want the zero Time", back, err)
	}
	for _, bad := range []string{`1`, `"yesterday"`, `""`} {
		if err := json.Unmarshal([]byte(bad), &back); err == nil {
			t.Errorf("%s: got no error", bad)
		}
	}
}

func TestStatusOf(t *testing.T) {
	for code, want := range map[string]int{
		api.CodeInvalidArgument: http.StatusBadRequest, api.CodeUnauthenticated: http.StatusUnauthorized,
		api.CodePermissionDenied: http.StatusForbidden, api.CodeNotFound: http.StatusNotFound,
		api.CodeConflict: http.StatusConflict, api.CodeRateLimited: http.StatusTooManyRequests,
		api.CodeInternal: http.StatusInternalServerError, api.CodeUnavailable: http.StatusServiceUnavailable,
	} {
		if got, ok := api.StatusOf(code); !ok || got != want {
			t.Errorf("%s: got %d, %v; want %d", code, got, ok, want)
		}
	}
	if _, ok := api.StatusOf("teapot"); ok {
		t.Error("an unknown code has a status")
	}
}

// TestErrorBody: details is left out without a reason.
func TestErrorBody(t *testing.T) {
	b, _ := json.Marshal(api.ErrorBody{Error: api.ErrorObject{Code: api.CodeNotFound, Message: "room not found"}})
	if got, want := string(b), `{"error":{"code":"not_found","message":"room not found"}}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}
