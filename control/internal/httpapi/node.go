package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/backbone"
	"github.com/switchboardgg/switchboard/store"
)

// SendCommand sends a command to a node, waiting at most timeout.
func SendCommand(ctx context.Context, bb *backbone.Conn, timeout time.Duration, nodeID, verb string, req any) (*store.CommandReply, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return store.SendCommand(ctx, bb, nodeID, verb, req)
}

// NodeError maps the error of a command to its HTTP answer: the node's own
// error as it sent it, or 503 game_node_unavailable when the node did not
// answer (or could not be reached at all).
func NodeError(log *slog.Logger, verb string, err error) *Error {
	var ce *store.CommandError
	if errors.As(err, &ce) {
		st, ok := api.StatusOf(ce.Code)
		if !ok {
			st, ce.Code = http.StatusInternalServerError, api.CodeInternal
		}
		msg := ce.Message
		if msg == "" || st == http.StatusInternalServerError {
			msg = "the game node failed"
		}
		return &Error{Status: st, Code: ce.Code, Message: msg, Reason: ce.Reason}
	}
	if !errors.Is(err, store.ErrNodeUnavailable) {
		log.Warn("node command failed", "verb", verb, "err", err)
	}
	return NodeUnavailable()
}

// NodeGone reports whether a command's error means the node does not
// have the room (it is down, or answered not_found), so that control
// must update the record itself.
func NodeGone(err error) bool {
	var ce *store.CommandError
	if errors.As(err, &ce) {
		return ce.Code == api.CodeNotFound
	}
	return err != nil
}

// ToNodeJSON converts a registry record to the node object of the API.
func ToNodeJSON(n *store.Node) *api.Node {
	return &api.Node{NodeID: n.NodeID, WSURL: n.WSURL, Region: n.Region, Rooms: n.Rooms,
		Connections: n.Connections, Draining: n.Draining, Version: n.Version}
}
