package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/switchboardgg/switchboard/bench"
	"github.com/switchboardgg/switchboard/client/rooms"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// TestFlagValueNames: pflag takes a word in backquotes in a flag's help as
// the name of its value; every flag of every verb must render as "--flag
// NAME", never as "--ready-file switchboard dev".
func TestFlagValueNames(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			name, usage := pflag.UnquoteUsage(f)
			if strings.ContainsAny(name, " \t") || usage == "" {
				t.Errorf("%s --%s renders as %q: %q", c.CommandPath(), f.Name, "--"+f.Name+" "+name, usage)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
}

// TestVersionFlag: --version prints what the version verb prints.
func TestVersionFlag(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		root := newRootCmd()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			t.Fatalf("switchboard %v: %v", args, err)
		}
		if out.String() != versionLine() {
			t.Errorf("switchboard %v printed %q, want %q", args, out.String(), versionLine())
		}
	}
}

// TestUnknownSubcommand: a verb a group does not have is an error (exit
// non-zero), with a suggestion when one is close; the bare group prints its
// help and succeeds.
func TestUnknownSubcommand(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string // "" means success
	}{
		{[]string{"room", "frob"}, `unknown command "frob" for "switchboard room"`},
		{[]string{"room", "clos"}, "did you mean close?"},
		{[]string{"serve", "frob"}, `unknown command "frob" for "switchboard serve"`},
		{[]string{"node", "frob"}, `unknown command "frob" for "switchboard node"`},
		{[]string{"bench", "frob"}, `unknown command "frob" for "switchboard bench"`},
		{[]string{"room"}, ""},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			root := newRootCmd()
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&out)
			root.SetArgs(tc.args)
			err := root.Execute()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("got error %v, want success", err)
			case tc.wantErr == "" && !strings.Contains(out.String(), "Usage:"):
				t.Errorf("got output %q, want the help", out.String())
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("got error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestWatchFormat: room watch names room states and member kinds, as the
// README shows them, never raw numbers.
func TestWatchFormat(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{formatJoined("tour-1", rooms.State{Seat: 1, MaxPlayers: 4, SyncMode: roomwire.SyncFrame, TickRate: 10, RoomState: roomwire.StatePlaying}),
			"joined room tour-1 in seat 1 of 4 (frame sync at 10 Hz); room playing"},
		{formatJoined("r", rooms.State{MaxPlayers: 2, SyncMode: roomwire.SyncRelay, RoomState: roomwire.StateWaiting}),
			"joined room r in seat 0 of 2 (relay); room waiting"},
		{formatMember(rooms.Member{Seat: 0, Username: "alice"}), "member seat 0 alice offline"},
		{formatMember(rooms.Member{Seat: 2, Username: "bot", Online: true}), "member seat 2 bot online"},
		{formatEvent(rooms.Event{Kind: rooms.EventMember, Seat: 0, Username: "alice", MemberKind: roomwire.MemberLeft, Reason: "timeout"}),
			"member seat 0 alice left timeout"},
		{formatEvent(rooms.Event{Kind: rooms.EventMember, Seat: 3, Username: "bob", MemberKind: roomwire.MemberOnline}),
			"member seat 3 bob online"},
		{formatEvent(rooms.Event{Kind: rooms.EventRoomState, State: roomwire.StatePlaying, StartFrame: 1}), "room playing from frame 1"},
		{formatEvent(rooms.Event{Kind: rooms.EventRoomState, State: roomwire.StateEnding, Reason: "closed_by_server", Result: []byte(`{"winner":"alice"}`)}),
			`room ending closed_by_server result {"winner":"alice"}`},
		{formatEvent(rooms.Event{Kind: rooms.EventClosed, Err: &rooms.NodeError{Code: roomwire.CodeRoomClosed}, Reason: "expired"}),
			"room closed expired"},
		{formatEvent(rooms.Event{Kind: rooms.EventResumed, Rejoined: true}), "reconnected (joined again)"},
		{formatFrame(rooms.Frame{Number: 7, Inputs: []rooms.Input{{Seat: 1, Data: []byte{0xab}}}}), "frame 7 [seat 1: ab]"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// TestDescribe: the errors of client verbs name what failed, not the
// packages of this program.
func TestDescribe(t *testing.T) {
	cause := errors.New("http 404 not_found: room not found")
	err := fmt.Errorf("wrapped: %w", &bench.StageError{Username: "watch-1", Stage: bench.StageTicket, Err: cause})
	if got, want := describe(err), "getting a join ticket: http 404 not_found: room not found"; got != want {
		t.Errorf("describe(stage error) = %q, want %q", got, want)
	}
	if got, want := describe(errors.New("bench: create room 0: refused")), "create room 0: refused"; got != want {
		t.Errorf("describe = %q, want %q", got, want)
	}
}
