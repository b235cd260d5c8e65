package store

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// testNode is a CommandHandler with canned answers per verb.
type testNode struct {
	drained atomic.Bool
}

func (n *testNode) Admit(_ context.Context, req *AdmitRequest) (*CommandReply, error) {
	if req.Settings.RoomID == "" {
		return nil, &CommandError{Code: CodeInvalidArgument, Message: "no room"}
	}
	r := &Room{RoomID: req.Settings.RoomID, MaxPlayers: req.Settings.MaxPlayers}
	r.PutSeat(Seat{Seat: req.Seat, Username: req.Username, SessionID: req.SessionID, Status: SeatJoined})
	return &CommandReply{Room: r}, nil
}

func (n *testNode) Start(_ context.Context, req *StartRequest) (*CommandReply, error) {
	return nil, &CommandError{Code: CodeConflict, Message: "room already started", Reason: "already_started"}
}

func (n *testNode) Close(_ context.Context, req *CloseRequest) (*CommandReply, error) {
	return nil, errors.New("disk on fire: secret=hunter2")
}

func (n *testNode) Kick(ctx context.Context, req *KickRequest) (*CommandReply, error) {
	<-ctx.Done() // never answers in time
	return nil, ctx.Err()
}

func (n *testNode) Leave(_ context.Context, req *LeaveRequest) (*CommandReply, error) {
	return &CommandReply{Error: &CommandError{Code: CodeNotFound, Message: "no such seat"}}, nil
}

func (n *testNode) Drain(context.Context, *DrainRequest) (*CommandReply, error) {
	n.drained.Store(true)
	return nil, nil
}

func TestCommands(t *testing.T) {
	e := newEnv(t)
	nodeConn, ctlConn := e.conn(), e.conn()
	node := &testNode{}
	stop, err := ServeCommands(nodeConn, "node-1", node)
	if err != nil {
		t.Fatalf("ServeCommands: %v", err)
	}
	ctx := context.Background()

	t.Run("admit", func(t *testing.T) {
		rep, err := SendCommand(ctx, ctlConn, "node-1", VerbAdmit, &AdmitRequest{Settings: newRoom("r1").Settings(), Seat: 1, Username: "alice", SessionID: "s1"})
		if err != nil {
			t.Fatalf("SendCommand: %v", err)
		}
		if !rep.OK || rep.Room == nil || rep.Room.Seat(1) == nil || rep.Room.Seat(1).Username != "alice" {
			t.Errorf("reply = %+v, want ok with alice at seat 1", rep)
		}
	})
	t.Run("admit malformed", func(t *testing.T) {
		_, err := SendCommand(ctx, ctlConn, "node-1", VerbAdmit, json.RawMessage(`[1,2]`))
		var ce *CommandError
		if !errors.As(err, &ce) || ce.Code != CodeInvalidArgument {
			t.Errorf("got %v, want invalid_argument", err)
		}
	})
	t.Run("command error", func(t *testing.T) {
		rep, err := SendCommand(ctx, ctlConn, "node-1", VerbStart, &StartRequest{RoomID: "r1"})
		var ce *CommandError
		if !errors.As(err, &ce) || ce.Code != CodeConflict || ce.Reason != "already_started" {
			t.Fatalf("got %v, want conflict already_started", err)
		}
		if rep == nil || rep.OK || rep.Error != ce {
			t.Errorf("reply = %+v, want not ok with the error", rep)
		}
	})
	t.Run("error in reply", func(t *testing.T) {
		_, err := SendCommand(ctx, ctlConn, "node-1", VerbLeave, &LeaveRequest{RoomID: "r1", Seat: 3, SessionID: "s1"})
		var ce *CommandError
		if !errors.As(err, &ce) || ce.Code != CodeNotFound {
			t.Errorf("got %v, want not_found", err)
		}
	})
	t.Run("internal error hides details", func(t *testing.T) {
		_, err := SendCommand(ctx, ctlConn, "node-1", VerbClose, &CloseRequest{RoomID: "r1", Reason: "closed_by_server", Result: json.RawMessage(`{"w":1}`)})
		var ce *CommandError
		if !errors.As(err, &ce) || ce.Code != CodeInternal {
			t.Fatalf("got %v, want internal", err)
		}
		if ce.Message != "internal error" {
			t.Errorf("message %q leaks the node's error", ce.Message)
		}
	})
	t.Run("no answer in time", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		_, err := SendCommand(ctx, ctlConn, "node-1", VerbKick, &KickRequest{RoomID: "r1", Seat: 0})
		if !errors.Is(err, ErrNodeUnavailable) {
			t.Errorf("got %v, want ErrNodeUnavailable", err)
		}
	})
	t.Run("drain", func(t *testing.T) {
		rep, err := SendCommand(ctx, ctlConn, "node-1", VerbDrain, &DrainRequest{})
		if err != nil || !rep.OK || !node.drained.Load() {
			t.Errorf("reply = %+v, %v, drained %v; want ok and drained", rep, err, node.drained.Load())
		}
	})
	t.Run("unserved node", func(t *testing.T) {
		if _, err := SendCommand(ctx, ctlConn, "node-2", VerbDrain, &DrainRequest{}); !errors.Is(err, ErrNodeUnavailable) {
			t.Errorf("got %v, want ErrNodeUnavailable", err)
		}
	})
	t.Run("invalid node id", func(t *testing.T) {
		if _, err := SendCommand(ctx, ctlConn, "node.*", VerbDrain, &DrainRequest{}); !errors.Is(err, ErrInvalidID) {
			t.Errorf("got %v, want ErrInvalidID", err)
		}
	})

	if err := stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	if err := stop(); err != nil {
		t.Errorf("second stop: %v", err)
	}
	if _, err := SendCommand(ctx, ctlConn, "node-1", VerbDrain, &DrainRequest{}); !errors.Is(err, ErrNodeUnavailable) {
		t.Errorf("after stop: got %v, want ErrNodeUnavailable", err)
	}
}

func TestCommandSubject(t *testing.T) {
	if got := CommandSubject("n1", VerbAdmit); got != "sb.node.n1.admit" {
		t.Errorf("got %q, want sb.node.n1.admit", got)
	}
	if _, err := ServeCommands(nil, "bad id", &testNode{}); !errors.Is(err, ErrInvalidID) {
		t.Errorf("ServeCommands(bad id): got %v, want ErrInvalidID", err)
	}
}
