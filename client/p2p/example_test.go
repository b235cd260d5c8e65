package p2p_test

import (
	"context"
	"fmt"
	"log"

	"github.com/switchboardgg/switchboard/client/p2p"
)

// Two peers meet on a network and talk through its hub: alice sees bob
// join, bob broadcasts, and alice asks bob a question and gets his answer.
// The example starts its own deployment (control and a hub) in this
// process; a game logs in to its deployment's API instead.
func ExampleJoin() {
	ctx := context.Background()
	join, stop := exampleDeployment(ctx)
	defer stop()
	alice := join("alice")
	defer alice.Close()
	bob := join("bob")
	defer bob.Close()

	ev := <-alice.Events()
	fmt.Println("alice:", ev.Type, ev.Peer == bob.ID())

	// Bob answers requests.
	go func() {
		for m := range bob.Messages() {
			if m.IsRequest() {
				_ = m.Respond(ctx, p2p.Envelope{Payload: []byte("42")})
			}
		}
	}()
	if err := bob.Broadcast(ctx, p2p.Envelope{Header: "chat", Payload: []byte("hi all")}); err != nil {
		log.Fatal(err)
	}
	m := <-alice.Messages()
	fmt.Printf("alice got %q from bob: %v\n", m.Payload, m.From == bob.ID())

	answer, err := alice.Request(ctx, bob.ID(), p2p.Envelope{Header: "question", Payload: []byte("the answer?")})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("bob answered %q\n", answer.Payload)
	// Output:
	// alice: joined true
	// alice got "hi all" from bob: true
	// bob answered "42"
}
