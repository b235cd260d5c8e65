package p2p_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/switchboardgg/switchboard/client/p2p"
)

// Alice punches a direct UDP path to bob through the hub's brokering;
// from then on her UDP messages to bob go straight to him, and both see
// the path change as an EventPath. Both peers are on one machine here (a
// deployment started in this process); across the internet the same
// calls punch through endpoint-independent NATs.
func ExamplePeer_Punch() {
	ctx := context.Background()
	join, stop := exampleDeployment(ctx)
	defer stop()
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
