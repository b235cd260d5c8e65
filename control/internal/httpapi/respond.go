package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchboardgg/switchboard/api"
)

// Error is an error with its HTTP answer. Handlers return it; anything
// else a handler returns is logged and answered with 500 internal.
type Error struct {
	Status  int    // HTTP status
	Code    string // error.code
	Message string // error.message
	Reason  string // error.details.reason; empty means no details
	// RetryAfter, when positive, is sent as the Retry-After header, in
	// whole seconds rounded up.
	RetryAfter time.Duration
}

// RateLimited is the 429 rate_limited of a limiter that has a token again
// after wait (Limiter.Take); its Retry-After is at least 1 second.
func RateLimited(wait time.Duration) *Error {
	e := *ErrRateLimited
	e.RetryAfter = max(wait, time.Second)
	return &e
}

// retryAfter is the Retry-After value of e.
func (e *Error) retryAfter() string { return RetryAfter(e.RetryAfter) }

// RetryAfter is a Retry-After header's value for a wait of d: whole
// seconds, rounded up. Every API's 429 (relayapi's too) writes it so.
func RetryAfter(d time.Duration) string {
	return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)
}

func (e *Error) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("control: %d %s (%s): %s", e.Status, e.Code, e.Reason, e.Message)
	}
	return fmt.Sprintf("control: %d %s: %s", e.Status, e.Code, e.Message)
}

// Invalid is a 400 invalid_argument with a formatted message.
func Invalid(format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: api.CodeInvalidArgument, Message: fmt.Sprintf(format, args...)}
}

// Unauthenticated is a 401 unauthenticated.
func Unauthenticated(msg string) *Error {
	return &Error{Status: http.StatusUnauthorized, Code: api.CodeUnauthenticated, Message: msg}
}

// Denied is a 403 permission_denied.
func Denied(msg string) *Error {
	return &Error{Status: http.StatusForbidden, Code: api.CodePermissionDenied, Message: msg}
}

// NotFound is a 404 not_found.
func NotFound(msg string) *Error {
	return &Error{Status: http.StatusNotFound, Code: api.CodeNotFound, Message: msg}
}

// Conflict is a 409 conflict with an optional details.reason.
func Conflict(msg, reason string) *Error {
	return &Error{Status: http.StatusConflict, Code: api.CodeConflict, Message: msg, Reason: reason}
}

// Unavailable is a 503 unavailable with an optional details.reason.
func Unavailable(msg, reason string) *Error {
	return &Error{Status: http.StatusServiceUnavailable, Code: api.CodeUnavailable, Message: msg, Reason: reason}
}

// NodeUnavailable is the 503 game_node_unavailable of a node that did
// not answer.
func NodeUnavailable() *Error {
	return Unavailable("the room's game node is unavailable", api.ReasonGameNodeUnavailable)
}

// ErrRateLimited (429) and ErrInternal (500) have fixed messages; a
// handler returns [RateLimited], which adds the Retry-After.
var (
	ErrRateLimited = &Error{Status: http.StatusTooManyRequests, Code: api.CodeRateLimited, Message: "too many requests"}
	ErrInternal    = &Error{Status: http.StatusInternalServerError, Code: api.CodeInternal, Message: "internal error"}
)

// Body returns the error JSON of e.
func (e *Error) Body() api.ErrorBody {
	b := api.ErrorBody{Error: api.ErrorObject{Code: e.Code, Message: e.Message}}
	if e.Reason != "" {
		b.Error.Details = &api.ErrorDetails{Reason: e.Reason}
	}
	return b
}

// The headers of every JSON answer, set without canonicalizing the keys
// on each request. net/http only reads the value slices.
var (
	headerJSON    = []string{"application/json"}
	headerNoStore = []string{"no-store"}
	headerNoSniff = []string{"nosniff"}
)

// jsonBuffers recycles the buffers answers are encoded into; a buffer
// that grew past maxPooledBuffer is dropped instead.
var jsonBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledBuffer = 64 << 10

// WriteJSON writes v with status. Encoding our own response types cannot
// fail, so an error here is the client going away and is ignored.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	buf := jsonBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledBuffer {
			buf.Reset()
			jsonBuffers.Put(buf)
		}
	}()
	// Encode writes what Marshal returns, and a newline.
	if err := json.NewEncoder(buf).Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		_ = json.NewEncoder(buf).Encode(ErrInternal.Body())
	}
	h := w.Header()
	h["Content-Type"] = headerJSON
	h["Cache-Control"] = headerNoStore
	h["X-Content-Type-Options"] = headerNoSniff
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// DecodeBody decodes the JSON object in r's body into v. The body is
// limited to max bytes; unknown fields, trailing data, wrong types and
// malformed JSON are all 400 invalid_argument, and so is what
// encoding/json would let through but a strict parser refuses or reads
// differently (see checkStrict): text that is not UTF-8, an unpaired
// surrogate escape, a duplicate key, a field name in another case, and a
// body that is not an object (null included, which encoding/json reads as
// {}). An empty body decodes as {}.
func DecodeBody(w http.ResponseWriter, r *http.Request, max int64, v any) error {
	buf := jsonBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledBuffer {
			buf.Reset()
			jsonBuffers.Put(buf)
		}
	}()
	if n := r.ContentLength; n > 0 && n <= max {
		buf.Grow(int(n) + bytes.MinRead) // ReadFrom wants MinRead free to read EOF
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, max))
	body := buf.Bytes() // decoding copies what it keeps
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			e := Invalid("request body is larger than %d bytes", max)
			e.Reason = api.ReasonBodyTooLarge
			return e
		}
		return Invalid("cannot read the request body")
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil
	}
	if trimmed[0] != '{' {
		return Invalid("request body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Invalid("request body must hold a single JSON object")
	}
	if err := checkStrict(body, v); err != nil {
		return err
	}
	return nil
}

// jsonError turns a decoding error into a 400 whose message names the
// field but never echoes the value.
func jsonError(err error) *Error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return Invalid("request body must be a JSON object")
		}
		kind := typeErr.Type.Kind()
		if reflect.Int <= kind && kind <= reflect.Uint64 && strings.HasPrefix(typeErr.Value, "number") {
			// 10.5, 1e3 or a number out of range: a JSON number, but
			// not an integer that fits.
			return Invalid("field %q must be an integer", typeErr.Field)
		}
		return Invalid("field %q must be of JSON type %s", typeErr.Field, jsonTypeName(kind.String()))
	case errors.As(err, &syntaxErr):
		return Invalid("malformed JSON at byte %d", syntaxErr.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return Invalid("truncated JSON")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no typed error for DisallowUnknownFields.
		name := strings.TrimPrefix(err.Error(), "json: unknown field ")
		if len(name) > 66 {
			name = name[:64] + "…\""
		}
		return Invalid("unknown field %s", name)
	}
	return Invalid("malformed JSON")
}

func jsonTypeName(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "struct", "map":
		return "object"
	case "slice", "array":
		return "array"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "float32", "float64":
		return "number"
	}
	return kind
}
