package p2p_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/client/p2p"
	"github.com/switchboardgg/switchboard/internal/impair"
	hub "github.com/switchboardgg/switchboard/p2p"
)

// processCPU returns the process's user and system CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// impairFront serves an impair proxy in front of target and returns it
// and its address.
func impairFront(tb testing.TB, target string, faults impair.Faults) (*impair.Proxy, string) {
	tb.Helper()
	px, err := impair.New(impair.Config{Target: target, Up: faults, Down: faults, Logger: discard})
	if err != nil {
		tb.Fatal(err)
	}
	uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		tb.Fatal(err)
	}
	served := make(chan struct{})
	go func() { defer close(served); _ = px.Serve(uc) }()
	tb.Cleanup(func() { _ = px.Close(); <-served })
	return px, uc.LocalAddr().String()
}

// BenchmarkReliable sends 4 MiB per op on Ch1 from alice to bob, through
// the hub (an impair proxy between alice and the hub's UDP port, losing
// the sub-benchmark's share of datagrams each way) or on a direct UDP
// path (the proxy in front of bob's socket: alice's datagrams to bob
// cross it, bob's acknowledgements go straight back). cpu-µs/MiB is the
// whole process's CPU time (both peers, the hub, the proxy) per MiB
// delivered.
//
//	go test ./client/p2p -run '^$' -bench BenchmarkReliable -benchtime 5x
func BenchmarkReliable(b *testing.B) {
	for _, path := range []string{"hub", "direct"} {
		for _, loss := range []float64{0, 0.01} {
			b.Run(fmt.Sprintf("path=%s/loss=%g%%", path, loss*100), func(b *testing.B) {
				th := startHub(b, func(c *hub.Config) {
					c.PeerMessageRate, c.PeerBandwidth, c.NetworkBandwidth, c.PeerDatagramRate = -1, -1, -1, -1
				})
				ctx := context.Background()
				var alice, bob *p2p.Peer
				if path == "hub" {
					_, front := impairFront(b, th.addr, impair.Faults{Loss: loss})
					alice = th.connectUDP("alice", "bench", func(c *p2p.Config) { c.HubUDPAddr = front })
					bob = th.connectUDP("bob", "bench", nil)
				} else {
					alice = th.connectUDP("alice", "bench", nil)
					bob = th.connectUDP("bob", "bench", nil)
					px, front := impairFront(b, bob.UDPLocal().String(), impair.Faults{})
					if err := px.SetFaults(impair.Up, impair.Faults{Loss: loss}); err != nil {
						b.Fatal(err)
					}
					secret := bytes.Repeat([]byte{7}, 32)
					fa, _ := net.ResolveUDPAddr("udp", front)
					if _, _, err := alice.InstallDirectUDP(bob.ID(), 55, secret, fa.AddrPort()); err != nil {
						b.Fatal(err)
					}
					if _, _, err := bob.InstallDirectUDP(alice.ID(), 55, secret, alice.UDPLocal()); err != nil {
						b.Fatal(err)
					}
				}
				for deadline := time.Now().Add(10 * time.Second); len(alice.Peers()) == 0; time.Sleep(5 * time.Millisecond) {
					if time.Now().After(deadline) {
						b.Fatal("alice does not see bob")
					}
				}
				const total = 4 << 20
				const chunk = 32 << 10
				data := make([]byte, chunk)
				b.SetBytes(total)
				b.ResetTimer()
				cpu0 := processCPU()
				for range b.N {
					errc := make(chan error, 1)
					go func() {
						for off := 0; off < total; off += chunk {
							if err := alice.SendReliable(ctx, bob.ID(), p2p.Ch1, p2p.Envelope{Payload: data}); err != nil {
								errc <- err
								return
							}
						}
						errc <- nil
					}()
					for got := 0; got < total; {
						select {
						case m := <-bob.Reliable():
							got += len(m.Payload)
						case <-time.After(time.Minute):
							b.Fatal("no reliable message for a minute")
						}
					}
					if err := <-errc; err != nil {
						b.Fatal(err)
					}
				}
				cpu := processCPU() - cpu0
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*total>>20), "cpu-µs/MiB")
			})
		}
	}
}

// BenchmarkRealtimeThroughHub is BenchmarkRealtimeDuringBulk through the
// real hub: alice behind an impair proxy losing the sub-benchmark's
// share each way sends 2 MiB on Ch1 and a Realtime message every 5 ms to
// bob; the delay is from SendReliable to bob's Reliable (one clock).
//
//	go test ./client/p2p -run '^$' -bench BenchmarkRealtimeThroughHub -benchtime 3x
func BenchmarkRealtimeThroughHub(b *testing.B) {
	for _, loss := range []float64{0, 0.01, 0.10} {
		b.Run(fmt.Sprintf("loss=%g%%", loss*100), func(b *testing.B) {
			th := startHub(b, func(c *hub.Config) {
				c.PeerMessageRate, c.PeerBandwidth, c.NetworkBandwidth, c.PeerDatagramRate = -1, -1, -1, -1
			})
			_, front := impairFront(b, th.addr, impair.Faults{Loss: loss})
			alice := th.connectUDP("alice", "bench", func(c *p2p.Config) { c.HubUDPAddr = front })
			bob := th.connectUDP("bob", "bench", nil)
			for deadline := time.Now().Add(10 * time.Second); len(alice.Peers()) == 0; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					b.Fatal("alice does not see bob")
				}
			}
			ctx := context.Background()
			const total = 2 << 20
			const chunk = 32 << 10
			data := make([]byte, chunk)
			var delays []time.Duration
			next := func() *p2p.ReliableMessage {
				select {
				case m := <-bob.Reliable():
					return m
				case <-time.After(time.Minute):
					b.Fatal("no reliable message for a minute")
				}
				return nil
			}
			stamp := func(m *p2p.ReliableMessage) {
				delays = append(delays, time.Duration(time.Now().UnixNano()-int64(binary.BigEndian.Uint64(m.Payload))))
			}
			for range b.N {
				stop := make(chan struct{})
				sent := 0
				var wg sync.WaitGroup
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
						if err := alice.SendReliable(ctx, bob.ID(), p2p.Realtime, p2p.Envelope{Payload: ts}); err != nil {
							b.Error(err)
							return
						}
						sent++
					}
				})
				go func() {
					for off := 0; off < total; off += chunk {
						if err := alice.SendReliable(ctx, bob.ID(), p2p.Ch1, p2p.Envelope{Payload: data}); err != nil {
							b.Error(err)
							return
						}
					}
				}()
				rts := 0
				for got := 0; got < total; {
					m := next()
					if m.Channel == p2p.Realtime {
						stamp(m)
						rts++
						continue
					}
					got += len(m.Payload)
				}
				close(stop)
				wg.Wait()
				for ; rts < sent; rts++ {
					stamp(next())
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
