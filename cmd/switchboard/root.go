package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

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
	root.AddCommand(newVersionCmd(), newDevCmd(), newServeCmd(), newRoomCmd(), newTicketCmd(), newBotsCmd(), newBenchCmd(), newNodeCmd(), newP2PCmd())
	return root
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
		Args:  cobra.NoArgs,
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
