package relay_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"os"

	"github.com/switchboardgg/switchboard/client/relay"
	"github.com/switchboardgg/switchboard/client/session"
	"github.com/switchboardgg/switchboard/internal/teststack"
)

// A host allocates on the relay and shares its join code; a player joins
// with the code, and the two exchange messages through the relay node.
// The example starts its own deployment (control plane and relay node)
// in this process; a game points Login at its deployment's API instead.
func ExampleClient_Host() {
	dir, err := os.MkdirTemp("", "relay-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	stack, err := teststack.Start(ctx, dir, teststack.Config{Relay: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	defer stack.Close()
	defer http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	login := func(name string) *relay.Client {
		token, err := stack.Backend.CreateAuthToken(ctx, name, 0) // the game backend's job
		if err != nil {
			log.Fatal(err)
		}
		sc, err := session.Login(ctx, stack.API, name, token, nil)
		if err != nil {
			log.Fatal(err)
		}
		return relay.New(sc, &relay.Config{Logger: slog.New(slog.DiscardHandler)})
	}

	// The host: allocate in the region with the lowest RTT, make the join
	// code, bind.
	host, err := login("alice").Host(ctx, relay.AllocateRequest{MaxConnections: 4})
	if err != nil {
		log.Fatal(err)
	}
	defer host.Close()
	fmt.Println("join code length:", len(host.JoinCode()))

	// A player, with the code the host shared.
	bob := login("bob")
	player, err := bob.Join(ctx, host.JoinCode())
	if err != nil {
		log.Fatal(err)
	}
	defer player.Close()
	if err := player.Send(ctx, player.HostID(), []byte("hello, host")); err != nil {
		log.Fatal(err)
	}

	buf := make([]byte, relay.DefaultMaxPayload)
	n, from, err := host.Recv(ctx, buf)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("host got %q from the player: %v\n", buf[:n], from == player.ID())
	if err := host.Send(ctx, from, []byte("welcome")); err != nil {
		log.Fatal(err)
	}
	n, _, err = player.Recv(ctx, buf)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("player got %q\n", buf[:n])
	// Output:
	// join code length: 6
	// host got "hello, host" from the player: true
	// player got "welcome"
}
