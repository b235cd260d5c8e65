package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func newRelayCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "relay",
		Short: "Host and join through the relay (join codes); manage its API keys and nodes",
	}
	var nf apiFlags
	nodes := &cobra.Command{
		Use:   "nodes",
		Short: "List the live relay nodes: region, public addresses, load, draining",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := nf.backend()
			if err != nil {
				return err
			}
			ns, err := c.ListRelayNodes(cmd.Context())
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NODE_ID\tREGION\tUDP\tUDP6\tDTLS\tWS\tLOAD\tSTATE")
			for _, n := range ns {
				state := "serving"
				if n.Draining {
					state = "draining"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t%s\n", n.NodeID, orDash(n.Region), orDash(n.Addresses["udp"]),
					orDash(n.Addresses["udp6"]), orDash(n.Addresses["dtls"]), orDash(n.Addresses["ws"]), n.Load, state)
			}
			return w.Flush()
		},
	}
	nf.register(nodes)
	var df apiFlags
	drain := &cobra.Command{
		Use:   "drain NODE_ID",
		Short: "Drain a relay node: no new allocations go to it; it keeps relaying for its live ones",
		Args:  exactArgs(argRelayNode),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := df.backend()
			if err != nil {
				return err
			}
			n, err := c.DrainRelayNode(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "relay node %s draining (load %.2f)\n", n.NodeID, n.Load)
			return nil
		},
	}
	df.register(drain)
	nodes.AddCommand(drain)
	keys := &cobra.Command{
		Use:   "keys",
		Short: "Create, list and revoke relay API keys (the Bearer a game sends to /relay/v1)",
	}
	var cf apiFlags
	var project string
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a relay API key and print its secret (shown only once)",
		Args:  exactArgs(argKeyName),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := cf.backend()
			if err != nil {
				return err
			}
			k, err := c.CreateRelayKey(cmd.Context(), args[0], project)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "key_id  %s\nname    %s\nproject %s\nsecret  %s\n", k.KeyID, k.Name, k.Project, k.Secret)
			fmt.Fprintln(cmd.ErrOrStderr(), "keep the secret: it is not shown again; games send it as \"Authorization: Bearer <secret>\"")
			return nil
		},
	}
	cf.register(create)
	create.Flags().StringVar(&project, "project", "", "project the key belongs to: its allocations and join codes are shared by the project (default \"default\")")
	var lf apiFlags
	list := &cobra.Command{
		Use:   "list",
		Short: "List the relay API keys (without secrets)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := lf.backend()
			if err != nil {
				return err
			}
			ks, err := c.ListRelayKeys(cmd.Context())
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "KEY_ID\tPROJECT\tNAME\tCREATED")
			for _, k := range ks {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", k.KeyID, k.Project, k.Name, k.CreatedAt.UTC().Format("2006-01-02 15:04:05Z"))
			}
			return w.Flush()
		},
	}
	lf.register(list)
	var rf apiFlags
	revoke := &cobra.Command{
		Use:   "revoke KEY_ID",
		Short: "Revoke a relay API key: requests with it fail from then on",
		Args:  exactArgs(argKeyID),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := rf.backend()
			if err != nil {
				return err
			}
			if err := c.RevokeRelayKey(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "revoked", args[0])
			return nil
		},
	}
	rf.register(revoke)
	keys.AddCommand(create, list, revoke)
	cmd.AddCommand(keys, nodes)
	cmd.AddCommand(newRelayHostCmd(), newRelayJoinCmd(), newRelayRegionsCmd()) // relaychat.go
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
