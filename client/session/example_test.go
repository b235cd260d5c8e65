package session_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"os"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/client/session"
	"github.com/switchboardgg/switchboard/internal/teststack"
)

// A player logs in with the auth token its game backend minted, makes an
// authenticated call, and logs out. The example starts its own control
// plane and game node in this process; a game points Login at its
// deployment's API instead.
func ExampleLogin() {
	dir, err := os.MkdirTemp("", "session-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	stack, err := teststack.Start(ctx, dir, teststack.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	defer stack.Close()
	defer http.DefaultTransport.(*http.Transport).CloseIdleConnections()

	// The game backend mints the player's auth token.
	authToken, err := stack.Backend.CreateAuthToken(ctx, "alice", 0)
	if err != nil {
		log.Fatal(err)
	}

	// The player.
	c, err := session.Login(ctx, stack.API, "alice", authToken, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("logged in as", c.Session().Username)

	var cur api.CurrentResponse
	if _, err := c.Do(ctx, http.MethodGet, "/client/v1/game/current", nil, &cur); err != nil {
		log.Fatal(err)
	}
	fmt.Println("in a room:", cur.Room != nil)

	if err := c.Logout(ctx); err != nil {
		log.Fatal(err)
	}
	_, err = c.Do(ctx, http.MethodGet, "/client/v1/game/current", nil, &cur)
	fmt.Println("after logout:", errors.Is(err, session.ErrUnauthenticated))
	// Output:
	// logged in as alice
	// in a room: false
	// after logout: true
}
