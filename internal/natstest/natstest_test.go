package natstest

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/switchboardgg/switchboard/backbone"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStartConnects(t *testing.T) {
	s, c := Start(t, backbone.Config{Name: "natstest"})
	if !c.NATS().IsConnected() {
		t.Fatalf("first connection not connected")
	}
	if c2 := s.Connect(backbone.Config{}); !c2.NATS().IsConnected() {
		t.Fatalf("second connection not connected")
	}
}
