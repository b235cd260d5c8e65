package main

import (
	"github.com/spf13/pflag"

	"github.com/switchboardgg/switchboard/p2p"
)

// defaultHubAddr is the hub's TLS listen address in dev and serve hub.
const defaultHubAddr = "127.0.0.1:7740"

// addHubFlags registers the hub role's address and limits.
func addHubFlags(f *pflag.FlagSet, o *systemOptions, addrFlag string) {
	h := &o.cfg.Hub
	f.StringVar(&h.Addr, addrFlag, defaultHubAddr, "P2P hub TLS listen address")
	f.StringVar(&h.PublicAddr, "hub-public-addr", "", "HOST:PORT clients are told to dial for the hub (default: the bound address)")
	c := &h.Hub
	f.Float64Var(&c.PeerMessageRate, "hub-peer-rate", p2p.DefaultPeerMessageRate, "routed messages per second a peer may send; negative turns the limit off")
	f.Float64Var(&c.PeerBandwidth, "hub-peer-bandwidth", p2p.DefaultPeerBandwidth, "routed bytes per second a peer may send; negative turns the limit off")
	f.Float64Var(&c.NetworkBandwidth, "hub-network-bandwidth", p2p.DefaultNetworkBandwidth, "routed bytes per second of one network's peers together; negative turns the limit off")
	f.IntVar(&c.MaxPeersPerNetwork, "hub-max-peers", p2p.DefaultMaxPeersPerNetwork, "peers per network (at most 4096)")
	f.IntVar(&c.MaxConns, "hub-max-conns", p2p.DefaultMaxConns, "TLS connections the hub accepts at once")
	f.IntVar(&c.SendQueueBytes, "hub-send-queue", p2p.DefaultSendQueueBytes, "bytes queued for one peer before it is dropped as too slow")
	f.Float64Var(&c.PeerDatagramRate, "hub-peer-datagram-rate", p2p.DefaultPeerDatagramRate, "datagrams per second the hub's UDP port takes from one peer, REGISTER and PING included (a broadcast counts once per recipient); negative turns the limit off")
	f.Float64Var(&c.STUNRatePerSource, "hub-stun-rate", p2p.DefaultSTUNRatePerSource, "STUN binding answers per second per source address")
	f.Float64Var(&c.PunchRate, "hub-punch-rate", p2p.DefaultPunchRate, "hole-punch requests per second a peer may send (burst 4); negative turns the limit off")
	f.IntVar(&c.MaxPunchesPerPeer, "hub-max-punches", p2p.DefaultMaxPunchesPerPeer, "hole punches one peer may have in flight (until their deadline or both results)")
	f.BoolVar(&c.DisableUDP, "hub-no-udp", false, "serve no UDP port: WELCOME hands out no UDP key")
	f.DurationVar(&c.ResumeWindow, "hub-resume-window", p2p.DefaultResumeWindow, "how long a peer id outlives a lost connection; negative: no resuming")
}
