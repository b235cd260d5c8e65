package system_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/switchboardgg/switchboard/protocol/relaywire"
	"github.com/switchboardgg/switchboard/system"
	"github.com/switchboardgg/switchboard/tokens"
)

// TestRelayListeners: with relay addresses the system serves the relay
// over UDP and WebSocket, lists both in the ready file, and binds
// allocations sealed with the secret kept in the data dir.
func TestRelayListeners(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.Relay = system.RelayConfig{UDPAddr: "127.0.0.1:0", WSAddr: "127.0.0.1:0"}
	cfg.Relay.Relay.BootEpoch = 42
	cfg.ReadyFile = filepath.Join(t.TempDir(), "ready.json")
	s := start(t, cfg)
	r := s.Ready()
	var file map[string]any
	b, err := os.ReadFile(cfg.ReadyFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	if file["relay_udp"] != r.RelayUDP || file["relay_ws"] != r.RelayWS || !strings.HasPrefix(r.RelayWS, "ws://") || strings.HasSuffix(r.RelayUDP, ":0") {
		t.Fatalf("ready file relay_udp %v, relay_ws %v; Ready %q %q", file["relay_udp"], file["relay_ws"], r.RelayUDP, r.RelayWS)
	}

	// What the relay REST API will do: seal with the deployment's secret.
	hexSecret, err := os.ReadFile(filepath.Join(dir, system.RelaySecretFile))
	if err != nil {
		t.Fatal(err)
	}
	secret, err := hex.DecodeString(strings.TrimSpace(string(hexSecret)))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := tokens.NewRelayKeyring(tokens.RelayKey{ID: 1, Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	bindMsg := func(epoch uint64, nonce uint16) ([]byte, relaywire.AllocationID) {
		c := tokens.RelayConnection{NodeID: r.NodeID, BootEpoch: epoch, Issued: time.Now(), Expires: time.Now().Add(time.Hour)}
		copy(c.AllocationID[:], []byte(t.Name()+"................"))
		c.AllocationID[0] = byte(epoch)
		blob, err := keys.Seal(c)
		if err != nil {
			t.Fatal(err)
		}
		k, _ := keys.AllocationKey(1, c.AllocationID)
		key := relaywire.Key(k)
		m, _ := relaywire.NewBind(nonce, blob, &key)
		out, _ := m.AppendTo(nil)
		return out, c.AllocationID
	}
	// Over UDP: bound.
	conn, err := net.Dial("udp", r.RelayUDP)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	m, _ := bindMsg(42, 0)
	if _, err := conn.Write(m); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 1500)
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	if typ, err := relaywire.Peek(buf[:n]); err != nil || typ != relaywire.TypeBindReceived {
		t.Fatalf("got % x (%v), want BIND_RECEIVED", buf[:n], err)
	}

	// Over WebSocket: a blob of another boot epoch is refused (ERROR 4).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	wc, _, _, err := ws.Dial(ctx, r.RelayWS)
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Close()
	m, id := bindMsg(41, 0)
	if err := wsutil.WriteClientBinary(wc, m); err != nil {
		t.Fatal(err)
	}
	_ = wc.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := wsutil.ReadServerBinary(wc)
	if err != nil {
		t.Fatal(err)
	}
	var e relaywire.Error
	if err := e.Unmarshal(got); err != nil || e.AllocationID != id || e.Code != relaywire.CodeNotFound {
		t.Fatalf("got % x (%v), want ERROR 4", got, err)
	}
	// The UDP allocation moves to this WebSocket with a larger nonce.
	m, _ = bindMsg(42, 1)
	if err := wsutil.WriteClientBinary(wc, m); err != nil {
		t.Fatal(err)
	}
	if got, err = wsutil.ReadServerBinary(wc); err != nil {
		t.Fatal(err)
	}
	if typ, err := relaywire.Peek(got); err != nil || typ != relaywire.TypeBindReceived {
		t.Fatalf("got % x (%v), want BIND_RECEIVED", got, err)
	}
}
