package p2p_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/switchboardgg/switchboard/client/p2p"
	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// A peer cannot make another allocate a full jumbo buffer per datagram:
// a fragment that disagrees with its message's count or total is dropped
// alone, not with the message, so re-sending the first fragment of a
// 16 MB message after a disagreeing one finds it still there. (Before,
// each such pair of 1 KB datagrams cost the receiver 16 MB.)
func TestUDPJumboDisagreeingFragmentsDoNotChurn(t *testing.T) {
	th := startHub(t, nil)
	ctx := context.Background()
	bob := th.connectUDP("bob", "lobby", nil)
	mallory := th.connectUDP("mallory", "lobby", nil)
	chunk := make([]byte, p2pwire.JumboChunkSize)
	frag := func(total int) []byte {
		f := p2pwire.Jumbo{MessageID: 7, Index: 0, Count: uint16(p2pwire.JumboCount(total)), Total: uint32(total), Chunk: chunk}
		b, err := f.AppendTo(nil)
		if err != nil {
			t.Fatal(err)
		}
		return b[2:]
	}
	big, other := frag(p2p.MaxJumboSize), frag(p2p.MaxJumboSize-p2pwire.JumboChunkSize)
	const pairs = 40
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range pairs {
		for _, rest := range [][]byte{big, other} {
			if _, err := mallory.SendDatagram(bob.ID(), p2pwire.KindJumbo, rest); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The hub and bob read in order: once this arrives, the fragments
	// before it were taken (or lost).
	if err := mallory.SendUDP(ctx, bob.ID(), p2p.Envelope{Payload: []byte("after")}); err != nil {
		t.Fatal(err)
	}
	if m := nextUDP(t, bob); string(m.Payload) != "after" {
		t.Fatalf("bob got %q", m.Payload)
	}
	runtime.ReadMemStats(&after)
	s := bob.UDPStats()
	if s.JumboBad == 0 {
		t.Fatalf("no disagreeing fragment counted: %+v", s)
	}
	// One message's buffer, and room for everything else the test does.
	if got := after.TotalAlloc - before.TotalAlloc; got > 4*p2p.MaxJumboSize {
		t.Fatalf("%d disagreeing fragments made the process allocate %d MB", s.JumboBad, got>>20)
	}
}
