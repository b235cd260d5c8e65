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

// Alice sends bob a 256 KiB file on Ch1, in 32 KiB messages, and a
// Realtime message that does not wait for the file; bob reads both
// channels from Reliable. Both peers are on UDP through the hub of a
// deployment started in this process.
func ExamplePeer_SendReliable() {
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
			<-peer.Registered() // UDP through the hub works
			return peer
		}
	}
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
