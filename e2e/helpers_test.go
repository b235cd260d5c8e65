package e2e_test

import (
	"context"

	"github.com/switchboardgg/switchboard/client/backend"
	"github.com/switchboardgg/switchboard/client/rooms"
)

// botJoin logs a new player in and calls C1 only.
type botJoin struct {
	api  string
	be   *backend.Client
	room string
}

func (b *botJoin) join(ctx context.Context) error {
	auth, err := b.be.CreateAuthToken(ctx, "late-joiner", 0)
	if err != nil {
		return err
	}
	ticket, _, err := b.be.CreateTicket(ctx, b.room, backend.TicketRequest{Username: "late-joiner"})
	if err != nil {
		return err
	}
	c, err := rooms.Login(ctx, b.api, "late-joiner", auth, nil)
	if err != nil {
		return err
	}
	_, err = c.Join(ctx, b.room, rooms.JoinOptions{Ticket: ticket})
	return err
}
