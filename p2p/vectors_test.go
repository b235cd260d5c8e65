package p2p

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/protocol/p2pwire"
	"github.com/switchboardgg/switchboard/tokens"
)

// wireVectors is the part of testdata/p2pwire/messages.json a hub acts on.
type wireVectors struct {
	HubRefuses     []struct{ Name, Hex string } `json:"hub_refuses"`
	RoutingInvalid []struct{ Name, Hex string } `json:"routing_invalid"`
	UnknownKinds   []struct{ Name, Hex string } `json:"unknown_kinds"`
	Stamping       []struct {
		Name, Body, From, Delivered string
	} `json:"stamping"`
}

func loadVectors(t testing.TB) *wireVectors {
	t.Helper()
	b, err := os.ReadFile("../testdata/p2pwire/messages.json")
	if err != nil {
		t.Fatal(err)
	}
	var v wireVectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.HubRefuses) == 0 || len(v.Stamping) == 0 || len(v.RoutingInvalid) == 0 || len(v.UnknownKinds) == 0 {
		t.Fatal("vectors missing")
	}
	return &v
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// joinAs joins with a ticket for a given peer id.
func (th *testHub) joinAs(peerID, network string) *client {
	th.t.Helper()
	now := time.Now()
	user := p2pwire.PeerID(peerID).Username()
	s, err := th.keys.Seal(tokens.HubTicket{Username: user, Network: network, PeerID: peerID, HubID: testHubID, Issued: now, Expires: now.Add(time.Minute)})
	if err != nil {
		th.t.Fatal(err)
	}
	c := th.dial()
	c.send(&p2pwire.Hello{Ticket: []byte(s)})
	c.welcome = expect[*p2pwire.Welcome](c)
	expect[*p2pwire.PeerSet](c)
	return c
}

// TestHubOnWireVectors: the hub delivers the stamping vectors' bodies byte
// for byte, refuses the hub_refuses bodies (ERROR forbidden, the connection
// stays), and closes a connection that sends an invalid routing header or
// an unknown kind (ERROR malformed).
func TestHubOnWireVectors(t *testing.T) {
	v := loadVectors(t)
	th := startHub(t, nil)
	alice := th.joinAs("alice~k3f9", "lobby")
	bob := th.joinAs("bob~x7q2", "lobby")
	expect[*p2pwire.PeerEvents](alice)
	peers := map[string]*client{"alice~k3f9": alice, "bob~x7q2": bob}
	for _, s := range v.Stamping {
		from, to := peers[s.From], alice
		if s.From == "alice~k3f9" {
			to = bob
		}
		frame, _ := p2pwire.AppendFrame(nil, unhex(t, s.Body))
		from.sendRaw(frame)
		_ = to.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		body, err := p2pwire.ReadFrame(to.br, nil, p2pwire.MaxFrameSize)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		got, _ := p2pwire.AppendFrame(nil, body)
		if want := unhex(t, s.Delivered); !bytes.Equal(got, want) {
			t.Errorf("%s: delivered %x, want %x", s.Name, got, want)
		}
	}
	for _, r := range v.HubRefuses {
		frame, _ := p2pwire.AppendFrame(nil, unhex(t, r.Hex))
		alice.sendRaw(frame)
		if e := expect[*p2pwire.Error](alice); e.Code != p2pwire.CodeForbidden || e.Closing {
			t.Errorf("%s: ERROR %s closing=%v, want forbidden", r.Name, e.Code, e.Closing)
		}
	}
	alice.ping(1)
	for _, list := range [][]struct{ Name, Hex string }{v.RoutingInvalid, v.UnknownKinds} {
		for _, r := range list {
			c := th.joinAs("m~"+r.Name, "other")
			body := unhex(t, r.Hex)
			frame := append([]byte{0, 0, 0, byte(len(body))}, body...) // lengths under 2 too
			c.sendRaw(frame)
			c.expectError(p2pwire.CodeMalformed, true)
			c.expectClosed()
		}
	}
	bob.ping(2)
}
