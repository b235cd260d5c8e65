package system

import (
	"context"
	"fmt"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/backbone"
	"github.com/switchboardgg/switchboard/p2p"
	"github.com/switchboardgg/switchboard/protocol/p2pwire"
	"github.com/switchboardgg/switchboard/store"
)

// hubCommands executes the P2P API's commands (store.HubVerbPeers,
// store.HubVerbKick) on a hub.
type hubCommands struct{ h *p2p.Hub }

// serveHubCommands subscribes the hub to its command subjects; the
// returned stop unsubscribes and waits.
func serveHubCommands(bb *backbone.Conn, id string, h *p2p.Hub) (func() error, error) {
	stop, err := store.ServeHubCommands(bb, id, hubCommands{h})
	if err != nil {
		return nil, fmt.Errorf("system: hub %s: %w", id, err)
	}
	return stop, nil
}

// Peers lists the peers of a network.
func (c hubCommands) Peers(_ context.Context, req *store.HubPeersRequest) (*store.HubCommandReply, error) {
	ids := c.h.Peers(req.Network)
	out := &store.HubCommandReply{Peers: make([]store.HubPeer, 0, len(ids))}
	for _, id := range ids {
		hp := store.HubPeer{PeerID: id, Username: p2pwire.PeerID(id).Username()}
		if u, ok := c.h.PeerUDP(req.Network, id); ok {
			hp.UDP = &api.P2PPeerUDP{DatagramsIn: u.DatagramsIn, DatagramsOut: u.DatagramsOut, BytesIn: u.BytesIn, BytesOut: u.BytesOut}
			if u.Endpoint.IsValid() {
				hp.UDP.Endpoint, hp.UDP.EndpointValidated = u.Endpoint.String(), u.Validated
			}
		}
		out.Peers = append(out.Peers, hp)
	}
	return out, nil
}

// Kick removes one peer, or every peer of a user.
func (c hubCommands) Kick(_ context.Context, req *store.HubKickRequest) (*store.HubCommandReply, error) {
	out := &store.HubCommandReply{}
	if req.PeerID != "" {
		if c.h.Kick(req.Network, req.PeerID) {
			out.Kicked = 1
		}
		return out, nil
	}
	if req.Username == "" {
		return nil, &store.CommandError{Code: store.CodeInvalidArgument, Message: "kick names no peer and no user"}
	}
	for _, id := range c.h.Peers(req.Network) {
		if p2pwire.PeerID(id).Username() == req.Username && c.h.Kick(req.Network, id) {
			out.Kicked++
		}
	}
	return out, nil
}
