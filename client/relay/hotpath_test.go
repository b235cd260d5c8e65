package relay_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/client/relay"
)

// TestSendRecvDoNotAllocate: in steady state, a Send, the relay's
// forwarding, the reader's decoding and queueing and a Recv allocate
// nothing, over UDP and WebSocket (but for the relay node's WebSocket
// reader). (AllocsPerRun counts every goroutine
// of the process, the in-process deployment's too, averaged per run.)
func TestSendRecvDoNotAllocate(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts")
	}
	s := startStack(t)
	for _, tr := range []relay.Transport{relay.TransportUDP, relay.TransportWebSocket} {
		t.Run(string(tr), func(t *testing.T) {
			if tr == relay.TransportWebSocket && raceEnabled {
				t.Skip("the race detector adds an allocation to the relay node's WebSocket reader")
			}
			host, peer := connectedPair(t, s, nil, &relay.Config{Transport: tr})
			// One deadline for every run (a ctx per run would allocate); a
			// lost message fails the test instead of hanging it.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			// 100 bytes: 2,100 messages stay under the relay's per-
			// allocation byte burst (1 MiB), which would drop some.
			payload := make([]byte, 100)
			buf := make([]byte, relay.DefaultMaxPayload)
			roundTrip := func() {
				if err := peer.Send(ctx, host.ID(), payload); err != nil {
					t.Fatal(err)
				}
				if _, _, err := host.Recv(ctx, buf); err != nil {
					t.Fatal(err)
				}
			}
			for range 100 { // warm the free list
				roundTrip()
			}
			// Over WebSocket the relay node's reader allocates one header
			// buffer per message (gobwas/ws.ReadHeader in relay/ws.go,
			// server side); the client side allocates nothing.
			want := 0.0
			if tr == relay.TransportWebSocket {
				want = 1
			}
			if n := testing.AllocsPerRun(2000, roundTrip); n > want {
				t.Fatalf("%v allocations per message, want %v", n, want)
			}
		})
	}
}
