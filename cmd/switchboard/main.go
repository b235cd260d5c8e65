// Command switchboard is the one binary of Switchboard: `switchboard dev` runs
// the whole system in one process, `switchboard serve ROLE` runs one role
// against a NATS cluster, and the other verbs are clients and load generators.
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/switchboardgg/switchboard/bench"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "switchboard:", err)
		os.Exit(1)
	}
}

// describe returns err as people at a terminal read it: a bot's failure as
// the step it failed at and the cause, and no "bench:" prefix, which names
// a package of this program rather than something the user did.
func describe(err error) string {
	var se *bench.StageError
	if errors.As(err, &se) {
		return se.Stage + ": " + se.Err.Error()
	}
	return strings.TrimPrefix(err.Error(), "bench: ")
}
