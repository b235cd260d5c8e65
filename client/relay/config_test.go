package relay

import (
	"testing"
	"time"
)

// TestConfigDefaults: the zero Config takes the documented defaults (the
// table of docs/sdk/relay-go.md), and a set field is kept.
func TestConfigDefaults(t *testing.T) {
	c := (*Config)(nil).resolve()
	durations := []struct {
		name      string
		got, want time.Duration
	}{
		{"DialTimeout", c.DialTimeout, 10 * time.Second}, {"BindTimeout", c.BindTimeout, 15 * time.Second},
		{"Retransmit", c.Retransmit, time.Second}, {"KeepAlive", c.KeepAlive, 3 * time.Second},
		{"DeadAfter", c.DeadAfter, 10 * time.Second}, {"ReconnectTimeout", c.ReconnectTimeout, 30 * time.Second},
		{"WriteTimeout", c.WriteTimeout, 5 * time.Second}, {"QoSTimeout", c.QoSTimeout, time.Second},
	}
	for _, d := range durations {
		if d.got != d.want {
			t.Errorf("%s = %v, want %v", d.name, d.got, d.want)
		}
	}
	ints := []struct {
		name      string
		got, want int
	}{
		{"MaxPayload", c.MaxPayload, 1434}, {"QueueLen", c.QueueLen, 256}, {"EventQueueLen", c.EventQueueLen, 64},
		{"MaxPeers", c.MaxPeers, 1024}, {"SocketBuffer", c.SocketBuffer, 1 << 20}, {"QoSProbes", c.QoSProbes, 3},
	}
	for _, i := range ints {
		if i.got != i.want {
			t.Errorf("%s = %d, want %d", i.name, i.got, i.want)
		}
	}
	if c.Transport != TransportUDP || c.Logger == nil {
		t.Errorf("Transport %q, Logger %v", c.Transport, c.Logger)
	}
	in := Config{MaxPayload: 70000, KeepAlive: time.Minute, Transport: TransportWebSocket}
	c = in.resolve()
	if c.MaxPayload != 65535 || c.KeepAlive != time.Minute || c.Transport != TransportWebSocket {
		t.Errorf("resolved %d %v %s", c.MaxPayload, c.KeepAlive, c.Transport)
	}
	if in.Logger != nil || in.DialTimeout != 0 {
		t.Error("resolve changed the caller's Config")
	}
}
