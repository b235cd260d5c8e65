package p2p_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/switchboardgg/switchboard/client/p2p"
	"github.com/switchboardgg/switchboard/client/session"
	"github.com/switchboardgg/switchboard/internal/teststack"
)

// Two peers meet on a network and talk through its hub: alice sees bob
// join, bob broadcasts, and alice asks bob a question and gets his answer.
// The example starts its own deployment (control and a hub) in this
// process; a game logs in to its deployment's API instead.
func ExampleJoin() {
	dir, err := os.MkdirTemp("", "p2p-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	st, err := teststack.Start(ctx, dir, teststack.Config{Hub: true})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	// Each player logs in (here with auth tokens the backend mints) and
	// joins the network "lobby", made by the first join.
	join := func(user string) *p2p.Peer {
		auth, err := st.Backend.CreateAuthToken(ctx, user, 0)
		if err != nil {
			log.Fatal(err)
		}
		sc, err := session.Login(ctx, st.API, user, auth, nil)
		if err != nil {
			log.Fatal(err)
		}
		for {
			peer, err := p2p.Join(ctx, sc, p2p.JoinRequest{Network: "lobby"}, nil)
			if errors.Is(err, p2p.ErrHubUnavailable) { // the hub is starting
				time.Sleep(50 * time.Millisecond)
				continue
			}
			if err != nil {
				log.Fatal(err)
			}
			return peer
		}
	}
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
