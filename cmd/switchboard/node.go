package main

import (
	"github.com/spf13/cobra"
)

func newNodeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "node",
		Short: "List and drain game nodes through the server API",
	}
	var lf apiFlags
	list := &cobra.Command{
		Use:   "list",
		Short: "List the live game nodes",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := lf.backend()
			if err != nil {
				return err
			}
			nodes, err := c.ListNodes(cmd.Context())
			if err != nil {
				return err
			}
			return printJSON(cmd.OutOrStdout(), map[string]any{"nodes": nodes})
		},
	}
	lf.register(list)
	var df apiFlags
	drain := &cobra.Command{
		Use:   "drain NODE_ID",
		Short: "Drain a game node: its players get ERROR 10 and it takes no new rooms",
		Args:  exactArgs(argNodeID),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := df.backend()
			if err != nil {
				return err
			}
			n, err := c.DrainNode(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printJSON(cmd.OutOrStdout(), map[string]any{"node": n})
		},
	}
	df.register(drain)
	cmd.AddCommand(list, drain)
	return cmd
}
