package rooms_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/switchboardgg/switchboard/client/rooms"
)

// A game loop: log in, join with the ticket the game backend issued, apply
// frames in order, send one input per frame, and leave at the end.
//
// This example needs a running deployment (switchboard dev), so it has no
// Output and only compiles under go test.
func ExampleClient_Connect() {
	ctx := context.Background()
	apiURL, authToken, joinTicket := "http://127.0.0.1:7350", "sat1.…", "gtk_…"

	c, err := rooms.Login(ctx, apiURL, "alice", authToken, &rooms.Config{SnapshotInterval: 300})
	if err != nil {
		log.Fatal(err)
	}
	room, err := c.Connect(ctx, "rank-8812", rooms.JoinOptions{Ticket: joinTicket})
	switch {
	case errors.Is(err, rooms.ErrRoomFull):
		log.Fatal("the room is full")
	case err != nil:
		log.Fatal(err)
	}
	defer room.Close()
	if err := room.Ready(); err != nil {
		log.Fatal(err)
	}

	var state []byte // the game's state
	deadline := time.After(time.Minute)
	for {
		select {
		case f, ok := <-room.Frames():
			if !ok {
				fmt.Println("ended:", room.Err())
				return
			}
			if f.Restore {
				state = append(state[:0], f.Snapshot...)
				continue
			}
			for _, in := range f.Inputs {
				state = append(state, in.Seat) // apply in.Data for in.Seat
			}
			if f.SnapshotDue {
				_ = room.PutSnapshot(f.Number, state)
			}
			_ = room.SendInput([]byte{1}) // ErrNotConnected while reconnecting
		case ev, ok := <-room.Events():
			if !ok {
				continue
			}
			if ev.Kind == rooms.EventClosed && errors.Is(ev.Err, rooms.ErrRoomClosed) {
				fmt.Printf("match over (%s): %s\n", ev.Reason, ev.Result)
			}
		case <-deadline:
			if err := room.Leave(ctx); err != nil {
				log.Print(err)
			}
			return
		}
	}
}

// After an app restart: rebuild the client from the saved session, find the
// room this login session holds (C3) and connect again, asking for the frames
// from the start.
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
