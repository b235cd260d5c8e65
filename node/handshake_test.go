package node_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/switchboardgg/switchboard/node"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
	"github.com/switchboardgg/switchboard/tokens"
)

func TestHandshakeErrors(t *testing.T) {
	e := newEnv(t, false, nil)
	rec := record("hs", nil)
	e.admit(rec, 0)
	e.admit(rec, 1)
	otherKey := make([]byte, 32)
	_, _ = rand.Read(otherKey)
	other, _ := tokens.NewSigner(otherKey)
	forged, _ := other.SignConnectTicket(tokens.ConnectTicket{RoomID: "hs", Seat: 0, SessionID: session(0), ExpiresMS: time.Now().Add(time.Minute).UnixMilli(), ID: "x"})
	used := e.ticket("hs", 0, nil)
	c := e.dial()
	c.hello(used)
	expect[*roomwire.Welcome](c)

	tests := []struct {
		name string
		send func(c *client)
		code uint8
	}{
		{"bad signature", func(c *client) { c.hello(forged) }, roomwire.CodeTicketInvalid},
		{"not a ticket", func(c *client) { c.hello("AQ3k") }, roomwire.CodeTicketInvalid},
		{"expired", func(c *client) {
			c.hello(e.ticket("hs", 1, func(t *tokens.ConnectTicket) { t.ExpiresMS = time.Now().Add(-time.Second).UnixMilli() }))
		}, roomwire.CodeTicketExpired},
		{"already used", func(c *client) { c.hello(used) }, roomwire.CodeTicketExpired},
		{"room not on node", func(c *client) { c.hello(e.ticket("elsewhere", 0, nil)) }, roomwire.CodeRoomNotFound},
		{"seat not held", func(c *client) { c.hello(e.ticket("hs", 2, nil)) }, roomwire.CodeRoomFull},
		{"seat of another session", func(c *client) {
			c.hello(e.ticket("hs", 1, func(t *tokens.ConnectTicket) { t.SessionID = "intruder" }))
		}, roomwire.CodeSeatTaken},
		{"malformed", func(c *client) { _ = c.sendRaw([]byte{1, 0, 9, 'x'}) }, roomwire.CodeProtocolUnsupported},
		{"handshake kind 3", func(c *client) { _ = c.sendRaw([]byte{3, 0, 0, 1}) }, roomwire.CodeProtocolUnsupported},
		{"bad resume token", func(c *client) { c.resume([]byte("rt1.nope.nope"), 0) }, roomwire.CodeResumeRejected},
		{"resume token of another key", func(c *client) {
			tok, _ := other.SignResumeToken(tokens.ResumeToken{RoomID: "hs", Seat: 0, SessionID: session(0), Gen: 1})
			c.resume([]byte(tok), 0)
		}, roomwire.CodeResumeRejected},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := e.dial()
			tc.send(c)
			c.expectError(tc.code)
		})
	}
	if got := e.counter("switchboard_node_errors_total", "code", "ticket_expired"); got != 2 {
		t.Errorf("errors_total{ticket_expired} = %v, want 2", got)
	}
	waitFor(t, "handshake_failed disconnects counted", func() bool {
		return e.counter("switchboard_node_disconnects_total", "reason", "handshake_failed") == float64(len(tests))
	})
}

func TestUpgradeRequirements(t *testing.T) {
	e := newEnv(t, false, func(c *node.Config) { c.MaxConnections = 1 })
	base := strings.Replace(e.url, "ws://", "http://", 1)
	req, _ := http.NewRequest(http.MethodGet, base, nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("upgrade without the subprotocol: %d, want 400", resp.StatusCode)
	}

	c := e.dial() // the one connection allowed
	d := ws.Dialer{Protocols: []string{node.Subprotocol}, Timeout: 5 * time.Second}
	if _, _, _, err := d.Dial(context.Background(), e.url); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("connection over MaxConnections: %v, want HTTP 503", err)
	}
	c.nc.Close()
	http.DefaultClient.CloseIdleConnections()
}

func TestHandshakeTimeout(t *testing.T) {
	e := newEnv(t, false, func(c *node.Config) { c.HandshakeTimeout = 200 * time.Millisecond })
	c := e.dial()
	c.expectClosed()
	waitFor(t, "disconnect counted", func() bool {
		return e.counter("switchboard_node_disconnects_total", "reason", "handshake_timeout") == 1
	})
}

// TestHandshakeDeadlineFromRequestStart: the handshake timeout counts from
// the start of the HTTP request, not from the upgrade: a client that
// spends most of it on the request headers has only the rest for HELLO.
func TestHandshakeDeadlineFromRequestStart(t *testing.T) {
	const timeout = 800 * time.Millisecond
	e := newEnv(t, false, func(c *node.Config) { c.HandshakeTimeout = timeout })
	rec := record("slowhs", nil)
	e.admit(rec, 0)
	nc, err := net.Dial("tcp", strings.TrimPrefix(strings.TrimSuffix(e.url, node.Path), "ws://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_, _ = io.WriteString(nc, "GET "+node.Path+" HTTP/1.1\r\nHost: node\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: "+node.Subprotocol+"\r\n")
	time.Sleep(timeout / 2) // half the handshake time on the headers
	_, _ = io.WriteString(nc, "\r\n")
	br := bufio.NewReader(nc)
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v, %v", resp, err)
	}
	c := &client{t: t, nc: nc}
	c.rw = struct {
		io.Reader
		io.Writer
	}{br, lockedWriter{c}}
	time.Sleep(timeout * 9 / 10) // past the deadline counted from the request's start, not from the upgrade
	hello, err := roomwire.AppendHandshake(nil, roomwire.KindHello, []byte(e.ticket("slowhs", 0, nil)), &roomwire.Hello{ClientNonce: 1})
	if err != nil {
		t.Fatal(err)
	}
	_ = c.sendRaw(hello) // the node may have closed already
	for {
		m, err := c.read()
		if err != nil {
			break
		}
		if _, ok := m.(*roomwire.Welcome); ok {
			t.Fatal("WELCOME after the handshake timeout")
		}
	}
	waitFor(t, "handshake_timeout counted", func() bool {
		return e.counter("switchboard_node_disconnects_total", "reason", "handshake_timeout") == 1
	})
}
