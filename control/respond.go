package control

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Error codes of the error JSON (rooms spec §2).
const (
	codeInvalidArgument  = "invalid_argument"
	codeUnauthenticated  = "unauthenticated"
	codePermissionDenied = "permission_denied"
	codeNotFound         = "not_found"
	codeConflict         = "conflict"
	codeRateLimited      = "rate_limited"
	codeInternal         = "internal"
	codeUnavailable      = "unavailable"
)

// Reasons in details.reason, as the seed names them.
const (
	reasonRoomNotOpen         = "room_not_open"
	reasonRoomFull            = "room_full"
	reasonSeatTaken           = "seat_taken"
	reasonJoinedOnOtherDevice = "joined_on_other_device"
	reasonGameNodeUnavailable = "game_node_unavailable"
	reasonNotManual           = "not_manual"
	reasonAlreadyStarted      = "already_started"
	reasonBodyTooLarge        = "body_too_large"
)

// apiError is an error with its HTTP answer. Handlers return it; anything
// else a handler returns is logged and answered with 500 internal.
type apiError struct {
	status  int
	code    string
	message string
	reason  string // details.reason; empty means no details
}

func (e *apiError) Error() string {
	if e.reason != "" {
		return fmt.Sprintf("control: %d %s (%s): %s", e.status, e.code, e.reason, e.message)
	}
	return fmt.Sprintf("control: %d %s: %s", e.status, e.code, e.message)
}

func errInvalid(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, code: codeInvalidArgument, message: fmt.Sprintf(format, args...)}
}

func errUnauthenticated(msg string) *apiError {
	return &apiError{status: http.StatusUnauthorized, code: codeUnauthenticated, message: msg}
}

func errDenied(msg string) *apiError {
	return &apiError{status: http.StatusForbidden, code: codePermissionDenied, message: msg}
}

func errNotFound(msg string) *apiError {
	return &apiError{status: http.StatusNotFound, code: codeNotFound, message: msg}
}

func errConflict(msg, reason string) *apiError {
	return &apiError{status: http.StatusConflict, code: codeConflict, message: msg, reason: reason}
}

func errUnavailable(msg, reason string) *apiError {
	return &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable, message: msg, reason: reason}
}

func errNodeUnavailable() *apiError {
	return errUnavailable("the room's game node is unavailable", reasonGameNodeUnavailable)
}

var (
	errRateLimited = &apiError{status: http.StatusTooManyRequests, code: codeRateLimited, message: "too many requests"}
	errInternal    = &apiError{status: http.StatusInternalServerError, code: codeInternal, message: "internal error"}
)

// errorBody is the error JSON of rooms spec §2.
type errorBody struct {
	Error errorObject `json:"error"`
}

type errorObject struct {
	Code    string        `json:"code"`
	Message string        `json:"message"`
	Details *errorDetails `json:"details,omitempty"`
}

type errorDetails struct {
	Reason string `json:"reason"`
}

func (e *apiError) body() errorBody {
	b := errorBody{Error: errorObject{Code: e.code, Message: e.message}}
	if e.reason != "" {
		b.Error.Details = &errorDetails{Reason: e.reason}
	}
	return b
}

// writeJSON writes v with status. Encoding our own response types cannot
// fail, so an error here is the client going away and is ignored.
func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		data, _ = json.Marshal(errInternal.body())
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(data, '\n'))
}

// decodeBody decodes the JSON object in r's body into v. The body is
// limited to max bytes; unknown fields, trailing data, wrong types and
// malformed JSON are all 400 invalid_argument. An empty body decodes as {}.
func decodeBody(w http.ResponseWriter, r *http.Request, max int64, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			e := errInvalid("request body is larger than %d bytes", max)
			e.reason = reasonBodyTooLarge
			return e
		}
		return errInvalid("cannot read the request body")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errInvalid("request body must hold a single JSON object")
	}
	return nil
}

// jsonError turns a decoding error into a 400 whose message names the
// field but never echoes the value.
func jsonError(err error) *apiError {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return errInvalid("request body must be a JSON object")
		}
		return errInvalid("field %q must be of JSON type %s", typeErr.Field, jsonTypeName(typeErr.Type.Kind().String()))
	case errors.As(err, &syntaxErr):
		return errInvalid("malformed JSON at byte %d", syntaxErr.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errInvalid("truncated JSON")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no typed error for DisallowUnknownFields.
		name := strings.TrimPrefix(err.Error(), "json: unknown field ")
		if len(name) > 66 {
			name = name[:64] + "…\""
		}
		return errInvalid("unknown field %s", name)
	}
	return errInvalid("malformed JSON")
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
