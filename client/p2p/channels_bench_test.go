package p2p

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/internal/impair"
)

// cpuTime returns the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkReliableThroughput sends 4 MiB per op on Ch1 between two
// channel layers on real UDP sockets through internal/impair, with the
// loss of the sub-benchmark in each direction. cpu-µs/MiB is the whole
// process's CPU time (sender, receiver and proxy) per MiB delivered.
//
//	go test ./client/p2p -run '^$' -bench BenchmarkReliableThroughput -benchtime 5x
func BenchmarkReliableThroughput(b *testing.B) {
	for _, loss := range []float64{0, 0.01} {
		b.Run(fmt.Sprintf("loss=%g%%", loss*100), func(b *testing.B) {
			p := newPair(b, impair.Faults{Loss: loss}, ReliableConfig{}, ReliableConfig{})
			ctx := context.Background()
			if err := p.a.ch.sendReliable(ctx, "bob~1", Ch1, seqEnv(0, nil)); err != nil {
				b.Fatal(err)
			}
			recv(b, p.b)
			const total = 4 << 20
			const chunk = 32 << 10
			data := make([]byte, chunk)
			b.SetBytes(total)
			b.ResetTimer()
			cpu0 := cpuTime()
			for range b.N {
				errc := make(chan error, 1)
				go func() {
					for off := 0; off < total; off += chunk {
						if err := p.a.ch.sendReliable(ctx, "bob~1", Ch1, Envelope{Payload: data}); err != nil {
							errc <- err
							return
						}
					}
					errc <- nil
				}()
				for got := 0; got < total; {
					got += len(recv(b, p.b).Payload)
				}
				if err := <-errc; err != nil {
					b.Fatal(err)
				}
			}
			cpu := cpuTime() - cpu0
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*total>>20), "cpu-µs/MiB")
			st := p.proxy.Stats()
			b.ReportMetric(float64(st.Up.Received)/float64(b.N*total>>20), "dgrams-up/MiB")
		})
	}
}

// BenchmarkRealtimeDuringBulk measures how long Realtime messages take
// while Ch1 carries 2 MiB, under the sub-benchmark's loss each way: one
// Realtime message every 5 ms, its one-way delay from SendReliable to
// its arrival on Reliable (one process, one clock), as percentiles over
// every message of every op.
//
//	go test ./client/p2p -run '^$' -bench BenchmarkRealtimeDuringBulk -benchtime 5x
func BenchmarkRealtimeDuringBulk(b *testing.B) {
	for _, loss := range []float64{0, 0.01, 0.10} {
		b.Run(fmt.Sprintf("loss=%g%%", loss*100), func(b *testing.B) {
			p := newPair(b, impair.Faults{Loss: loss}, ReliableConfig{}, ReliableConfig{})
			ctx := context.Background()
			if err := p.a.ch.sendReliable(ctx, "bob~1", Realtime, seqEnv(0, nil)); err != nil {
				b.Fatal(err)
			}
			recv(b, p.b)
			const total = 2 << 20
			const chunk = 32 << 10
			data := make([]byte, chunk)
			var delays []time.Duration
			for range b.N {
				stop := make(chan struct{})
				var wg sync.WaitGroup
				sent := 0 // the ticker's until wg.Wait
				wg.Go(func() {
					t := time.NewTicker(5 * time.Millisecond)
					defer t.Stop()
					for {
						select {
						case <-stop:
							return
						case <-t.C:
						}
						ts := binary.BigEndian.AppendUint64(nil, uint64(time.Now().UnixNano()))
						if err := p.a.ch.sendReliable(ctx, "bob~1", Realtime, Envelope{Header: "rt", Payload: ts}); err != nil {
							b.Error(err)
							return
						}
						sent++
					}
				})
				go func() {
					for off := 0; off < total; off += chunk {
						if err := p.a.ch.sendReliable(ctx, "bob~1", Ch1, Envelope{Payload: data}); err != nil {
							b.Error(err)
							return
						}
					}
				}()
				rts := 0
				for got := 0; got < total; {
					m := recv(b, p.b)
					if m.Channel == Realtime {
						delays = append(delays, time.Duration(time.Now().UnixNano()-int64(binary.BigEndian.Uint64(m.Payload))))
						rts++
						continue
					}
					got += len(m.Payload)
				}
				close(stop)
				wg.Wait()
				for ; rts < sent; rts++ { // the Realtime messages still in flight
					m := recv(b, p.b)
					delays = append(delays, time.Duration(time.Now().UnixNano()-int64(binary.BigEndian.Uint64(m.Payload))))
				}
			}
			slices.Sort(delays)
			if len(delays) == 0 {
				b.Fatal("no Realtime message")
			}
			q := func(f float64) float64 { return float64(delays[int(f*float64(len(delays)-1))].Microseconds()) / 1000 }
			b.ReportMetric(q(0.5), "p50-ms")
			b.ReportMetric(q(0.9), "p90-ms")
			b.ReportMetric(q(0.99), "p99-ms")
			b.ReportMetric(q(1), "max-ms")
			b.ReportMetric(float64(len(delays))/float64(b.N), "rt-msgs/op")
		})
	}
}
