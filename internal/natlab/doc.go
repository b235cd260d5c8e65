// Package natlab builds, for one test, the NAT topology of
// shared/reference/nat-lab.md out of Linux network namespaces and nftables,
// so hole punching is tested through real NAT on one machine:
//
//	             wan (a bridge, in its own namespace)
//	    ┌────────────────┼─────────────────┐
//	   hub             natA              natB
//	198.18.0.1       198.18.0.2        198.18.0.3       (WAN side, wan0)
//	                 198.19.1.1        198.19.2.1       (LAN side, lan0)
//	                    │                  │
//	                  peer a             peer b
//	                198.19.1.2         198.19.2.2       (eth0, default route via its NAT)
//
// Each NAT forwards, masquerades what leaves wan0 ([EIM]: plain
// `masquerade`, port-preserving with an endpoint-independent mapping;
// [Symmetric]: `masquerade random`, a new port per destination), forwards
// from the LAN and established traffic only, and drops unsolicited packets
// to itself in the WAN input hook — without that rule an early punch packet
// leaves a conntrack entry that turns the NAT symmetric for the pair (the
// pitfall nat-lab.md describes). The hub namespace counts the UDP and TCP
// packets that reach it ([Lab.HubCount]); [Lab.Block] inserts a drop rule
// at one NAT to break a direct path, and its undo removes it.
//
// # Requirements
//
// Root, iproute2 (`ip`) and nftables (`nft`). [New] skips the test with
// the reason when they are missing outside CI, and fails it inside CI (the
// CI environment variable is set), where scripts/test installs them.
//
// # Names, processes and cleanup
//
// Every lab has its own namespaces, named with a random prefix, so tests
// and packages can build labs in parallel; addresses repeat across labs
// (namespaces do not share them). t.Cleanup deletes the namespaces, which
// removes their interfaces and rulesets, whatever the test did. Code runs
// in a namespace either as a process ([Lab.Command]: `ip netns exec`) or
// in this process ([Lab.Do]: the calling goroutine's OS thread enters the
// namespace, so sockets opened by fn belong to it and keep working after
// Do returns). natlab starts no goroutines; commands are the caller's to
// wait for.
package natlab
