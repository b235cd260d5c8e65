package relaybench

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/relay"
	"github.com/switchboardgg/switchboard/tokens"
)

// TestRun drives a real relay node on 127.0.0.1 at a low rate and
// checks that the report adds up.
func TestRun(t *testing.T) {
	keys, err := tokens.NewRelayKeyring(tokens.RelayKey{ID: 1, Secret: bytes.Repeat([]byte{7}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	s, err := relay.New(relay.Config{Keys: keys, NodeID: "n", BootEpoch: 3, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- s.ServePacket(pc) }()
	defer func() {
		s.Close()
		<-done
	}()
	var out strings.Builder
	res, err := Run(context.Background(), Config{
		Target: pc.LocalAddr().String(), Keys: keys, NodeID: "n", BootEpoch: 3,
		Pairs: 2, Size: 100, Rate: 500, Warmup: 100 * time.Millisecond, Duration: 500 * time.Millisecond,
		Out: &out,
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if res.Offered == 0 || res.Forwarded == 0 || res.Forwarded > res.Offered || res.P50 == 0 {
		t.Fatalf("result %+v\n%s", res, out.String())
	}
	if !strings.Contains(out.String(), "latency p50") {
		t.Fatalf("no report:\n%s", out.String())
	}

	// A relay of another boot epoch refuses the bench's allocations.
	_, err = Run(context.Background(), Config{
		Target: pc.LocalAddr().String(), Keys: keys, NodeID: "n", BootEpoch: 4,
		Pairs: 1, Size: 100, Rate: 10, Duration: time.Millisecond,
	})
	if err == nil || !strings.Contains(err.Error(), "allocation_id_not_found") && !strings.Contains(err.Error(), "not found") {
		t.Fatalf("other epoch: got %v", err)
	}
}

// TestRunForwarder measures a minimal in-process forwarder, as
// shared/baselines/udpfwd does.
func TestRunForwarder(t *testing.T) {
	fwd, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	sink, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	to := sink.LocalAddr().String()
	sink.Close()
	dst, _ := net.ResolveUDPAddr("udp4", to)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		for {
			n, _, err := fwd.ReadFromUDP(buf)
			if err != nil {
				return
			}
			fwd.WriteToUDP(buf[:n], dst)
		}
	}()
	defer func() { fwd.Close(); <-done }()
	res, err := Run(context.Background(), Config{
		Forwarder: fwd.LocalAddr().String(), ForwarderTo: to,
		Pairs: 2, Size: 64, Rate: 500, Warmup: 100 * time.Millisecond, Duration: 500 * time.Millisecond,
	})
	if err != nil || res.Forwarded == 0 {
		t.Fatalf("result %+v, %v", res, err)
	}
}
