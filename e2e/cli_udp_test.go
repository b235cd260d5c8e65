package e2e_test

import (
	"regexp"
	"strings"
	"testing"
)

// TestCLITransports: `switchboard bots` and `bench rooms` play over the
// UDP channel of a dev server (which serves it by default) with
// --transport udp, through an impairment proxy with --loss, and refuse
// --loss over WebSocket with the reason.
func TestCLITransports(t *testing.T) {
	dir := t.TempDir()
	p := start(t, "dev", "--api", "127.0.0.1:0", "--node", "127.0.0.1:0", "--admin", "", "--nats", "127.0.0.1:0", "--data-dir", dir)
	rf := dir + "/ready-cli.json"
	if err := writeReady(rf, p.ready); err != nil {
		t.Fatal(err)
	}
	cli(t, rf, false, "room", "create", "udp-1", "--tick-rate", "20", "--max-players", "2", "--start-mode", "auto")

	out := cli(t, rf, false, "bots", "--room", "udp-1", "-n", "2", "--duration", "3s", "--transport", "udp", "--loss", "0.05")
	if !strings.Contains(out, "(2 joined over udp)") || !regexp.MustCompile(`done: \d+ frames in order`).MatchString(out) {
		t.Errorf("bots --transport udp --loss 0.05:\n%s", out)
	}

	out = cli(t, rf, false, "bench", "rooms", "--rooms", "2", "--players", "2", "--tick", "10", "--duration", "1s", "--transport", "udp")
	if !strings.Contains(out, "transport             udp (4 players joined over udp)") || !strings.Contains(out, "order errors 0") {
		t.Errorf("bench rooms --transport udp:\n%s", out)
	}

	_, stderr, err := cliAll(t, "bench", "rooms", "--rooms", "1", "--transport", "ws", "--loss", "0.1", "--ready-file", rf)
	if err == nil || !strings.Contains(stderr, "UDP channel only") {
		t.Errorf("bench rooms --transport ws --loss: %v %q, want the reason", err, stderr)
	}
	_, stderr, err = cliAll(t, "bots", "--room", "udp-1", "--transport", "quic", "--ready-file", rf)
	if err == nil || !strings.Contains(stderr, `--transport "quic": want auto, udp or ws`) {
		t.Errorf("bots --transport quic: %v %q", err, stderr)
	}
}
