// Command switchboard is the one binary of Switchboard: `switchboard dev` runs
// the whole system in one process, `switchboard serve ROLE` runs one role
// against a NATS cluster, and the other verbs are clients and load generators.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "switchboard:", err)
		os.Exit(1)
	}
}
