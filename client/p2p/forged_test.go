package p2p_test

import (
	"context"
	"testing"

	"github.com/switchboardgg/switchboard/client/p2p"
)

// A third peer of the network cannot answer a request made to another
// one: request ids are a counter, so mallory can guess them, and a
// RESPONSE from anyone but the asked peer must not end the request.
func TestForgedResponseIgnored(t *testing.T) {
	th := startHub(t, nil)
	ctx := context.Background()
	alice := th.connect("alice", "lobby")
	bob := th.connect("bob", "lobby")
	mallory := th.connect("mallory", "lobby")
	for range 2 {
		nextEvent(t, alice)
	}
	got := make(chan *p2p.Message, 1)
	go func() {
		for m := range bob.Messages() {
			if m.IsRequest() {
				got <- m
			}
		}
	}()
	done := make(chan error, 1)
	var res *p2p.Message
	go func() {
		var err error
		res, err = alice.Request(ctx, bob.ID(), p2p.Envelope{Payload: []byte("secret question")})
		done <- err
	}()
	m := <-got // the request is in flight: its id is pending at alice
	for id := range uint64(64) {
		if err := mallory.SendResponse(ctx, alice.ID(), id+1, p2p.Envelope{Payload: []byte("forged")}); err != nil {
			t.Fatal(err)
		}
	}
	// The hub keeps mallory's order and alice reads in order: once this
	// message is out, the forged responses were taken.
	if err := mallory.Send(ctx, alice.ID(), p2p.Envelope{Payload: []byte("after")}); err != nil {
		t.Fatal(err)
	}
	if m := nextMessage(t, alice); string(m.Payload) != "after" {
		t.Fatalf("alice got %q", m.Payload)
	}
	select {
	case err := <-done:
		t.Fatalf("request ended by a forged response: %+v, %v", res, err)
	default:
	}
	if err := m.Respond(ctx, p2p.Envelope{Payload: []byte("real")}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || res.From != bob.ID() || string(res.Payload) != "real" {
		t.Fatalf("request = %+v, %v", res, err)
	}
}
