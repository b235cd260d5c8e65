package e2e_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"
)

// TestDevRelay: `switchboard dev --relay --relay-ws` serves the relay's
// UDP port (the QoS probe answers), WebSocket port and DTLS port, lists
// them in the ready file, counts on /metrics, and drains with the rest.
func TestDevRelay(t *testing.T) {
	help, err := exec.Command(binary, "dev", "--help").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"--relay ", "--relay-ws ", "--relay-dtls "} {
		if !strings.Contains(string(help), f) {
			t.Errorf("dev --help lacks %s", f)
		}
	}
	p := start(t, "dev", "--api", "127.0.0.1:0", "--node", "127.0.0.1:0", "--admin", "127.0.0.1:0",
		"--nats", "127.0.0.1:0", "--data-dir", t.TempDir(), "--relay", "127.0.0.1:0", "--relay-ws", "127.0.0.1:0")
	b, err := os.ReadFile(p.readyFile)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		RelayUDP  string `json:"relay_udp"`
		RelayWS   string `json:"relay_ws"`
		RelayDTLS string `json:"relay_dtls"`
		Admin     string `json:"admin"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	// DTLS beside the relay by default, on a free port as --relay's is 0.
	if r.RelayUDP == "" || !strings.HasPrefix(r.RelayWS, "ws://") || !strings.HasPrefix(r.RelayDTLS, "127.0.0.1:") ||
		strings.HasSuffix(r.RelayDTLS, ":0") || strings.HasSuffix(r.RelayDTLS, ":7704") {
		t.Fatalf("ready file: %s", b)
	}

	// Unity's QoS probe on the UDP port (reference unity-relay.md §2.3).
	c, err := net.Dial("udp", r.RelayUDP)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	probe := append([]byte{0x59, 0x00, 12}, "QoS request"...)
	probe = append(probe, 0, 0x34, 0x12, 1, 2, 3, 4, 5, 6, 7, 8)
	if _, err := c.Write(probe); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 100)
	n, err := c.Read(buf)
	if err != nil || n != 13 || buf[0] != 0x95 {
		t.Fatalf("QoS answer % x, %v", buf[:n], err)
	}

	// The WebSocket port upgrades on "/" with no subprotocol or extension.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var hdr http.Header
	d := ws.Dialer{OnHeader: func(key, value []byte) error {
		if hdr == nil {
			hdr = http.Header{}
		}
		hdr.Add(string(key), string(value))
		return nil
	}}
	wc, _, _, err := d.Dial(ctx, r.RelayWS)
	if err != nil {
		t.Fatal(err)
	}
	wc.Close()
	if hdr.Get("Sec-WebSocket-Protocol") != "" || hdr.Get("Sec-WebSocket-Extensions") != "" {
		t.Fatalf("101 headers %v", hdr)
	}

	resp, err := http.Get(r.Admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{"switchboard_relay_packets_total", "switchboard_relay_qos_probes_total 1", "switchboard_relay_dtls_connections 0"} {
		if !strings.Contains(string(body), m) {
			t.Errorf("/metrics lacks %q", m)
		}
	}
	p.stop(30 * time.Second)
}
