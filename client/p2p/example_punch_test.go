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

// Alice punches a direct UDP path to bob through the hub's brokering;
// from then on her UDP messages to bob go straight to him, and both see
// the path change as an EventPath. Both peers are on one machine here (a
// deployment started in this process); across the internet the same
// calls punch through endpoint-independent NATs.
func ExamplePeer_Punch() {
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
			<-peer.Registered() // punching needs both peers registered on UDP
			return peer
		}
	}
	alice := join("alice")
	defer alice.Close()
	bob := join("bob")
	defer bob.Close()
	<-alice.Events() // bob joined
	<-bob.Events()   // alice was there

	fmt.Println("before:", alice.PathTo(bob.ID()))
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := alice.Punch(pctx, bob.ID(), p2p.PunchUDP); err != nil {
		log.Fatal(err) // errors.Is(err, p2p.ErrPunchFailed): no direct path, still on the hub
	}
	for _, p := range []*p2p.Peer{alice, bob} {
		for ev := range p.Events() {
			if ev.Type == p2p.EventPath {
				fmt.Println("path event:", ev.Path)
				break
			}
		}
	}
	if err := alice.SendUDP(ctx, bob.ID(), p2p.Envelope{Payload: []byte("hi, directly")}); err != nil {
		log.Fatal(err)
	}
	m := <-bob.Messages()
	fmt.Printf("bob got %q over %s\n", m.Payload, m.Path)
	// Output:
	// before: hub
	// path event: direct-udp
	// path event: direct-udp
	// bob got "hi, directly" over direct-udp
}
