package node_test

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/node"
	"github.com/switchboardgg/switchboard/rooms"
	"github.com/switchboardgg/switchboard/tokens"
)

// TestDefaults checks that New fills the documented defaults.
func TestDefaults(t *testing.T) {
	signer, _ := tokens.NewSigner([]byte("0123456789abcdef0123456789abcdef"))
	s, err := node.New(node.Config{Signer: signer, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := s.EffectiveConfig()
	tests := []struct {
		name      string
		got, want any
	}{
		{"MaxRooms", c.MaxRooms, node.DefaultMaxRooms},
		{"MaxConnections", c.MaxConnections, node.DefaultMaxConnections},
		{"SendQueueDepth", c.SendQueueDepth, node.DefaultSendQueueDepth},
		{"MaxQueueBytes", c.MaxQueueBytes, node.DefaultMaxQueueBytes},
		{"HandshakeTimeout", c.HandshakeTimeout, node.DefaultHandshakeTimeout},
		{"IdleTimeout", c.IdleTimeout, node.DefaultIdleTimeout},
		{"WriteTimeout", c.WriteTimeout, node.DefaultWriteTimeout},
		{"CloseWait", c.CloseWait, node.DefaultCloseWait},
		{"ReadLimit", c.ReadLimit, node.DefaultReadLimit},
		{"MaxHeaderBytes", c.MaxHeaderBytes, node.DefaultMaxHeaderBytes},
		{"ReadRate", c.ReadRate, node.DefaultReadRate},
		{"MaxTicketCache", c.MaxTicketCache, node.DefaultMaxTicketCache},
		{"Heartbeat", c.Heartbeat, node.DefaultHeartbeat},
		{"UpdateTimeout", c.UpdateTimeout, node.DefaultUpdateTimeout},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if c.ID == "" {
		t.Error("no node id generated")
	}
	if c.ReadLimit <= 1+4+3+65536 {
		t.Errorf("ReadLimit %d is not above the largest valid message", c.ReadLimit)
	}
	for _, bad := range []node.Config{
		{},
		{Signer: signer, ReadLimit: 1000},
		{Signer: signer, SendQueueDepth: 4},
		{Signer: signer, MaxQueueBytes: 600 << 10}, // below a full FRAME_BATCH
		{Signer: signer, IdleTimeout: -time.Second},
	} {
		if s, err := node.New(bad); err == nil {
			s.Close()
			t.Errorf("New(%+v) accepted", bad)
		}
	}
}

// TestBehaviorVectors checks the node's and the engine's defaults against
// the published constants of testdata/roomwire/behavior.json.
func TestBehaviorVectors(t *testing.T) {
	raw, err := os.ReadFile("../testdata/roomwire/behavior.json")
	if err != nil {
		t.Fatal(err)
	}
	type value struct {
		Value float64 `json:"value"`
	}
	var b struct {
		Connection struct {
			Subprotocol string `json:"subprotocol"`
			WSPath      string `json:"ws_path"`
		} `json:"connection"`
		Timing map[string]value `json:"timing"`
		Limits struct {
			InputRateExceeded value `json:"input_rate_exceeded_seconds"`
			InvalidInARow     value `json:"invalid_messages_in_a_row"`
			MaxPlayers        value `json:"max_players"`
			TickRate          struct {
				Max float64 `json:"max"`
			} `json:"tick_rate"`
		} `json:"limits"`
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatal(err)
	}
	sec := func(k string) time.Duration {
		v, ok := b.Timing[k]
		if !ok {
			t.Fatalf("behavior.json has no timing.%s", k)
		}
		return time.Duration(v.Value * float64(time.Second))
	}
	tests := []struct {
		name      string
		got, want any
	}{
		{"subprotocol", node.Subprotocol, b.Connection.Subprotocol},
		{"ws path", node.Path, b.Connection.WSPath},
		{"handshake timeout", node.DefaultHandshakeTimeout, sec("handshake_timeout_seconds")},
		{"idle timeout", node.DefaultIdleTimeout, sec("idle_timeout_seconds")},
		{"connect timeout", rooms.DefaultConnectTimeout, sec("connect_timeout_seconds")},
		{"frame retention", rooms.DefaultRetention, sec("frame_retention_seconds")},
		{"reconnect window default", rooms.DefaultReconnectWindow, sec("reconnect_window_seconds_default")},
		{"close after room closed", rooms.DefaultCloseLinger, sec("close_after_room_closed_seconds")},
		{"input rate exceeded seconds", float64(rooms.DefaultRateLimitSeconds), b.Limits.InputRateExceeded.Value},
		{"invalid messages in a row", float64(node.InvalidLimit), b.Limits.InvalidInARow.Value},
		{"max players", float64(rooms.MaxSeats), b.Limits.MaxPlayers.Value},
		{"max tick rate", float64(rooms.MaxTickRate), b.Limits.TickRate.Max},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s: node has %v, behavior.json %v", tc.name, tc.got, tc.want)
		}
	}
}
