// Package kcploop runs KCP conversations (the core KCP type of
// github.com/xtaci/kcp-go) on the caller's own UDP socket loop and one
// timer wheel, without a goroutine per conversation. It is the reliable
// channel under node/udp (issue 12) and p2p's Ch1, Ch2 and Realtime
// channels (issue 11).
//
// The package owns no socket and does no sealing or batching: the
// caller's read loop hands each received KCP datagram to [Conv.Input]
// (after opening it with internal/sealed, say), and a conversation hands
// each datagram it wants sent to the caller's [OutputFunc] (which seals
// and queues it for a batched write). Conversation ids are the caller's
// ([ConvID] reads one from a datagram so the read loop can route it);
// both peers must use the same id and the same [ConvConfig].
//
// # Scheduling
//
// A [Loop] keeps every busy conversation in a hashed timer wheel of
// [Config.Tick] resolution. When a conversation's slot comes round its
// KCP Update runs (acks, first transmissions, retransmissions, window
// probes) and it is put back at the time KCP's Check asks for, which is
// never more than its [ConvConfig.Interval] away. A conversation with
// nothing unacknowledged leaves the wheel until [Conv.Input], [Conv.Send]
// or [Conv.Recv] wakes it: the wheel's cost follows the traffic, not the
// number of conversations (a game node's sessions are idle between one
// input and the next). [Conv.Input] sends at once what KCP flushes on
// input (new segments when acknowledgements slide the window, fast
// retransmissions, acknowledgements once a datagram's worth has
// gathered); other acknowledgements and a message given to [Conv.Send]
// leave on the next wheel step (within one Tick, flushed without waiting
// for KCP's Interval). [Conv.SendFlush] and [Conv.Flush] send at once,
// before they return, for a message whose latency matters.
//
// # Bounds
//
//   - Send refuses ([ErrSendQueueFull]) once ConvConfig.SendQueue
//     segments are queued or unacknowledged, so a peer that stops
//     reading (its window closes) or stops answering costs its sender at
//     most SendQueue × MTU bytes.
//   - The receiver keeps at most RecvWindow segments waiting for
//     [Conv.Recv] and RecvWindow out-of-order segments (KCP drops what
//     lies beyond its window), about 2 × RecvWindow × MTU bytes.
//   - A message is at most ConvConfig.MaxMessage bytes
//     ([ErrTooLarge]); New checks that it fits in the receive window.
//   - The loop allocates nothing per datagram or per tick. kcp-go's core
//     allocates about 4 times per single-segment message (its buffer
//     pool and receive heap box values in interfaces); TestSteadyStateAllocs
//     pins that figure.
//   - KCP datagrams are at most MTU bytes; the caller adds its sealing
//     overhead on top (MTU 1200 + 29 bytes of internal/sealed stays far
//     below a 1280-byte IPv6 path).
//
// # Goroutines, concurrency and closing
//
// [New] starts nothing. [Loop.Run] drives the wheel and blocks until its
// context ends or [Loop.Close]. Each [Conv] has a mutex: Input, Send,
// Recv and the wheel's Update may come from different goroutines. The
// OutputFunc runs with that mutex held, on the goroutine that called
// Input or on Run's: it must not call back into the same Conv, and the
// bytes it gets are valid only until it returns. [Conv.Close] takes the
// conversation off the wheel; Loop.Close stops Run. Neither closes any
// socket, which stays the caller's.
//
// kcp-go keeps package-level state of its own (a buffer pool and its
// DefaultSnmp counters), and importing it starts two idle goroutines of
// its session scheduler (SystemTimedSched) at init, which this package
// never uses. Goroutine-leak checks of packages that import kcploop must
// ignore [KCPSchedulerGoroutine], e.g. with goleak.IgnoreTopFunction.
package kcploop
