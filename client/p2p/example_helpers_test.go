package p2p_test

import (
	"context"
	"errors"
	"log"
	"os"
	"time"

	"github.com/switchboardgg/switchboard/client/p2p"
	"github.com/switchboardgg/switchboard/client/session"
	"github.com/switchboardgg/switchboard/internal/teststack"
)

// exampleDeployment starts a deployment (control and a hub) in this
// process for the examples, and returns how a player joins it: log in
// (here with an auth token the backend mints), join the network "lobby"
// (made by the first join) and wait until the hub has the peer's UDP
// registration. A game logs in to its deployment's API instead.
func exampleDeployment(ctx context.Context) (join func(user string) *p2p.Peer, stop func()) {
	dir, err := os.MkdirTemp("", "p2p-example")
	if err != nil {
		log.Fatal(err)
	}
	st, err := teststack.Start(ctx, dir, teststack.Config{Hub: true})
	if err != nil {
		os.RemoveAll(dir)
		log.Fatal(err)
	}
	join = func(user string) *p2p.Peer {
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
			<-peer.Registered() // UDP through the hub works from here on
			return peer
		}
	}
	return join, func() {
		st.Close()
		os.RemoveAll(dir)
	}
}
