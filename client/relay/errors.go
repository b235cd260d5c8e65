package relay

import (
	"errors"
	"fmt"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/client/session"
	"github.com/switchboardgg/switchboard/protocol/relaywire"
)

// Errors of the Conn's own making.
var (
	// ErrClosed is returned by the calls of a [Conn] after it ended: by
	// [Conn.Close], or for the reason [Conn.Err] gives.
	ErrClosed = errors.New("relay: connection closed")
	// ErrBindTimeout: the relay node did not answer BIND with
	// BIND_RECEIVED (or CONNECT_REQUEST with ACCEPTED or REJECTED) within
	// Config.BindTimeout; the node is unreachable over this transport.
	ErrBindTimeout = errors.New("relay: no answer from the relay node")
	// ErrRejected: the host refused the connection (REJECTED): it has
	// its maximum number of peers.
	ErrRejected = errors.New("relay: connection rejected by the host (full)")
	// ErrHostGone: the host's allocation was released (the host left,
	// timed out or closed); the joiner's allocation goes with it. Join
	// again, or migrate (when the host allocated with host migration).
	ErrHostGone = errors.New("relay: the host left")
	// ErrUnknownPeer: Send or Disconnect named a peer this Conn is not
	// connected to.
	ErrUnknownPeer = errors.New("relay: not connected to that peer")
	// ErrTooLarge: the payload is over Config.MaxPayload.
	ErrTooLarge = errors.New("relay: payload too large")
	// ErrNoEndpoint: the allocation lists no endpoint of the transport.
	ErrNoEndpoint = errors.New("relay: no endpoint for the transport")
	// ErrUnknownTransport: Config.Transport names no carrier of this
	// version ([Transports] lists them).
	ErrUnknownTransport = errors.New("relay: unknown transport")
	// ErrNoQoSServer: the API lists no QoS server (no healthy relay
	// node).
	ErrNoQoSServer = errors.New("relay: no QoS server answered")
)

// Sentinels of the relay node's ERROR codes (docs/protocol/relay.md §7).
// A [*ServerError] matches the one of its code with errors.Is.
var (
	// ErrInvalidProtocolVersion: ERROR 0.
	ErrInvalidProtocolVersion = errors.New("relay: invalid protocol version")
	// ErrTimedOut: ERROR 1, fatal: the allocation timed out; allocate or
	// join again.
	ErrTimedOut = errors.New("relay: allocation timed out")
	// ErrUnauthorized: ERROR 2: a CONNECT_REQUEST to a host the joiner's
	// allocation does not name.
	ErrUnauthorized = errors.New("relay: unauthorized")
	// ErrClientMismatch: ERROR 3: the allocation is bound at another
	// address. A Conn re-binds by itself; this error reaches the caller
	// only when re-binding fails.
	ErrClientMismatch = errors.New("relay: allocation bound at another address")
	// ErrAllocationIDNotFound: ERROR 4, fatal: the relay node does not hold
	// the allocation (released, expired, never bound in time, or the node
	// restarted).
	ErrAllocationIDNotFound = errors.New("relay: allocation id not found")
	// ErrNotConnected: ERROR 5: a RELAY to a peer that is not connected,
	// or a CONNECT_REQUEST before the host bound (the Conn retries that).
	ErrNotConnected = errors.New("relay: not connected")
	// ErrSelfConnect: ERROR 6: a CONNECT_REQUEST to one's own allocation.
	ErrSelfConnect = errors.New("relay: self-connect not allowed")
	// ErrUnknownCode: an ERROR code this version does not know.
	ErrUnknownCode = errors.New("relay: unknown error code")
)

var codeErrors = [...]error{
	relaywire.CodeInvalidVersion: ErrInvalidProtocolVersion,
	relaywire.CodeTimedOut:       ErrTimedOut,
	relaywire.CodeUnauthorized:   ErrUnauthorized,
	relaywire.CodeClientMismatch: ErrClientMismatch,
	relaywire.CodeNotFound:       ErrAllocationIDNotFound,
	relaywire.CodeNotConnected:   ErrNotConnected,
	relaywire.CodeSelfConnect:    ErrSelfConnect,
}

// ServerError is an ERROR message from the relay node. It matches the
// sentinel of its code (ErrTimedOut, ErrAllocationIDNotFound, …) with
// errors.Is. A fatal one (codes 1 and 4) ends the Conn ([Conn.Err]);
// another arrives as an [Event] of type EventError.
type ServerError struct {
	Code relaywire.ErrorCode
	// Allocation is the allocation id the ERROR carries (the recipient's
	// own).
	Allocation relaywire.AllocationID
}

func (e *ServerError) Error() string {
	return fmt.Sprintf("relay: relay node error %d %s", e.Code, e.Code)
}

// Is matches the sentinel of e's code, ErrUnknownCode for a code this
// version does not know.
func (e *ServerError) Is(target error) bool {
	if int(e.Code) < len(codeErrors) {
		return target == codeErrors[e.Code]
	}
	return target == ErrUnknownCode
}

// Fatal reports whether the allocation is lost (codes 1 and 4).
func (e *ServerError) Fatal() bool { return e.Code.Fatal() }

// Sentinels of the relay REST API's error codes (docs/api.md, Relay API).
// A REST call fails with a *session.APIError whose ProblemCode is the
// code; it matches the sentinel of its code with errors.Is. (A 401 also
// matches session.ErrUnauthenticated, a 404 session.ErrNotFound.)
var (
	// ErrInvalidRequest: 15001, a field missing or out of range.
	ErrInvalidRequest error = problem(api.RelayCodeInvalidRequest, "invalid request")
	// ErrRegionNotFound: 15007, no relay node in the region.
	ErrRegionNotFound error = problem(api.RelayCodeRegionNotFound, "region not found")
	// ErrAllocationNotFound: 15008, no such allocation of the caller's.
	ErrAllocationNotFound error = problem(api.RelayCodeAllocationNotFound, "allocation not found")
	// ErrJoinCodeNotFound: 15009, no live join code.
	ErrJoinCodeNotFound error = problem(api.RelayCodeJoinCodeNotFound, "join code not found")
	// ErrNoSuitableRelay: 15010, no healthy relay node; retry.
	ErrNoSuitableRelay error = problem(api.RelayCodeNoSuitableRelay, "no suitable relay")
	// ErrInvalidArgument: 15400, a malformed body.
	ErrInvalidArgument error = problem(api.RelayCodeInvalidArgument, "invalid argument")
	// ErrUnauthenticated: 15401, missing or invalid credentials.
	ErrUnauthenticated error = problem(api.RelayCodeUnauthorized, "unauthenticated")
	// ErrForbidden: 15403.
	ErrForbidden error = problem(api.RelayCodeForbidden, "forbidden")
	// ErrEntityNotFound: 15404, no such endpoint (an older server).
	ErrEntityNotFound error = problem(api.RelayCodeEntityNotFound, "no such endpoint")
	// ErrMethodNotAllowed: 15405.
	ErrMethodNotAllowed error = problem(api.RelayCodeMethodNotAllowed, "method not allowed")
	// ErrRateLimited: 15429; retry later.
	ErrRateLimited error = problem(api.RelayCodeRateLimited, "rate limited")
	// ErrQuotaExceeded: 15430, too many live allocations for the key or
	// the address.
	ErrQuotaExceeded error = problem(api.RelayCodeQuotaExceeded, "quota exceeded")
	// ErrInternal: 15500.
	ErrInternal error = problem(api.RelayCodeInternal, "internal error")
	// ErrServiceUnavailable: 15503; retry later.
	ErrServiceUnavailable error = problem(api.RelayCodeServiceUnavailable, "service unavailable")
)

func problem(code int, text string) *session.Match {
	return &session.Match{ProblemCode: code, Text: "relay: " + text}
}

var problems = []error{
	ErrInvalidRequest, ErrRegionNotFound, ErrAllocationNotFound, ErrJoinCodeNotFound, ErrNoSuitableRelay,
	ErrInvalidArgument, ErrUnauthenticated, ErrForbidden, ErrEntityNotFound, ErrMethodNotAllowed,
	ErrRateLimited, ErrQuotaExceeded, ErrInternal, ErrServiceUnavailable,
	ErrJoinCodeTaken, ErrJoinCodeMigrating, ErrJoinCodeNotHeld, // migrate.go
}

// ProblemName returns what a relay API error code means ("join code not
// found" for 15009), or "error <code>" for a code this version does not
// know.
func ProblemName(code int) string {
	for _, p := range problems {
		if m := p.(*session.Match); m.ProblemCode == code {
			return m.Text[len("relay: "):]
		}
	}
	return fmt.Sprintf("error %d", code)
}
