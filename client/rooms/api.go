package rooms

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// RoomInfo is the room object of the HTTP answers. C3 fills only RoomID and
// Status.
type RoomInfo struct {
	RoomID                 string `json:"room_id"`
	Status                 string `json:"status"`    // open, closing, closed
	SyncMode               string `json:"sync_mode"` // frame or relay
	TickRate               int    `json:"tick_rate"`
	MaxPlayers             int    `json:"max_players"`
	ReconnectWindowSeconds int    `json:"reconnect_window_seconds"`
}

// MemberInfo is this player's membership in the HTTP answers.
type MemberInfo struct {
	Seat     int    `json:"seat"`
	Username string `json:"username"`
	Status   string `json:"status"` // joined, online, offline, left
}

// ConnectInfo says where and how to connect (the connect object of C1).
// The UDP fields of the answer are not read: this SDK speaks WebSocket.
type ConnectInfo struct {
	NodeID          string    `json:"node_id"`
	WSURL           string    `json:"ws_url"`
	ConnectTicket   string    `json:"connect_ticket"` // secret, single use, 60 s
	ProtocolVersion int       `json:"protocol_version"`
	ExpiresAt       time.Time `json:"expires_at"`
}

// JoinResult is the answer of [Client.Join].
type JoinResult struct {
	Room    RoomInfo    `json:"room"`
	Member  MemberInfo  `json:"member"`
	Connect ConnectInfo `json:"connect"`
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
type CurrentResult struct {
	Room   *RoomInfo   `json:"room"`
	Member *MemberInfo `json:"member"`
}

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
	body := map[string]string{"client_session_id": csid, "transport": "ws"}
	if opts.Ticket != "" {
		body["ticket"] = opts.Ticket
	}
	var res JoinResult
	status, err := c.authed(ctx, http.MethodPost, "/client/v1/game/rooms/"+url.PathEscape(roomID)+"/join", body, &res)
	if err != nil {
		return nil, fmt.Errorf("rooms: join %s: %w", roomID, err)
	}
	res.Created = status == http.StatusCreated
	res.ClientSessionID = csid
	return &res, nil
}

// Leave gives up the seat (C2, POST /client/v1/game/rooms/{id}/leave). It
// may be called again; it returns nil when this login session never joined.
// A connected [Room] uses [Room.Leave], which says LEAVE on the socket first.
func (c *Client) Leave(ctx context.Context, roomID string) (*MemberInfo, error) {
	var res struct {
		Member *MemberInfo `json:"member"`
	}
	if _, err := c.authed(ctx, http.MethodPost, "/client/v1/game/rooms/"+url.PathEscape(roomID)+"/leave", nil, &res); err != nil {
		return nil, fmt.Errorf("rooms: leave %s: %w", roomID, err)
	}
	return res.Member, nil
}

// Current returns the room this login session has joined and not left (C3,
// GET /client/v1/game/current), to find a game again after an app restart;
// then Connect with that room ID, no ticket and a new ClientSessionID.
func (c *Client) Current(ctx context.Context) (*CurrentResult, error) {
	var res CurrentResult
	if _, err := c.authed(ctx, http.MethodGet, "/client/v1/game/current", nil, &res); err != nil {
		return nil, fmt.Errorf("rooms: current: %w", err)
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
	if len(s) < 8 || len(s) > 64 {
		return fmt.Errorf("rooms: client_session_id must be 8–64 characters: %w", ErrInvalidArgument)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7E {
			return fmt.Errorf("rooms: client_session_id must be visible ASCII: %w", ErrInvalidArgument)
		}
	}
	return nil
}
