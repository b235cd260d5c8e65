package backend

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/client/session"
)

// MaxResponseBytes bounds the body of an answer the client reads: a page
// of 200 rooms with their metadata fits.
const MaxResponseBytes = 4 << 20

// Client calls the server API of one Switchboard deployment. It keeps no
// state beyond its configuration and is safe for concurrent use.
type Client struct {
	// immutable after New
	caller *session.Caller
	key    string
}

// New returns a Client for the API at baseURL (such as
// "http://127.0.0.1:7700") authenticating with serverKey. A nil httpClient
// means one with session.DefaultHTTPTimeout.
func New(baseURL, serverKey string, httpClient *http.Client) (*Client, error) {
	if serverKey == "" {
		return nil, errors.New("empty server key")
	}
	caller, err := session.NewCaller(baseURL, &session.Config{HTTPClient: httpClient, MaxResponseBytes: MaxResponseBytes})
	if err != nil {
		return nil, err
	}
	return &Client{caller: caller, key: serverKey}, nil
}

// Room is the room object of the server API.
type Room = api.Room

// Member is a held seat, as GetRoom lists it.
type Member = api.Member

// Node is a live game node of the registry.
type Node = api.Node

// CreateRoomRequest is the body of CreateRoom. Nil and empty fields take
// the server's defaults (docs/api.md); new(0) asks for 0, such as a
// reconnect window of 0.
type CreateRoomRequest = api.CreateRoomRequest

// TicketRequest is the body of CreateTicket.
type TicketRequest = api.TicketRequest

// CreateRoom creates a room and returns it.
func (c *Client) CreateRoom(ctx context.Context, req CreateRoomRequest) (*Room, error) {
	var resp api.RoomResponse
	if err := c.do(ctx, http.MethodPost, "/server/v1/game/rooms", req, &resp); err != nil {
		return nil, err
	}
	return resp.Room, nil
}

// GetRoom returns a room, its members, and its node when the node is
// live (nil otherwise).
func (c *Client) GetRoom(ctx context.Context, roomID string) (*api.GetRoomResponse, error) {
	var resp api.GetRoomResponse
	if err := c.do(ctx, http.MethodGet, "/server/v1/game/rooms/"+url.PathEscape(roomID), nil, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// ListRooms returns one page of rooms, filtered by status when it is not
// empty, and the token of the next page ("" after the last).
func (c *Client) ListRooms(ctx context.Context, status, pageToken string) ([]Room, string, error) {
	q := url.Values{}
	if status != "" {
		q.Set("status", status)
	}
	if pageToken != "" {
		q.Set("page_token", pageToken)
	}
	path := "/server/v1/game/rooms"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var resp api.ListRoomsResponse
	if err := c.do(ctx, http.MethodGet, path, nil, &resp); err != nil {
		return nil, "", err
	}
	return resp.Rooms, resp.NextPageToken, nil
}

// CreateTicket issues a single-use join ticket ("gtk_…") for a player.
func (c *Client) CreateTicket(ctx context.Context, roomID string, req TicketRequest) (ticket string, expires time.Time, err error) {
	var resp api.TicketResponse
	if err := c.do(ctx, http.MethodPost, "/server/v1/game/rooms/"+url.PathEscape(roomID)+"/tickets", req, &resp); err != nil {
		return "", time.Time{}, err
	}
	return resp.Ticket, resp.ExpiresAt.Time, nil
}

// CreateAuthToken mints an auth token with which username logs in (C0).
// A ttl of 0 takes the server's default.
func (c *Client) CreateAuthToken(ctx context.Context, username string, ttl time.Duration) (string, error) {
	req := api.AuthTokenRequest{Username: username}
	if s := int64(ttl / time.Second); s > 0 {
		req.TTLSeconds = &s
	}
	var resp api.AuthTokenResponse
	if err := c.do(ctx, http.MethodPost, "/server/v1/auth-tokens", req, &resp); err != nil {
		return "", err
	}
	return resp.AuthToken, nil
}

// StartRoom starts a room whose start mode is manual.
func (c *Client) StartRoom(ctx context.Context, roomID string) (*Room, error) {
	var resp api.RoomResponse
	if err := c.do(ctx, http.MethodPost, "/server/v1/game/rooms/"+url.PathEscape(roomID)+"/start", struct{}{}, &resp); err != nil {
		return nil, err
	}
	return resp.Room, nil
}

// CloseRoom ends a room. An empty reason means closed_by_server; result is
// any JSON for the players (nil for none).
func (c *Client) CloseRoom(ctx context.Context, roomID, reason string, result json.RawMessage) error {
	req := api.CloseRequest{Reason: reason, Result: result}
	return c.do(ctx, http.MethodPost, "/server/v1/game/rooms/"+url.PathEscape(roomID)+"/close", req, nil)
}

// Kick removes the player in seat from a room.
func (c *Client) Kick(ctx context.Context, roomID string, seat int, reason string) error {
	req := api.KickRequest{Reason: reason}
	path := "/server/v1/game/rooms/" + url.PathEscape(roomID) + "/members/" + strconv.Itoa(seat) + "/kick"
	return c.do(ctx, http.MethodPost, path, req, nil)
}

func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	_, err := c.caller.Do(ctx, method, path, c.key, body, out)
	return err
}

// ListNodes returns the live game nodes.
func (c *Client) ListNodes(ctx context.Context) ([]Node, error) {
	var resp api.ListNodesResponse
	if err := c.do(ctx, http.MethodGet, "/server/v1/nodes", nil, &resp); err != nil {
		return nil, err
	}
	return resp.Nodes, nil
}

// DrainNode drains a game node: its players get ERROR 10 node_draining, its
// rooms close, and no new room is placed on it.
func (c *Client) DrainNode(ctx context.Context, nodeID string) (*Node, error) {
	var resp api.NodeResponse
	if err := c.do(ctx, http.MethodPost, "/server/v1/nodes/"+url.PathEscape(nodeID)+"/drain", struct{}{}, &resp); err != nil {
		return nil, err
	}
	return resp.Node, nil
}
