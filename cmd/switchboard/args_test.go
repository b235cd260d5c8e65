package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// run executes switchboard with args and returns its error.
func run(args ...string) error {
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	return root.Execute()
}

// TestArgMessages: a verb run without its positional arguments says which
// are missing, in words, and where to find them; one run with a word too
// many quotes it. main prints the error and exits 1.
func TestArgMessages(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"relay", "join"}, "relay join: missing the join code (the host prints it: `switchboard relay host`)"},
		{[]string{"relay", "join", "ABCDEF", "x"},
			`relay join: unexpected argument "x": it takes only the join code, then flags (see switchboard relay join --help)`},
		{[]string{"relay", "host", "ABCDEF"},
			`relay host: unexpected argument "ABCDEF": it takes flags only (see switchboard relay host --help)`},
		{[]string{"room", "kick", "r1"}, "room kick: missing the seat number (`switchboard room get ROOM_ID` lists the seats)"},
		{[]string{"ticket"},
			"ticket: missing the room id (`switchboard room list` lists them) and the player's username"},
		{[]string{"room", "create", "a", "b"},
			`room create: unexpected argument "b": it takes only the id of the new room, then flags (see switchboard room create --help)`},
		{[]string{"relay", "keys", "revoke"}, "relay keys revoke: missing the key id (`switchboard relay keys list` lists them)"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			err := run(tc.args...)
			if err == nil || err.Error() != tc.want {
				t.Errorf("got error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestEveryVerbNamesItsArgs walks every verb: one whose usage line names
// positional arguments (upper-case words not after a flag) must say
// "VERB: missing …" without them, and every verb must refuse a word too
// many with "VERB: unexpected argument". Both are checked before the verb
// runs, so nothing here dials anything.
func TestEveryVerbNamesItsArgs(t *testing.T) {
	var withArgs []string // verbs with required arguments
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if !c.Runnable() || c.HasSubCommands() || c.Name() == "help" || c == c.Root() {
			return
		}
		path := strings.Fields(c.CommandPath())[1:]
		name := strings.Join(path, " ")
		var required []string
		words := strings.Fields(c.Use)[1:]
		for i, w := range words {
			afterFlag := i > 0 && strings.HasPrefix(words[i-1], "-")
			if !afterFlag && !strings.HasPrefix(w, "-") && !strings.HasPrefix(w, "[") && w == strings.ToUpper(w) {
				required = append(required, w)
			}
		}
		if len(required) > 0 {
			withArgs = append(withArgs, name)
			err := run(path...)
			if err == nil || !strings.HasPrefix(err.Error(), name+": missing ") {
				t.Errorf("%s without %v: got error %v, want %q…", name, required, err, name+": missing ")
			}
		}
		extra := append(append(path, required...), "surplus1", "surplus2")
		err := run(extra...)
		if err == nil || !strings.HasPrefix(err.Error(), name+": unexpected argument ") {
			t.Errorf("%s with a word too many: got error %v, want %q…", name, err, name+": unexpected argument ")
		}
	}
	walk(newRootCmd())
	if !strings.Contains(strings.Join(withArgs, ","), "relay join") || len(withArgs) < 10 {
		t.Fatalf("the walk found only %q with positional arguments; it misreads the usage lines", withArgs)
	}
}
