package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// The positional arguments of the verbs, checked with messages that say
// in words what is missing or extra. cobra's own checks print "accepts 1
// arg(s), received 0", which names neither the verb nor the argument.

// posArg is one positional argument of a verb.
type posArg struct {
	name string // "the join code"
	hint string // where to find it, shown when it is missing; may be ""
}

// verbName is the command path without the program's name: "relay join".
func verbName(cmd *cobra.Command) string {
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}

// exactArgs takes the arguments want, in order: "relay join: missing the
// join code (the host prints it: …)" when one is missing.
func exactArgs(want ...posArg) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < len(want) {
			var missing []string
			for _, a := range want[len(args):] {
				s := a.name
				if a.hint != "" {
					s += " (" + a.hint + ")"
				}
				missing = append(missing, s)
			}
			return fmt.Errorf("%s: missing %s", verbName(cmd), strings.Join(missing, " and "))
		}
		return tooMany(cmd, args, want)
	}
}

// optionalArg takes a, or nothing.
func optionalArg(a posArg) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		return tooMany(cmd, args, []posArg{a})
	}
}

// noArgs takes none: a word after such a verb is most often a flag
// without its dashes or a value without its flag.
func noArgs(cmd *cobra.Command, args []string) error {
	return tooMany(cmd, args, nil)
}

// tooMany fails when there are more args than want, quoting the first
// extra one.
func tooMany(cmd *cobra.Command, args []string, want []posArg) error {
	if len(args) <= len(want) {
		return nil
	}
	takes := "takes flags only"
	if len(want) > 0 {
		var names []string
		for _, a := range want {
			names = append(names, a.name)
		}
		takes = "takes only " + strings.Join(names, " and ") + ", then flags"
	}
	return fmt.Errorf("%s: unexpected argument %q: it %s (see %s --help)",
		verbName(cmd), args[len(want)], takes, cmd.CommandPath())
}

// The positional arguments the verbs take.
var (
	argJoinCode  = posArg{"the join code", "the host prints it: `switchboard relay host`"}
	argRoomID    = posArg{"the room id", "`switchboard room list` lists them"}
	argNodeID    = posArg{"the node id", "`switchboard node list` lists them"}
	argRelayNode = posArg{"the relay node id", "`switchboard relay nodes` lists them"}
	argKeyName   = posArg{"a name for the key", "any words, to tell keys apart in `switchboard relay keys list`"}
	argKeyID     = posArg{"the key id", "`switchboard relay keys list` lists them"}
	argSeat      = posArg{"the seat number", "`switchboard room get ROOM_ID` lists the seats"}
	argUsername  = posArg{"the player's username", ""}
	argNewRoomID = posArg{"the id of the new room", ""}
)
