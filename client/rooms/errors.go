package rooms

import (
	"errors"
	"fmt"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/client/session"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// Sentinels for the HTTP API (C0–C3). An [*APIError] matches them with
// errors.Is by its code or details.reason; see [session.APIError.Is]. The
// sentinels of codes are package session's, so errors.Is(err,
// session.ErrNotFound) works too.
var (
	// ErrUnauthenticated: 401 unauthenticated. Returned by every HTTP call
	// once a refresh of the access token has failed too; log in again.
	ErrUnauthenticated = session.ErrUnauthenticated
	// ErrPermissionDenied: 403 permission_denied from Join. Without a reason
	// the join ticket is invalid, expired or used; ask the game backend for a
	// new one. With reason game_disabled or plan_feature_disabled the
	// deployment does not offer rooms.
	ErrPermissionDenied = session.ErrPermissionDenied
	// ErrNotFound: 404 not_found, the room does not exist.
	ErrNotFound = session.ErrNotFound
	// ErrRoomNotOpen: 409 room_not_open, the room has ended.
	ErrRoomNotOpen error = &session.Match{Reason: api.ReasonRoomNotOpen, Text: "room not open"}
	// ErrRoomFull: 409 room_full from Join, or node ERROR 4 room_full.
	ErrRoomFull error = &session.Match{Reason: api.ReasonRoomFull, Text: "room full"}
	// ErrSeatTaken: 409 seat_taken from Join, or node ERROR 5 seat_taken (a
	// newer connection took the seat, reason "replaced"). Never retried.
	ErrSeatTaken error = &session.Match{Reason: api.ReasonSeatTaken, Text: "seat taken"}
	// ErrJoinedOnOtherDevice: 409 joined_on_other_device from Join: another
	// login session of the same user holds the seat.
	ErrJoinedOnOtherDevice error = &session.Match{Reason: api.ReasonJoinedOnOtherDevice, Text: "joined on another device"}
	// ErrGameNodeUnavailable: 503 unavailable (game_node_unavailable); retry
	// later.
	ErrGameNodeUnavailable error = &session.Match{Code: api.CodeUnavailable, Reason: api.ReasonGameNodeUnavailable, Text: "game node unavailable"}
	// ErrInvalidArgument: 400 invalid_argument.
	ErrInvalidArgument = session.ErrInvalidArgument
	// ErrRateLimited: HTTP 429 rate_limited, or node ERROR 7 rate_limited.
	ErrRateLimited = session.ErrRateLimited
)

// Sentinels for the node's ERROR codes. A [*NodeError] matches the one of
// its code; several HTTP sentinels above match node codes too (room_full,
// seat_taken, rate_limited).
var (
	ErrTicketInvalid       = errors.New("connect ticket invalid")  // ERROR 1
	ErrTicketExpired       = errors.New("connect ticket expired")  // ERROR 2
	ErrRoomNotFound        = errors.New("room not found on node")  // ERROR 3
	ErrProtocolUnsupported = errors.New("protocol unsupported")    // ERROR 6
	ErrKicked              = errors.New("kicked")                  // ERROR 8
	ErrRoomClosed          = errors.New("room closed")             // ERROR 9
	ErrNodeDraining        = errors.New("node draining")           // ERROR 10
	ErrResumeRejected      = errors.New("resume rejected")         // ERROR 11
	errUnknownNodeCode     = errors.New("unknown node error code") // any other code
)

// Errors of the connection itself.
var (
	// ErrClosed is returned by the send methods of a [Room] after Close or
	// Leave, or after the room ended; [Room.Err] says why it ended.
	ErrClosed = errors.New("room closed by the client")
	// ErrNotConnected is returned by the send methods while the room is
	// reconnecting; the message was not sent.
	ErrNotConnected = errors.New("not connected")
	// ErrSendQueueFull is returned by the send methods when more than
	// Config.MaxSendQueueBytes wait for the socket; the message was not sent.
	ErrSendQueueFull = errors.New("send queue full")
	// ErrReconnectWindowExpired ends a room that could not reconnect within
	// the room's reconnect window; the seat is gone. It wraps the last
	// reconnect error.
	ErrReconnectWindowExpired = errors.New("reconnect window expired")
	// ErrSilence is the cause of a disconnect after Config.SilenceTimeout
	// without any message from the node.
	ErrSilence = errors.New("node silent")
	// ErrUnsupportedVersion is returned by Connect when Join answers a
	// protocol_version this SDK does not speak: the app must be upgraded.
	ErrUnsupportedVersion = errors.New("unsupported protocol version")
	// ErrHandshake is returned when the node's first message is neither
	// WELCOME nor ERROR, or is not valid.
	ErrHandshake = errors.New("bad handshake answer")
	// ErrUDPUnavailable is returned with Config.Transport TransportUDP when
	// the room's node does not serve UDP, or gave no answer over it.
	ErrUDPUnavailable = errors.New("udp channel unavailable")
)

// APIError is an error answer of the HTTP API (package session's).
type APIError = session.APIError

// NodeError is an ERROR message of the game node. It wraps the decoded
// [roomwire.Error] (errors.As reaches it) and matches the sentinel of its
// code with errors.Is: ErrTicketInvalid, ErrTicketExpired, ErrRoomNotFound,
// ErrRoomFull, ErrSeatTaken, ErrProtocolUnsupported, ErrRateLimited,
// ErrKicked, ErrRoomClosed, ErrNodeDraining, ErrResumeRejected.
//
// For ERROR 9 room_closed, Reason is the end reason (closed_by_server,
// expired, …) and Result the game backend's result JSON, if any.
type NodeError struct {
	Code    uint8  // roomwire.Code…
	Message string // for people
	Reason  string // e.g. "replaced" (5), "closed_by_server" (9)
	Result  []byte // the game backend's result JSON (9); owned, may be nil
}

func (e *NodeError) Error() string {
	s := fmt.Sprintf("node error %d %s", e.Code, roomwire.CodeName(e.Code))
	if e.Reason != "" {
		s += " (" + e.Reason + ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Unwrap returns the wire message, so errors.As(err, new(*roomwire.Error))
// works too.
func (e *NodeError) Unwrap() error {
	return &roomwire.Error{Code: e.Code, Message: e.Message, Reason: e.Reason, Result: e.Result}
}

// Is reports whether target is the sentinel of e's code.
func (e *NodeError) Is(target error) bool {
	return target == codeSentinel(e.Code)
}

func codeSentinel(code uint8) error {
	switch code {
	case roomwire.CodeTicketInvalid:
		return ErrTicketInvalid
	case roomwire.CodeTicketExpired:
		return ErrTicketExpired
	case roomwire.CodeRoomNotFound:
		return ErrRoomNotFound
	case roomwire.CodeRoomFull:
		return ErrRoomFull
	case roomwire.CodeSeatTaken:
		return ErrSeatTaken
	case roomwire.CodeProtocolUnsupported:
		return ErrProtocolUnsupported
	case roomwire.CodeRateLimited:
		return ErrRateLimited
	case roomwire.CodeKicked:
		return ErrKicked
	case roomwire.CodeRoomClosed:
		return ErrRoomClosed
	case roomwire.CodeNodeDraining:
		return ErrNodeDraining
	case roomwire.CodeResumeRejected:
		return ErrResumeRejected
	}
	return errUnknownNodeCode
}

// newNodeError copies m, whose byte fields may alias a read buffer.
func newNodeError(m *roomwire.Error) *NodeError {
	e := &NodeError{Code: m.Code, Message: m.Message, Reason: m.Reason}
	if len(m.Result) > 0 {
		e.Result = append([]byte(nil), m.Result...)
	}
	return e
}

// Node error classes, per the seed's error table.
//
//   - rejoin: resume_rejected (11) and the connect-ticket errors (1, 2): call
//     C1 again with the same client_session_id and handshake with HELLO.
//   - reconnect: rate_limited (7) is handled as a disconnect (the resume will
//     usually fail and end the room).
//   - everything else ends the room: never reconnect on 3, 4, 5, 6, 8, 9, 10.
func nodeCode(err error) (uint8, bool) {
	var ne *NodeError
	if errors.As(err, &ne) {
		return ne.Code, true
	}
	return 0, false
}

// needsRejoin reports whether err asks for C1 + HELLO instead of RESUME.
func needsRejoin(err error) bool {
	code, ok := nodeCode(err)
	return ok && (code == roomwire.CodeResumeRejected || code == roomwire.CodeTicketInvalid || code == roomwire.CodeTicketExpired)
}

// isTerminal reports whether err ends the room without any reconnection.
func isTerminal(err error) bool {
	code, ok := nodeCode(err)
	if !ok {
		return false
	}
	switch code {
	case roomwire.CodeTicketInvalid, roomwire.CodeTicketExpired, roomwire.CodeResumeRejected, roomwire.CodeRateLimited:
		return false
	}
	return true
}
