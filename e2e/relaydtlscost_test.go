package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/client/backend"
	"github.com/switchboardgg/switchboard/client/relay"
	"github.com/switchboardgg/switchboard/client/session"
)

// TestRelayCarrierCost relays messages between a host and a joiner through
// `switchboard dev`'s relay, both on UDP, then both on DTLS, and logs the
// relay process's CPU time per forwarded message (user + system, from
// /proc; the dev process's idle roles included). It checks only that the
// messages flow; SWITCHBOARD_RELAY_COST_N sets the messages per carrier
// (default 2,000; docs/benchmarks.md used 50,000), SWITCHBOARD_RELAY_COST_SIZE
// their payload (default 100 bytes), and -v prints the result.
func TestRelayCarrierCost(t *testing.T) {
	n, size := 2000, 100
	if v, err := strconv.Atoi(os.Getenv("SWITCHBOARD_RELAY_COST_N")); err == nil && v > 0 {
		n = v
	}
	if v, err := strconv.Atoi(os.Getenv("SWITCHBOARD_RELAY_COST_SIZE")); err == nil && v > 0 && v <= relay.DefaultMaxPayload {
		size = v
	}
	p := start(t, "dev", "--api", "127.0.0.1:0", "--node", "127.0.0.1:0", "--admin", "", "--nats", "127.0.0.1:0",
		"--data-dir", t.TempDir(), "--relay", "127.0.0.1:0")
	ctx := testContext(t, 10*time.Minute)
	be, err := backend.New(p.ready.API, p.ready.ServerKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	client := func(name string, tr relay.Transport) *relay.Client {
		tok, err := be.CreateAuthToken(ctx, name, 0)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := session.Login(ctx, p.ready.API, name, tok, nil)
		if err != nil {
			t.Fatal(err)
		}
		return relay.New(sc, &relay.Config{Transport: tr, QueueLen: 1024})
	}
	for _, tr := range []relay.Transport{relay.TransportUDP, relay.TransportDTLS} {
		host, err := client("host-"+string(tr), tr).Host(ctx, relay.AllocateRequest{MaxConnections: 1})
		if err != nil {
			t.Fatal(err)
		}
		peer, err := client("peer-"+string(tr), tr).Join(ctx, host.JoinCode())
		if err != nil {
			t.Fatal(err)
		}
		msg := make([]byte, size)
		buf := make([]byte, relay.DefaultMaxPayload)
		const window = 32
		cpu0 := procCPU(t, p.cmd.Process.Pid)
		start := time.Now()
		got, sent := 0, 0
		for ; sent < n; sent += window {
			for i := 0; i < window; i++ {
				if err := peer.Send(ctx, host.ID(), msg); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < window; i++ {
				rctx, cancel := context.WithTimeout(ctx, time.Second)
				_, _, err := host.Recv(rctx, buf)
				cancel()
				if errors.Is(err, context.DeadlineExceeded) {
					break // lost on loopback under load: count what came
				}
				if err != nil {
					t.Fatal(err)
				}
				got++
			}
		}
		elapsed := time.Since(start)
		cpu := procCPU(t, p.cmd.Process.Pid) - cpu0
		peer.Close()
		host.Close()
		if got < sent/2 {
			t.Fatalf("%s: %d of %d messages arrived", tr, got, sent)
		}
		t.Logf("%s: %d of %d messages of %d bytes in %v; relay process CPU %v, %.1f µs per forwarded message",
			tr, got, sent, len(msg), elapsed.Round(time.Millisecond), cpu, float64(cpu.Microseconds())/float64(got))
	}
	p.stop(10 * time.Second)
}

// procCPU is a process's user + system CPU time (Linux /proc, 10 ms
// resolution).
func procCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	ut, _ := strconv.ParseUint(f[11], 10, 64)
	st, _ := strconv.ParseUint(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}
