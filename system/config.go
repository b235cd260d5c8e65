package system

import (
	"fmt"
	"log/slog"
	"net"

	"github.com/switchboardgg/switchboard/control"
	"github.com/switchboardgg/switchboard/node"
	"github.com/switchboardgg/switchboard/node/udp"
)

// Role is a set of the roles one process runs.
type Role uint

// The roles. Relay will be one more.
const (
	// RoleControl serves every HTTP API (client, server, health).
	RoleControl Role = 1 << iota
	// RoleNode runs a game node (WebSocket).
	RoleNode
	// RoleRelay runs the relay data plane (`switchboard serve relay`, or
	// `dev --relay`) when RelayConfig has a UDP, WebSocket or DTLS address, and
	// registers it in the node registry.
	RoleRelay

	// AllRoles is every role: what `switchboard dev` runs (the relay only
	// with --relay or --relay-ws).
	AllRoles = RoleControl | RoleNode | RoleRelay
)

// RoleHub runs the P2P hub (TLS); `switchboard dev --hub` adds it.
const RoleHub Role = 1 << 8

// knownRoles is every role Start knows.
const knownRoles = AllRoles | RoleHub

// String returns the roles' names joined by "+", such as "control+node".
func (r Role) String() string {
	var s string
	for _, n := range []struct {
		r    Role
		name string
	}{{RoleControl, "control"}, {RoleNode, "node"}, {RoleRelay, "relay"}, {RoleHub, "hub"}} {
		if r&n.r != 0 {
			if s != "" {
				s += "+"
			}
			s += n.name
		}
	}
	if s == "" {
		return fmt.Sprintf("Role(%d)", uint(r))
	}
	return s
}

// Defaults of [Config].
const (
	// DefaultDataDir is the data directory when Config.DataDir is empty,
	// relative to the working directory.
	DefaultDataDir = "switchboard-data"
	// DefaultListenAddr is the address of a listener whose Addr is empty:
	// loopback, a free port (read the real one from [System.Ready]).
	DefaultListenAddr = "127.0.0.1:0"
)

// Files in the data directory.
const (
	// LockFile is locked by the process that owns the data directory and
	// holds its pid.
	LockFile = "lock"
	// NodeIDFile keeps the game node's id across restarts.
	NodeIDFile = "node-id"
	// ServerKeyFile keeps the server API key generated when
	// APIConfig.ServerKey is empty.
	ServerKeyFile = "server-key"
)

// Config configures [Start]. Its zero value works: every role in one
// process, an embedded NATS server, every listener on 127.0.0.1 with a
// free port, data in DefaultDataDir. [Start] copies it and never changes
// the caller's struct.
type Config struct {
	// Roles are the roles to run. Zero means AllRoles.
	Roles Role
	// DataDir holds what this process keeps on disk: the lock, the node
	// id, the generated server key and certificate, and JetStream's files
	// when NATS is embedded. One process owns it at a time. Empty means
	// DefaultDataDir; it is created (mode 0700) if missing.
	DataDir string

	// NATS is the backbone every role connects to.
	NATS NATSConfig
	// TLS, when set, serves every TCP listener with TLS: the API (https),
	// the node's WebSocket (wss) and the admin listener (https). The
	// embedded NATS server's port is not one of them (credentials guard
	// it; bind it to loopback).
	TLS TLSConfig
	// API configures the control role.
	API APIConfig
	// Node configures the game node role.
	Node NodeConfig
	// Admin configures the admin listener (metrics, health, pprof).
	Admin AdminConfig
	// Relay configures the relay data plane's listeners; none by default.
	Relay RelayConfig
	// Hub configures the P2P hub role (RoleHub).
	Hub HubConfig

	// ReadyFile, when not empty, receives [Ready] as JSON, written
	// atomically once every role has started, and is removed by Close.
	ReadyFile string
	// Version is advertised in the node registry. Empty means none.
	Version string
	// Logger receives every component's logs, each with a "component"
	// attribute. Nil means slog.Default().
	Logger *slog.Logger
}

// NATSConfig says which NATS server the roles use.
type NATSConfig struct {
	// URL is the NATS server (or several, comma-separated) of a
	// deployment. Empty means an embedded server in this process, with
	// JetStream under DataDir/nats.
	URL string
	// Addr is the embedded server's client listen address, HOST:PORT.
	// Empty means DefaultListenAddr. Ignored with URL.
	Addr string
	// CredentialsFile is the NATS credentials the roles connect with: an
	// nkey seed file or a .creds file (backbone.Config.CredentialsFile).
	// Empty means none (or a user and password in URL). Ignored without
	// URL: the embedded server's generated nkey (DataDir/nats-user.nk) is
	// used.
	CredentialsFile string
}

// TLSConfig sets TLS on every TCP listener. The zero value means no TLS.
type TLSConfig struct {
	// CertFile and KeyFile are PEM files (certificate chain, private
	// key); both or neither. [System.ReloadTLS] reads them again.
	CertFile, KeyFile string
	// SelfSigned, without CertFile, generates a self-signed certificate
	// into DataDir (certs.SelfSigned) for localhost, 127.0.0.1, ::1 and
	// the listeners' hosts, and reuses it on later starts while it is
	// valid. For development: clients must pin its fingerprint.
	SelfSigned bool
}

// APIConfig configures the control role.
type APIConfig struct {
	// Addr is the listen address, HOST:PORT. Empty means
	// DefaultListenAddr.
	Addr string
	// Listener, when not nil, is used instead of Addr. Start takes it
	// over and closes it, on error too.
	Listener net.Listener
	// ServerKey is the server API key. Empty means the key kept in
	// DataDir/server-key, generated there on first start.
	ServerKey string
	// PublishServerKey writes the server key into the ready file and
	// [Ready] (`switchboard dev` does, for the tools on the same machine).
	PublishServerKey bool
	// Control tunes the control plane: rate limits, timeouts of the
	// hardened HTTP server, TTLs, AllowAnonymous. Start sets its DB,
	// Backbone, Signer, ServerKey, Logger and Registerer.
	Control control.Config
}

// NodeConfig configures the game node role.
type NodeConfig struct {
	// Addr is the WebSocket listen address, HOST:PORT. Empty means
	// DefaultListenAddr.
	Addr string
	// Listener, when not nil, is used instead of Addr (a test puts a
	// proxy in front of it, say). Start takes it over and closes it, on
	// error too.
	Listener net.Listener
	// ID is the node id: 1 to 64 letters, digits, '-' and '_', starting
	// with a letter or digit. Empty means the id kept in
	// DataDir/node-id, derived from the host name on first start.
	ID string
	// PublicURL is the WebSocket URL clients are told to dial. Empty
	// means ws:// (wss:// with TLS) of the bound address and node.Path.
	PublicURL string
	// Node tunes the game node: region, frame retention, limits. Start
	// sets its ID, WSURL, UDPAddr, Version, Signer, DB, Backbone, Logger
	// and Registerer.
	Node node.Config
	// UDPAddr is the listen address, HOST:PORT, of the node's UDP
	// channel (node/udp, docs/protocol/rooms-udp.md). Empty means the
	// node serves no UDP.
	UDPAddr string
	// UDPPublic is the UDP address clients are told (connect.udp). Empty
	// means the bound address.
	UDPPublic string
	// UDP tunes the UDP transport: MTU, timeouts, limits. Start sets its
	// Node, Signer, Logger and Registerer.
	UDP udp.Config
}

// AdminConfig configures the admin listener.
type AdminConfig struct {
	// Addr is the listen address, HOST:PORT. Empty means no admin
	// listener (unless Listener is set).
	Addr string
	// Listener, when not nil, is used instead of Addr. Start takes it
	// over and closes it, on error too.
	Listener net.Listener
	// Key is the admin key. Empty means the API's server key when this
	// process runs control.
	Key string
}

// withDefaults returns a copy of c with the zero fields filled in and
// checks it.
func (c Config) withDefaults() (Config, error) {
	if c.Roles == 0 {
		c.Roles = AllRoles
	}
	if c.Roles&^knownRoles != 0 {
		return c, fmt.Errorf("%w: unknown roles %d", ErrConfig, uint(c.Roles))
	}
	if !c.Relay.serves() && c.Roles&^RoleRelay != 0 {
		// No relay listener beside other roles (dev without --relay): the
		// relay does not run, and the roles (in the ready log line, say)
		// do not claim it.
		c.Roles &^= RoleRelay
	}
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir
	}
	if c.NATS.Addr == "" {
		c.NATS.Addr = DefaultListenAddr
	}
	if c.API.Addr == "" {
		c.API.Addr = DefaultListenAddr
	}
	if c.Node.Addr == "" {
		c.Node.Addr = DefaultListenAddr
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		return c, fmt.Errorf("%w: a TLS certificate needs both a certificate and a key file", ErrConfig)
	}
	if c.Node.ID != "" {
		if err := ValidNodeID(c.Node.ID); err != nil {
			return c, err
		}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}

// tlsEnabled reports whether the listeners serve TLS.
func (c *Config) tlsEnabled() bool { return c.TLS.CertFile != "" || c.TLS.SelfSigned }
