package system_test

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestNodeUDP: with NodeConfig.UDPAddr the node serves its UDP channel,
// says where in Ready, and counts what it drops on the admin metrics.
func TestNodeUDP(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Admin.Addr = "127.0.0.1:0"
	cfg.Node.UDPAddr = "127.0.0.1:0"
	s := start(t, cfg)
	r := s.Ready()
	if r.NodeUDP == "" || strings.HasSuffix(r.NodeUDP, ":0") {
		t.Fatalf("Ready node_udp = %q", r.NodeUDP)
	}
	c, err := net.Dial("udp", r.NodeUDP)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte{9, 9, 9}); err != nil { // no datagram kind of ours
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get(r.Admin + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), `switchboard_node_udp_dropped_total{reason="kind"} 1`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the dropped datagram is not on /metrics")
		}
	}
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
