package node

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchboardgg/switchboard/backbone"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
	"github.com/switchboardgg/switchboard/rooms"
	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/tokens"
)

// Subprotocol is the WebSocket subprotocol a client must offer.
const Subprotocol = roomwire.Subprotocol

// Path is where the node serves WebSocket connections.
const Path = "/game/v1/ws"

// Defaults of [Config].
const (
	// DefaultMaxRooms bounds the rooms one node runs.
	DefaultMaxRooms = rooms.DefaultMaxRooms
	// DefaultMaxConnections bounds the WebSocket connections of one node,
	// handshaking ones included. Upgrades beyond it get HTTP 503.
	DefaultMaxConnections = 50000
	// DefaultMaxPending bounds the connections waiting for their
	// im.game.v1 handshake, from the TCP accept on: accepts beyond it are
	// closed at once, so that connections that never send their handshake
	// cannot fill MaxConnections.
	DefaultMaxPending = 4096
	// DefaultMaxPendingPerSource bounds the connections waiting for their
	// handshake from one IPv4 address or one IPv6 /64. It is above the
	// joins a bench or a LAN behind one NAT opens at once.
	DefaultMaxPendingPerSource = 256
	// DefaultSendQueueDepth is the number of messages queued for one
	// connection; a connection whose queue is full is dropped (it may
	// resume). The answer to a handshake (WELCOME and a resume's
	// catch-up) does not count.
	DefaultSendQueueDepth = 256
	// DefaultMaxQueueBytes bounds the bytes queued for one connection,
	// the batch being written included; past it the connection is
	// dropped as when its queue is full. The answer to a handshake does
	// not count: a resume's catch-up (WELCOME, SNAPSHOT and up to every
	// frame the room keeps in FRAME_BATCH messages — 7.6 MB per 60 s of
	// frames at 60 Hz with 16 seats of 128-byte inputs) is bounded by the
	// frames the rooms keep instead. The answer to a FRAME_REQ counts: a client that
	// asks for more than fits is dropped and may resume, which catches
	// it up.
	DefaultMaxQueueBytes = 8 << 20
	// DefaultHandshakeTimeout bounds the time from accepting a connection
	// to its handshake message, the HTTP upgrade included (the seed's
	// 10 s).
	DefaultHandshakeTimeout = 10 * time.Second
	// DefaultIdleTimeout drops a connection that sent no im.game.v1
	// message for this long (the seed's 10 s).
	DefaultIdleTimeout = 10 * time.Second
	// DefaultWriteTimeout bounds one write to a connection.
	DefaultWriteTimeout = 10 * time.Second
	// DefaultCloseWait is how long the node waits for the client's close
	// frame after sending its own.
	DefaultCloseWait = time.Second
	// DefaultReadLimit is the largest WebSocket message accepted, above
	// the largest valid im.game.v1 message (SNAPSHOT_PUT: 1+4+3+65536
	// bytes). A bigger message closes the connection (1009); a smaller one
	// over the protocol caps is an invalid message.
	DefaultReadLimit = 72 << 10
	// DefaultMaxHeaderBytes bounds the HTTP header of a WebSocket upgrade
	// request (net/http answers 431 beyond it, allowing it 4 KiB of
	// slack); without it net/http allows 1 MiB per connection.
	DefaultMaxHeaderBytes = 16 << 10
	// DefaultReadRate is the bytes per second a connection may send on
	// average, WebSocket control frames included; a faster client is
	// slowed down (its reads wait), never dropped.
	DefaultReadRate = 512 << 10
	// DefaultReadBurst is the bytes a connection may send at once above
	// DefaultReadRate.
	DefaultReadBurst = 256 << 10
	// DefaultMaxTicketCache bounds the connect-ticket ids remembered
	// until they expire (single use). When it is full, handshakes get
	// ERROR 2 until ids expire.
	DefaultMaxTicketCache = 1 << 18
	// DefaultHeartbeat is the interval of the node's registry heartbeat.
	DefaultHeartbeat = 5 * time.Second
	// DefaultUpdateTimeout bounds one record update. A failed update is
	// retried, after a pause from 100 ms doubling up to UpdateTimeout.
	DefaultUpdateTimeout = 5 * time.Second
)

// Config configures a [Server]. Only Signer is required; the zero value of
// every other field works.
type Config struct {
	// ID is the node id: the registry key and the command subjects.
	// Empty means "node-" and a random suffix.
	ID string
	// WSURL is the WebSocket URL advertised in the registry. Empty means
	// ws://<address of the first listener>/game/v1/ws.
	WSURL string
	// UDPAddr is the UDP address (host:port) advertised in the registry
	// when node/udp serves this node's rooms; C1 hands it out as
	// connect.udp. Empty means the node serves no UDP.
	UDPAddr string
	// Region and Version are advertised in the registry.
	Region, Version string

	// Signer verifies connect tickets and signs resume tokens, with the
	// deployment's signing key (store.DB.SigningKey). Required.
	Signer *tokens.Signer
	// DB receives the records' updates (seats online/offline/released,
	// room state) and the registry heartbeats. Nil means neither.
	DB *store.DB
	// Backbone serves the commands from control. Nil means the node
	// takes no commands, so it opens no rooms (the package's tests hand it
	// commands directly).
	Backbone *backbone.Conn

	// Logger receives the node's logs. Nil means slog.Default().
	Logger *slog.Logger
	// Registerer receives the node's metrics. Nil means they are not
	// registered.
	Registerer prometheus.Registerer
	// Now returns the current time for tickets and the room rules. Nil
	// means time.Now. Socket deadlines always use real time.
	Now func() time.Time

	// MaxRooms bounds the rooms. Zero means DefaultMaxRooms.
	MaxRooms int
	// MaxConnections bounds the connections. Zero means
	// DefaultMaxConnections.
	MaxConnections int
	// MaxPending bounds the connections waiting for their handshake
	// (accepted, not yet past HELLO or RESUME). Zero means
	// DefaultMaxPending.
	MaxPending int
	// MaxPendingPerSource bounds the connections waiting for their
	// handshake from one IPv4 address or IPv6 /64. Zero means
	// DefaultMaxPendingPerSource.
	MaxPendingPerSource int
	// SendQueueDepth is the per-connection queue, in messages. Zero means
	// DefaultSendQueueDepth; at least 32.
	SendQueueDepth int
	// MaxQueueBytes bounds the per-connection queue in bytes. Zero means
	// DefaultMaxQueueBytes; at least the largest message the node sends
	// (a FRAME_BATCH of 300 frames with 16 inputs of 128 bytes: 625,513
	// bytes with its WebSocket header).
	MaxQueueBytes int
	// HandshakeTimeout: zero means DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// IdleTimeout: zero means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// WriteTimeout: zero means DefaultWriteTimeout.
	WriteTimeout time.Duration
	// CloseWait: zero means DefaultCloseWait.
	CloseWait time.Duration
	// ReadLimit in bytes: zero means DefaultReadLimit; at least the
	// largest valid message.
	ReadLimit int
	// MaxHeaderBytes bounds an upgrade request's header, in bytes: zero
	// means DefaultMaxHeaderBytes.
	MaxHeaderBytes int
	// ReadRate and ReadBurst in bytes: zero means DefaultReadRate and
	// DefaultReadBurst; ReadBurst is at least ReadLimit.
	ReadRate, ReadBurst int
	// MaxTicketCache: zero means DefaultMaxTicketCache.
	MaxTicketCache int
	// Heartbeat: zero means DefaultHeartbeat.
	Heartbeat time.Duration
	// UpdateTimeout bounds one record update, and the pause between
	// retries. Zero means DefaultUpdateTimeout.
	UpdateTimeout time.Duration

	// Rooms tunes the room engine (retention, connect timeout, close
	// linger, scheduler workers...). The node sets its Now, Logger,
	// SealResume, Header, Observer, ObserveTick and MaxRooms itself.
	Rooms rooms.Config
}

// maxMessage is the largest valid im.game.v1 message: SNAPSHOT_PUT with
// 65536 bytes of data.
const maxMessage = 1 + 4 + 3 + 65536

// maxOutMessage is the largest message the node sends, with its WebSocket
// header: a FRAME_BATCH (type, uvarint count of 2 bytes) of
// MaxFramesPerBatch frames, each a u32 number, a u8 count and MaxSeats
// inputs of a seat byte, a length byte and MaxInputLen bytes.
const maxOutMessage = 10 + 1 + 2 + roomwire.MaxFramesPerBatch*(4+1+rooms.MaxSeats*(2+roomwire.MaxInputLen))
