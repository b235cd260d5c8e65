package node_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/node"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// TestDrainDuringUpgrade: a connection upgraded while the node starts
// draining, before the node registered it, still gets ERROR 10 at once,
// and Shutdown does not wait for its handshake timeout.
func TestDrainDuringUpgrade(t *testing.T) {
	e := newEnv(t, false, func(c *node.Config) { c.HandshakeTimeout = 30 * time.Second })
	upgraded, proceed := make(chan struct{}), make(chan struct{})
	e.srv.SetUpgradeHook(func() {
		close(upgraded)
		<-proceed
	})
	c := e.dial() // upgraded, then silent
	<-upgraded
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- e.srv.Shutdown(ctx) }()
	waitFor(t, "draining", e.srv.Engine().Draining)
	close(proceed)
	c.expectError(roomwire.CodeNodeDraining)
	if err := <-errc; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// TestHandshakeDeadlineFromRequestStart: the handshake timeout counts from
// the start of the HTTP request, not from the upgrade: a client that
// spends most of it on the request headers has only the rest for HELLO.
func TestHandshakeDeadlineFromRequestStart(t *testing.T) {
	const timeout = 600 * time.Millisecond
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
	time.Sleep(timeout * 3 / 4) // most of the handshake time on the headers
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
	time.Sleep(timeout / 2) // past the deadline counted from the request's start
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
