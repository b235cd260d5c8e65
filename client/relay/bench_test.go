package relay_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/client/relay"
)

// BenchmarkPingPong bounces a 32-byte message between a joiner and its
// host through a relay node in this process, and reports the process's
// CPU time per message (cpu-µs/msg: both SDK ends, the relay node's
// forwarding and the kernel's loopback, all together) besides wall time.
// Run with
//
//	go test -run '^$' -bench PingPong -benchtime 20000x ./client/relay
func BenchmarkPingPong(b *testing.B) {
	for _, tr := range []relay.Transport{relay.TransportUDP, relay.TransportWebSocket, relay.TransportDTLS} {
		b.Run(string(tr), func(b *testing.B) {
			s := startStack(b)
			host, peer := connectedPair(b, s, nil, &relay.Config{Transport: tr})
			payload := make([]byte, 32)
			buf := make([]byte, relay.DefaultMaxPayload)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			cpu0 := cpuTime()
			b.ResetTimer()
			for range b.N {
				if err := peer.Send(ctx, host.ID(), payload); err != nil {
					b.Fatal(err)
				}
				if _, _, err := host.Recv(ctx, buf); err != nil {
					b.Fatal(err)
				}
				if err := host.Send(ctx, peer.ID(), payload); err != nil {
					b.Fatal(err)
				}
				if _, _, err := peer.Recv(ctx, buf); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Microsecond)/float64(2*b.N), "cpu-µs/msg")
		})
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
