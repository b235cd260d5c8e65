package p2p

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/client/session"
	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// ErrClosed is returned by the calls of a [Peer] after it closed: by
// [Peer.Close], or because the connection ended ([Peer.Err] says why).
var ErrClosed = errors.New("p2p: connection closed")

// ErrDisconnected is returned by sends while the connection to the hub is
// lost and the client resumes the session (between EventDisconnected and
// EventResumed); the message was not sent. Retry after EventResumed.
var ErrDisconnected = errors.New("p2p: disconnected from the hub, resuming")

// Sentinels of the join call's reasons; a join error is a
// *session.APIError that matches them with errors.Is.
var (
	// ErrNetworkFull: the network has its maximum number of peers (also
	// the hub's ERROR network_full, as a *HubError).
	ErrNetworkFull error = &session.Match{Reason: api.ReasonNetworkFull, Text: "network full"}
	// ErrJoinCodeRequired: the network needs its join code, and the one
	// given (if any) is not it.
	ErrJoinCodeRequired error = &session.Match{Reason: api.ReasonJoinCodeRequired, Text: "join code required"}
	// ErrNotAllowed: the user is not on the network's allow list.
	ErrNotAllowed error = &session.Match{Reason: api.ReasonNotAllowed, Text: "not on the allow list"}
	// ErrBanned: the user is banned from the network.
	ErrBanned error = &session.Match{Reason: api.ReasonBanned, Text: "banned"}
	// ErrHubUnavailable: no hub runs the network now; retry later.
	ErrHubUnavailable error = &session.Match{Reason: api.ReasonHubUnavailable, Status: http.StatusServiceUnavailable, Text: "hub unavailable"}
)

// Sentinels of the hub's ERROR codes; a [*HubError] matches the one of
// its code with errors.Is.
var (
	ErrUnknownPeer  = errors.New("p2p: unknown peer")       // the destination is not in the network
	ErrUnauthorized = errors.New("p2p: unauthorized")       // the ticket was refused (expired, forged, another hub's)
	ErrForbidden    = errors.New("p2p: forbidden")          // banned, or a frame a peer may not send
	ErrTooLarge     = errors.New("p2p: message too large")  // over the hub's max_frame_size
	ErrRateLimited  = errors.New("p2p: rate limited")       // over the per-peer rate; the message was dropped
	ErrQuota        = errors.New("p2p: quota exceeded")     // over a bandwidth quota; dropped
	ErrKicked       = errors.New("p2p: kicked")             // removed through the server API
	ErrSlowConsumer = errors.New("p2p: slow consumer")      // this peer read too slowly; the hub dropped it
	ErrShuttingDown = errors.New("p2p: hub shutting down")  // join again to reach another hub
	ErrHubInternal  = errors.New("p2p: hub internal error") // the hub failed; the message may not have been delivered
)

var codeErrors = map[p2pwire.ErrorCode]error{
	p2pwire.CodeUnknownPeer:   ErrUnknownPeer,
	p2pwire.CodeUnauthorized:  ErrUnauthorized,
	p2pwire.CodeForbidden:     ErrForbidden,
	p2pwire.CodeTooLarge:      ErrTooLarge,
	p2pwire.CodeRateLimited:   ErrRateLimited,
	p2pwire.CodeQuotaExceeded: ErrQuota,
	p2pwire.CodeNetworkFull:   ErrNetworkFull,
	p2pwire.CodeKicked:        ErrKicked,
	p2pwire.CodeSlowConsumer:  ErrSlowConsumer,
	p2pwire.CodeShuttingDown:  ErrShuttingDown,
	p2pwire.CodeInternal:      ErrHubInternal,
}

// HubError is an ERROR the hub sent: about a request (it fails that
// request), about a message (it arrives as an [Event] of type
// EventError), or closing the connection ([Peer.Err]).
type HubError struct {
	Code    p2pwire.ErrorCode
	Peer    string // the destination the error is about; may be empty
	Closing bool   // the hub closed the connection after it
	Reason  string // for people
}

func (e *HubError) Error() string {
	s := "p2p: hub error " + e.Code.String()
	if e.Peer != "" {
		s += " (peer " + e.Peer + ")"
	}
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

// Is matches the sentinel of e's code: ErrUnknownPeer, ErrKicked, …; a
// code this version does not know matches ErrHubInternal.
func (e *HubError) Is(target error) bool {
	s, ok := codeErrors[e.Code]
	if !ok {
		s = ErrHubInternal
	}
	return target == s
}

func hubError(m *p2pwire.Error) *HubError {
	return &HubError{Code: m.Code, Peer: string(m.Peer), Closing: m.Closing, Reason: m.Reason}
}

// ProtocolError is a frame from the hub this client could not decode; the
// connection is closed.
type ProtocolError struct{ Err error }

func (e *ProtocolError) Error() string { return fmt.Sprintf("p2p: protocol error: %v", e.Err) }
func (e *ProtocolError) Unwrap() error { return e.Err }

// Errors of the reliable channels.
var (
	// ErrBadChannel is returned by [Peer.SendReliable] for a channel
	// other than Ch1, Ch2 and Realtime.
	ErrBadChannel = errors.New("p2p: no such reliable channel")
	// ErrTooManyConversations is returned by [Peer.SendReliable] when
	// ReliableConfig.MaxConversations are open already.
	ErrTooManyConversations = errors.New("p2p: too many reliable conversations")
)
