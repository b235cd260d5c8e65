package p2p_test

import (
	"context"
	"testing"

	"github.com/switchboardgg/switchboard/client/p2p"
	hub "github.com/switchboardgg/switchboard/p2p"
)

// benchPair is two peers on a hub with its rate limits off.
func benchPair(b *testing.B) (*p2p.Peer, *p2p.Peer) {
	th := startHub(b, func(c *hub.Config) { c.PeerMessageRate, c.PeerBandwidth, c.NetworkBandwidth = -1, -1, -1 })
	return th.connect("alice", "bench"), th.connect("bob", "bench")
}

// BenchmarkRequest: one request and its answer through the hub over TLS,
// one at a time (the round trip an app sees).
func BenchmarkRequest(b *testing.B) {
	a, c := benchPair(b)
	ctx := context.Background()
	go func() {
		for m := range c.Messages() {
			_ = m.Respond(ctx, p2p.Envelope{Payload: m.Payload})
		}
	}()
	env := p2p.Envelope{Payload: make([]byte, 32)}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := a.Request(ctx, c.ID(), env); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSend: one-way messages of 32 bytes, as fast as the sender goes,
// counted when received.
func BenchmarkSend(b *testing.B) {
	a, c := benchPair(b)
	ctx := context.Background()
	env := p2p.Envelope{Payload: make([]byte, 32)}
	done := make(chan struct{})
	n := 0
	b.ReportAllocs()
	b.ResetTimer()
	go func() {
		for range c.Messages() {
			if n++; n == b.N {
				close(done)
				return
			}
		}
	}()
	for range b.N {
		if err := a.Send(ctx, c.ID(), env); err != nil {
			b.Fatal(err)
		}
	}
	<-done
}
