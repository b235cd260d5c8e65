package rooms

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"

	"github.com/switchboardgg/switchboard/api"
)

// RoomInfo is the room object of C1's answer.
type RoomInfo = api.JoinRoom

// MemberInfo is this player's membership in the HTTP answers; Status is
// joined, online, offline or left.
type MemberInfo = api.Member

// ConnectInfo says where and how to connect (the connect object of C1):
// WebSocket, and the UDP channel when the node serves it.
type ConnectInfo = api.Connect

// JoinResult is the answer of [Client.Join].
type JoinResult struct {
	api.JoinResponse
	// Created is true for 201 (a new seat) and false for 200 (this login
	// session already held it).
	Created bool `json:"-"`
	// ClientSessionID is the client_session_id the call used.
	ClientSessionID string `json:"-"`
}

// JoinOptions are the request fields of C1.
type JoinOptions struct {
	// Ticket is the join ticket the game backend issued for this player;
	// empty for an open room, or to re-join a room this login session holds
	// (after C3).
	Ticket string
	// ClientSessionID identifies this join attempt: 8–64 visible ASCII
	// characters, the same for every retry and every reconnection of the
	// attempt, new after an app restart. Empty means a random one.
	ClientSessionID string
	// FromStart is for [Client.Connect] only (C1 ignores it): after the
	// WELCOME of a game already running, request every frame from the first
	// (FRAME_REQ(1, WELCOME.frame)) instead of starting after WELCOME.frame.
	// The node answers with a SNAPSHOT first when the early frames are no
	// longer kept. For a player who joins late, or comes back after an app
	// restart without game state.
	FromStart bool
}

// CurrentResult is the answer of [Client.Current]: the room this login
// session has not left. Both are nil when there is none.
type CurrentResult = api.CurrentResponse

// Join takes a seat in the room (C1, POST /client/v1/game/rooms/{id}/join)
// and returns where to connect. Errors are *APIError values matching
// ErrPermissionDenied, ErrNotFound, ErrRoomNotOpen, ErrRoomFull,
// ErrSeatTaken, ErrJoinedOnOtherDevice, ErrGameNodeUnavailable or
// ErrUnauthenticated. Most callers use [Client.Connect], which joins too.
func (c *Client) Join(ctx context.Context, roomID string, opts JoinOptions) (*JoinResult, error) {
	csid := opts.ClientSessionID
	if csid == "" {
		csid = NewClientSessionID()
	} else if err := checkClientSessionID(csid); err != nil {
		return nil, err
	}
	transport := api.TransportUDP
	if c.cfg.Transport == TransportWS {
		transport = api.TransportWS
	}
	body := api.JoinRequest{ClientSessionID: csid, Ticket: opts.Ticket, Transport: transport}
	var res JoinResult
	status, err := c.sc.Do(ctx, http.MethodPost, "/client/v1/game/rooms/"+url.PathEscape(roomID)+"/join", body, &res)
	if err != nil {
		return nil, fmt.Errorf("join %s: %w", roomID, err)
	}
	res.Created = status == http.StatusCreated
	res.ClientSessionID = csid
	return &res, nil
}

// Leave gives up the seat (C2, POST /client/v1/game/rooms/{id}/leave). It
// may be called again; it returns nil when this login session never joined.
// A connected [Room] uses [Room.Leave], which says LEAVE on the socket first.
func (c *Client) Leave(ctx context.Context, roomID string) (*MemberInfo, error) {
	var res api.LeaveResponse
	if _, err := c.sc.Do(ctx, http.MethodPost, "/client/v1/game/rooms/"+url.PathEscape(roomID)+"/leave", nil, &res); err != nil {
		return nil, fmt.Errorf("leave %s: %w", roomID, err)
	}
	return res.Member, nil
}

// Current returns the room this login session has joined and not left (C3,
// GET /client/v1/game/current), to find a game again after an app restart;
// then Connect with that room ID, no ticket and a new ClientSessionID.
func (c *Client) Current(ctx context.Context) (*CurrentResult, error) {
	var res CurrentResult
	if _, err := c.sc.Do(ctx, http.MethodGet, "/client/v1/game/current", nil, &res); err != nil {
		return nil, fmt.Errorf("current: %w", err)
	}
	return &res, nil
}

// NewClientSessionID returns a random client_session_id ("go-" and 24 hex
// digits).
func NewClientSessionID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "go-" + hex.EncodeToString(b[:])
}

func checkClientSessionID(s string) error {
	if len(s) < api.MinClientSessionIDLen || len(s) > api.MaxClientSessionIDLen {
		return fmt.Errorf("client_session_id must be %d–%d characters: %w", api.MinClientSessionIDLen, api.MaxClientSessionIDLen, ErrInvalidArgument)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7E {
			return fmt.Errorf("client_session_id must be visible ASCII: %w", ErrInvalidArgument)
		}
	}
	return nil
}
