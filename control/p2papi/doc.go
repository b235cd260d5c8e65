// Package p2papi serves the HTTP API of the P2P pillar, /p2p/v1: a
// logged-in player joins a network by name or join code and gets the
// address and certificate fingerprint of the network's hub and a sealed,
// short-lived hub ticket (tokens.HubKeyring) for the HELLO of the hub's
// protocol (docs/protocol/p2p.md); a game backend, with the server API
// key, creates networks with a join code, an allow list or a peer cap,
// lists them and their peers, kicks peers and bans users. Package control
// mounts its [Server.Routes] beside the rooms API.
//
// A network is created by its first join (open to every logged-in user,
// DefaultMaxPeers peers) unless the server API created it first. It lives
// on one hub, the least loaded live hub of the store's registry at its
// creation, recorded in the network's record (store.P2PNetwork); when
// that hub has left the registry or drains, the next join moves the
// network to another. Peer ids are made here, per join, as
// <username>~<random>, and sealed into the ticket, so that the hub admits
// a peer with no lookup. A network's peer cap is checked at the join
// against the peers the hub reports (409 network_full); joins in flight at
// once may overshoot it, and the hub's own cap per network holds
// regardless (ERROR network_full).
//
// The peer list, kick and ban reach the network's hub as commands over
// NATS (store.SendHubCommand); a ban is also written to the network's
// record, so that the API refuses the user's next join.
//
// # Goroutines
//
// [New] starts nothing; handlers run in the goroutine of their request.
// The DB, backbone connection and keyring in Config belong to the caller.
package p2papi
