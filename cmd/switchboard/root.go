package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=…"; otherwise
// the module version recorded in the binary is used.
var version = ""

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "switchboard",
		Short:         "Self-hosted multiplayer networking backend for games",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildVersion(), // --version, as the version verb
	}
	root.SetVersionTemplate(versionLine())
	root.AddCommand(newVersionCmd(), newDevCmd(), newServeCmd(), newRoomCmd(), newTicketCmd(), newBotsCmd(), newBenchCmd(), newNodeCmd(), newRelayCmd(), newP2PCmd())
	for _, c := range root.Commands() {
		refuseUnknownSubcommands(c)
	}
	return root
}

// refuseUnknownSubcommands makes every group of verbs below the root
// (room, serve, node, bench) fail on a verb it does not have, as the root
// does: cobra would print the group's help and exit 0, so that a script
// calling "switchboard room clsoe" would carry on as if it had worked.
// Without arguments a group still prints its help.
func refuseUnknownSubcommands(c *cobra.Command) {
	if !c.HasSubCommands() {
		return
	}
	if c.Run == nil && c.RunE == nil {
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			err := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				err += "; did you mean " + strings.Join(s, " or ") + "?"
			}
			return fmt.Errorf("%s (see %s --help)", err, cmd.CommandPath())
		}
	}
	for _, sub := range c.Commands() {
		refuseUnknownSubcommands(sub)
	}
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of this binary",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(cmd.OutOrStdout(), versionLine())
			return err
		},
	}
}

// versionLine is what `switchboard version` and `switchboard --version`
// print.
func versionLine() string {
	return fmt.Sprintf("switchboard %s %s/%s %s\n", buildVersion(), runtime.GOOS, runtime.GOARCH, runtime.Version())
}
