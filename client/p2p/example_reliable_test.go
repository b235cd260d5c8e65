package p2p_test

import (
	"context"
	"fmt"
	"log"

	"github.com/switchboardgg/switchboard/client/p2p"
)

// Alice sends bob a 256 KiB file on Ch1, in 32 KiB messages, and a
// Realtime message that does not wait for the file; bob reads both
// channels from Reliable. Both peers are on UDP through the hub of a
// deployment started in this process.
func ExamplePeer_SendReliable() {
	ctx := context.Background()
	join, stop := exampleDeployment(ctx)
	defer stop()
	alice := join("alice")
	defer alice.Close()
	bob := join("bob")
	defer bob.Close()
	<-alice.Events() // bob joined

	file := make([]byte, 256<<10)
	go func() {
		for off := 0; off < len(file); off += 32 << 10 {
			if err := alice.SendReliable(ctx, bob.ID(), p2p.Ch1, p2p.Envelope{Header: "file", Payload: file[off : off+32<<10]}); err != nil {
				log.Fatal(err)
			}
		}
	}()
	if err := alice.SendReliable(ctx, bob.ID(), p2p.Realtime, p2p.Envelope{Header: "pos", Payload: []byte("x=3 y=4")}); err != nil {
		log.Fatal(err)
	}

	got, realtime := 0, false
	for got < len(file) || !realtime {
		m := <-bob.Reliable()
		switch m.Channel {
		case p2p.Realtime:
			fmt.Printf("realtime from alice: %s %s\n", m.Header, m.Payload)
			realtime = true
		case p2p.Ch1:
			got += len(m.Payload)
		}
	}
	fmt.Printf("file: %d bytes on %s\n", got, p2p.Ch1)
	// Output:
	// realtime from alice: pos x=3 y=4
	// file: 262144 bytes on ch1
}
