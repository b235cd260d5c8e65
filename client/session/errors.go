package session

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/switchboardgg/switchboard/api"
)

// Match is a sentinel error that an [*APIError] matches with errors.Is:
// by error code when Code is set, by details.reason when Reason is set
// (either one suffices), and, for an answer without the error JSON (a
// proxy's page), by HTTP status when Status is set. SDKs define their own
// for the reasons of their API, as package client/rooms does.
type Match struct {
	Code   string // api.Code…
	Reason string // api.Reason…
	Status int    // HTTP status of an answer without a code
	// ProblemCode matches the numeric "code" of a problem-JSON answer
	// (the relay API's 15xxx codes, api.RelayCode…) when set.
	ProblemCode int
	Text        string // the error text
}

func (m *Match) Error() string { return m.Text }

// Sentinels matched by the code of an [*APIError].
var (
	// ErrUnauthenticated: 401 unauthenticated. A Client returns it once a
	// refresh of the access token has failed too: log in again.
	ErrUnauthenticated error = &Match{Code: api.CodeUnauthenticated, Status: http.StatusUnauthorized, Text: "unauthenticated"}
	// ErrPermissionDenied: 403 permission_denied.
	ErrPermissionDenied error = &Match{Code: api.CodePermissionDenied, Status: http.StatusForbidden, Text: "permission denied"}
	// ErrNotFound: 404 not_found.
	ErrNotFound error = &Match{Code: api.CodeNotFound, Status: http.StatusNotFound, Text: "not found"}
	// ErrInvalidArgument: 400 invalid_argument; the request was wrong, do
	// not retry it as is.
	ErrInvalidArgument error = &Match{Code: api.CodeInvalidArgument, Text: "invalid argument"}
	// ErrConflict: 409 conflict; details.reason says which.
	ErrConflict error = &Match{Code: api.CodeConflict, Status: http.StatusConflict, Text: "conflict"}
	// ErrRateLimited: 429 rate_limited; retry later.
	ErrRateLimited error = &Match{Code: api.CodeRateLimited, Status: http.StatusTooManyRequests, Text: "rate limited"}
	// ErrUnavailable: 503 unavailable; retry later.
	ErrUnavailable error = &Match{Code: api.CodeUnavailable, Status: http.StatusServiceUnavailable, Text: "unavailable"}
)

// APIError is an error answer of an HTTP API: the error envelope
// {"error": {"code", "message", "details": {"reason"}}} with its status.
// It matches [Match] sentinels with errors.Is; see [APIError.Is].
type APIError struct {
	Method, Path string // the call; may be empty
	Status       int    // HTTP status
	Code         string // error.code, e.g. "conflict"; "" for an answer without the error JSON
	Message      string // error.message, for people
	Reason       string // error.details.reason, e.g. "room_full"; may be empty
	// ProblemCode is the numeric "code" of a problem-JSON answer (RFC
	// 7807, what the relay API sends: api.RelayCode…), 0 otherwise; its
	// "detail" is then in Message.
	ProblemCode int
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("http %d", e.Status)
	if e.Method != "" {
		s = e.Method + " " + e.Path + ": " + s
	}
	if e.Code != "" {
		s += " " + e.Code
	}
	if e.ProblemCode != 0 {
		s += fmt.Sprintf(" code %d", e.ProblemCode)
	}
	if e.Reason != "" {
		s += " (" + e.Reason + ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Is reports whether target is a [*Match] that e matches: by code, reason
// or problem code, or by status when e has no code.
func (e *APIError) Is(target error) bool {
	m, ok := target.(*Match)
	if !ok {
		return false
	}
	return (m.Code != "" && e.Code == m.Code) ||
		(m.Reason != "" && e.Reason == m.Reason) ||
		(m.ProblemCode != 0 && e.ProblemCode == m.ProblemCode) ||
		(m.Status != 0 && e.Code == "" && e.Status == m.Status)
}

// Temporary reports whether a retry of the same call may succeed: 5xx and
// 429.
func (e *APIError) Temporary() bool {
	return e.Status >= 500 || e.Status == http.StatusTooManyRequests
}

// ParseAPIError turns an HTTP error answer into an [*APIError]: the
// error envelope, or the relay API's problem JSON (ProblemCode and
// Message from its code and detail). An answer that is neither (a
// proxy's page) keeps the status with its status text.
func ParseAPIError(status int, data []byte) *APIError {
	var body api.ErrorBody
	var problem api.RelayProblem
	e := &APIError{Status: status}
	if json.Unmarshal(data, &body) == nil && body.Error.Code != "" {
		e.Code = body.Error.Code
		e.Message = body.Error.Message
		if body.Error.Details != nil {
			e.Reason = body.Error.Details.Reason
		}
	} else if json.Unmarshal(data, &problem) == nil && problem.Code != 0 {
		e.ProblemCode, e.Message = problem.Code, problem.Detail
		if e.Message == "" {
			e.Message = problem.Title
		}
	} else {
		e.Message = http.StatusText(status)
	}
	return e
}
