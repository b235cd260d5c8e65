package rooms_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/switchboardgg/switchboard/client/backend"
	"github.com/switchboardgg/switchboard/client/rooms"
)

// A game loop: log in, join with the ticket the game backend issued, apply
// frames in order, send one input per frame, and leave. The example starts
// its own control plane and game node in this process (launch); a game
// points Login at its deployment's API instead.
func ExampleClient_Connect() {
	d, err := launch()
	if err != nil {
		log.Fatal(err)
	}
	defer d.close()
	ctx := context.Background()

	// The game backend creates the room and issues the player's tokens.
	spec, err := d.createRoom(ctx, backend.CreateRoomRequest{SyncMode: "frame", TickRate: new(30), MaxPlayers: new(2), StartMode: "all_ready"})
	if err != nil {
		log.Fatal(err)
	}
	authToken, err := d.be.CreateAuthToken(ctx, "alice", 0)
	if err != nil {
		log.Fatal(err)
	}
	joinTicket, _, err := d.be.CreateTicket(ctx, spec.RoomID, backend.TicketRequest{Username: "alice"})
	if err != nil {
		log.Fatal(err)
	}

	// The player.
	c, err := rooms.Login(ctx, d.api, "alice", authToken, nil)
	if err != nil {
		log.Fatal(err)
	}
	room, err := c.Connect(ctx, spec.RoomID, rooms.JoinOptions{Ticket: joinTicket})
	switch {
	case errors.Is(err, rooms.ErrRoomFull):
		log.Fatal("the room is full")
	case err != nil:
		log.Fatal(err)
	}
	defer room.Close()
	fmt.Println("seat", room.State().Seat)
	if err := room.Ready(); err != nil {
		log.Fatal(err)
	}

	var state []byte // the game's state
	for playing := true; playing; {
		select {
		case f := <-room.Frames():
			if f.Restore {
				state = append(state[:0], f.Snapshot...)
				continue
			}
			for _, in := range f.Inputs {
				state = append(state, in.Data...) // apply in.Data for in.Seat
			}
			fmt.Println("frame", f.Number)
			_ = room.SendInput([]byte{byte(f.Number)}) // ErrNotConnected while reconnecting
			playing = f.Number < 3
		case ev := <-room.Events(): // drain both channels
			if ev.Kind == rooms.EventClosed {
				log.Fatal(ev.Err)
			}
		}
	}
	if err := room.Leave(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println(errors.Is(room.Err(), rooms.ErrClosed))
	// Output:
	// seat 0
	// frame 1
	// frame 2
	// frame 3
	// true
}

// After an app restart: rebuild the client from the saved session, find the
// room this login session holds (C3) and connect again, asking for the frames
// from the start. (Compile-only: it needs a saved session.)
func ExampleNewClient() {
	ctx := context.Background()
	var saved rooms.Session // json.Unmarshal'ed from storage
	c, err := rooms.NewClient("http://127.0.0.1:7350", saved, nil)
	if err != nil {
		log.Fatal(err)
	}
	cur, err := c.Current(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if cur.Room == nil {
		return
	}
	room, err := c.Connect(ctx, cur.Room.RoomID, rooms.JoinOptions{FromStart: true})
	if err != nil {
		log.Fatal(err)
	}
	defer room.Close()
}
