// Package netwire is a user-space wire between two TUN devices that delays,
// jitters and loses IP packets, for test and benchmark links only: it
// gives TCP and UDP the same round trip and the same loss where the kernel
// has no sch_netem (`tc qdisc … netem delay`), as this project's CI and
// benchmark machines do not. Nothing in the product uses it.
// scripts/netem starts it (cmd/netwire) between the benchmark's namespace
// and the server's when a delay is asked for; its tests build their own
// namespaces.
//
// # The link
//
// Two TUN devices (IFF_TUN|IFF_NO_PI: one IP packet per read or write, no
// header), usually one in each of two network namespaces, each with an
// address on the same point-to-point subnet. What one namespace routes
// into its device, [Wire.Serve] reads, holds for the configured one-way
// delay and writes into the other device, whose kernel receives it as if
// it had arrived on a wire. It never alters, splits or merges a packet.
//
// # Faults and what a test can rely on
//
// Faults are set per direction ([Config.AB], [Config.BA]; [Both] sets
// the same both ways); each direction has its own queue, generator and
// counters ([Stats]).
//
//   - Loss: each packet read is dropped with probability Faults.Loss
//     (Bernoulli, independent), before it is queued.
//   - Delay: each packet kept leaves no earlier than Faults.Delay after it
//     was read. That is a lower bound a test may assert on: a round trip
//     through the wire takes at least twice Delay. Above it, the packet
//     waits for the runtime's timer (about a millisecond) and for the
//     scheduler.
//   - Jitter: each packet is held a further uniform draw in
//     [0, Faults.Jitter). Without Faults.Reorder a packet never leaves
//     before the one read before it (its due time is raised to its
//     predecessor's), as on a real path whose queue varies; with Reorder
//     the draws are independent and packets overtake each other.
//   - Limit: at most Config.Limit packets wait in each direction; a packet
//     that finds the queue full is dropped and counted (Overflowed), as a
//     router's full queue would.
//
// Every packet read is counted exactly once as forwarded, lost,
// overflowed, oversized or failed to write; once a direction has drained,
// Received is their sum.
//
// # Memory and allocation
//
// Each direction owns a min-heap of at most Limit entries and a free list
// of packet buffers of Config.MaxPacket bytes, filled on demand up to
// Limit+1 buffers; in steady state a packet allocates nothing. Each
// packet costs a read, a write and usually a timer wake-up of its own:
// about 25 µs of CPU on the project's 2-vCPU VM, 0.2 of a core for a
// 100-player benchmark (docs/benchmarks.md).
//
// # Goroutines and closing
//
// [New] starts nothing. [Wire.Serve] runs one goroutine per direction —
// each reads its device with a read deadline at the next packet's due
// time, so one goroutine both reads and releases — and blocks until
// [Wire.Close]. The devices are the caller's to open ([OpenTUN]); Serve
// closes them when it returns. Close is idempotent, closes the devices,
// and waits for both goroutines.
package netwire
