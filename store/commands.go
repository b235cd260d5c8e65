package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/backbone"
)

// Command verbs, the last token of [CommandSubject].
const (
	VerbAdmit = "admit"
	VerbStart = "start"
	VerbClose = "close"
	VerbKick  = "kick"
	VerbLeave = "leave"
	VerbDrain = "drain"
)

// CommandError.Code values: the codes of the HTTP error envelope, defined
// in package api.
const (
	CodeInvalidArgument  = api.CodeInvalidArgument
	CodeUnauthenticated  = api.CodeUnauthenticated
	CodePermissionDenied = api.CodePermissionDenied
	CodeNotFound         = api.CodeNotFound
	CodeConflict         = api.CodeConflict
	CodeRateLimited      = api.CodeRateLimited
	CodeInternal         = api.CodeInternal
	CodeUnavailable      = api.CodeUnavailable
)

// DefaultCommandTimeout bounds SendCommand when its ctx has no deadline.
const DefaultCommandTimeout = 2 * time.Second

// CommandSubject returns the NATS subject of a command to a node:
// "sb.node.<node_id>.<verb>".
func CommandSubject(nodeID, verb string) string {
	return "sb.node." + nodeID + "." + verb
}

// AdmitRequest asks the node to run the room (opening it with Settings
// if it does not run it yet), mark the seat joined and start its
// connect_timeout. It carries the room's settings, not its record, so
// that the engine does not depend on how records are stored.
type AdmitRequest struct {
	Settings  RoomSettings `json:"settings"`
	Seat      int          `json:"seat"`
	Username  string       `json:"username"`
	SessionID string       `json:"session_id"`
}

// StartRequest asks the node to start a manual room (conflict if
// started).
type StartRequest struct {
	RoomID string `json:"room_id"`
}

// CloseRequest asks the node to close a room: ROOM_STATE 3, ERROR 9,
// connections closed 1 s later, record closed.
type CloseRequest struct {
	RoomID string          `json:"room_id"`
	Reason string          `json:"reason"`
	Result json.RawMessage `json:"result,omitempty"`
}

// KickRequest asks the node to kick a seat: ERROR 8, close within 1 s,
// seat released, MEMBER left "kicked".
type KickRequest struct {
	RoomID string `json:"room_id"`
	Seat   int    `json:"seat"`
	Reason string `json:"reason,omitempty"`
}

// LeaveRequest (C2) asks the node to drop the seat's connection, release
// the seat and send MEMBER left "left".
type LeaveRequest struct {
	RoomID    string `json:"room_id"`
	Seat      int    `json:"seat"`
	SessionID string `json:"session_id"`
}

// DrainRequest asks the node to send ERROR 10 to everyone and stop
// admitting.
type DrainRequest struct{}

// CommandReply is a node's answer: {"ok": true} (with the room when the
// command changed it), or {"ok": false, "error": {...}}.
type CommandReply struct {
	OK    bool          `json:"ok"`
	Room  *Room         `json:"room,omitempty"`
	Error *CommandError `json:"error,omitempty"`
}

// CommandError is the error of a [CommandReply]. Code is one of the Code
// constants, Reason the details.reason of the HTTP error JSON (may be
// empty). Message never holds a secret.
type CommandError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Reason  string `json:"reason,omitempty"`
}

func (e *CommandError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("store: node: %s (%s): %s", e.Code, e.Reason, e.Message)
	}
	return fmt.Sprintf("store: node: %s: %s", e.Code, e.Message)
}

// SendCommand sends a command to node nodeID and waits for its reply,
// DefaultCommandTimeout at most when ctx has no deadline.
//
// When the node answered with an error, SendCommand returns the reply and
// its *CommandError (use errors.As). When no node serves nodeID or it did
// not answer in time, the error wraps ErrNodeUnavailable (and the
// backbone error). An invalid node id is ErrInvalidID.
func SendCommand(ctx context.Context, conn *backbone.Conn, nodeID, verb string, req any) (*CommandReply, error) {
	if !validID(nodeID) {
		return nil, fmt.Errorf("store: command %s to node %q: %w", verb, nodeID, ErrInvalidID)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultCommandTimeout)
		defer cancel()
	}
	var reply CommandReply
	if err := conn.Request(ctx, CommandSubject(nodeID, verb), req, &reply); err != nil {
		if errors.Is(err, backbone.ErrNoResponders) || errors.Is(err, backbone.ErrTimeout) {
			return nil, fmt.Errorf("store: command %s to node %s: %w: %w", verb, nodeID, ErrNodeUnavailable, err)
		}
		return nil, fmt.Errorf("store: command %s to node %s: %w", verb, nodeID, err)
	}
	if reply.Error != nil {
		reply.OK = false
		return &reply, reply.Error
	}
	return &reply, nil
}

// CommandHandler executes the commands sent to one node; the node
// implements it. Each method runs in a goroutine of its own, with a ctx
// that ends after the serving connection's backbone.Config.RequestTimeout
// (2 s by default, as long as control waits). A method returns the reply
// to send (nil means {"ok": true}) or an error: a *CommandError is sent
// as is, any other error is logged and sent as code internal.
type CommandHandler interface {
	Admit(ctx context.Context, req *AdmitRequest) (*CommandReply, error)
	Start(ctx context.Context, req *StartRequest) (*CommandReply, error)
	Close(ctx context.Context, req *CloseRequest) (*CommandReply, error)
	Kick(ctx context.Context, req *KickRequest) (*CommandReply, error)
	Leave(ctx context.Context, req *LeaveRequest) (*CommandReply, error)
	Drain(ctx context.Context, req *DrainRequest) (*CommandReply, error)
}

// ServeCommands subscribes h to the command subjects of node nodeID and
// serves them until stop is called. stop unsubscribes and waits for the
// commands still running; it is idempotent.
func ServeCommands(conn *backbone.Conn, nodeID string, h CommandHandler) (stop func() error, err error) {
	if !validID(nodeID) {
		return nil, fmt.Errorf("store: serve commands of node %q: %w", nodeID, ErrInvalidID)
	}
	handlers := []verbHandler{
		{VerbAdmit, serveVerb(h.Admit)},
		{VerbStart, serveVerb(h.Start)},
		{VerbClose, serveVerb(h.Close)},
		{VerbKick, serveVerb(h.Kick)},
		{VerbLeave, serveVerb(h.Leave)},
		{VerbDrain, serveVerb(h.Drain)},
	}
	return handleVerbs(conn, "node", nodeID, CommandSubject, handlers)
}

// verbHandler is the handler of one command verb.
type verbHandler struct {
	verb string
	fn   backbone.HandlerFunc
}

// handleVerbs subscribes each handler to subject(id, verb) in the queue
// group "sb.<what>.<id>" and returns a stop function that unsubscribes them
// all. On error, what was subscribed is stopped again.
func handleVerbs(conn *backbone.Conn, what, id string, subject func(id, verb string) string, handlers []verbHandler) (stop func() error, err error) {
	var stops []func() error
	stopAll := func() error {
		var errs []error
		for _, s := range stops {
			errs = append(errs, s())
		}
		return errors.Join(errs...)
	}
	for _, v := range handlers {
		s, err := conn.Handle(subject(id, v.verb), "sb."+what+"."+id, v.fn)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("store: serve commands of %s %s: %w", what, id, err), stopAll())
		}
		stops = append(stops, s)
	}
	return stopAll, nil
}

// serveVerb adapts one CommandHandler method to a backbone handler.
func serveVerb[T any](fn func(context.Context, *T) (*CommandReply, error)) backbone.HandlerFunc {
	return func(ctx context.Context, data []byte) (any, error) {
		req := new(T)
		if err := json.Unmarshal(data, req); err != nil {
			return &CommandReply{Error: &CommandError{Code: CodeInvalidArgument, Message: "malformed command"}}, nil
		}
		reply, err := fn(ctx, req)
		if err != nil {
			var ce *CommandError
			if errors.As(err, &ce) {
				return &CommandReply{Error: ce}, nil
			}
			return nil, err // logged by backbone, sent as internal
		}
		if reply == nil {
			return &CommandReply{OK: true}, nil
		}
		out := *reply
		out.OK = out.Error == nil
		return &out, nil
	}
}
