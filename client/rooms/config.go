package rooms

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/gobwas/ws"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/client/session"
	"github.com/switchboardgg/switchboard/protocol/roomudp"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// Defaults of [Config].
const (
	DefaultHeartbeat         = time.Second      // seed: PING every second
	DefaultSilenceTimeout    = 5 * time.Second  // seed: 5 s without a message is a disconnect
	DefaultHandshakeTimeout  = 10 * time.Second // the node waits 10 s for a handshake too
	DefaultWriteTimeout      = 5 * time.Second
	DefaultHTTPTimeout       = session.DefaultHTTPTimeout
	DefaultRefreshBefore     = session.DefaultRefreshBefore
	DefaultReconnectWindow   = api.DefaultReconnectWindowSeconds * time.Second // when Join does not say
	DefaultFrameBuffer       = 64                                              // about a second at 60 ticks/s; a full FRAME_BATCH waits on the game
	DefaultEventBuffer       = 32
	DefaultMaxSendQueueBytes = 256 << 10
	DefaultMaxMessageSize    = 1 << 20
	DefaultMaxResponseBytes  = session.DefaultMaxResponseBytes
	DefaultSDKVersion        = "go/0.1"
	DefaultUDPMTU            = roomudp.DefaultMTU // bytes of a UDP datagram the client sends
	DefaultUDPFallback       = roomudp.Fallback   // 2 s without a UDP answer: WebSocket
)

// Config configures a [Client] and the [Room] values it connects. The zero
// value works: every zero field takes the default named in its comment.
// Login and NewClient copy the Config; changing it afterwards has no effect.
type Config struct {
	// HTTPClient makes the HTTP calls. Nil means a client with a
	// DefaultHTTPTimeout timeout.
	HTTPClient *http.Client
	// Dialer dials game nodes. Nil means a zero ws.Dialer. Its Protocols are
	// always replaced by [roomwire.Subprotocol] and its Timeout by HandshakeTimeout
	// when that is shorter or the Dialer has none.
	Dialer *ws.Dialer
	// Logger receives connection-level events (never per message, never
	// tokens). Nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock for PING timestamps, RTT, server time, silence and
	// token expiry. Nil means time.Now.
	Now func() time.Time

	// Transport chooses the channel to the game node. Empty means the UDP
	// channel (docs/protocol/rooms-udp.md) whenever C1 offers it, falling
	// back to WebSocket when UDP gets no answer within UDPFallback — for
	// the first connection and for every reconnection. TransportWS means
	// WebSocket only; TransportUDP means UDP only, failing when the node
	// does not serve it (benchmarks and tests).
	Transport string
	// UDPSocket carries the UDP connections of this Client's Rooms. Nil
	// means each connection opens a socket of its own; a load generator
	// shares one among many clients (see [UDPSocket]).
	UDPSocket *UDPSocket
	// UDPMTU is the largest UDP datagram the client sends, in bytes.
	// Zero means DefaultUDPMTU (1200); at least roomudp.MinMTU and at
	// most roomudp.MaxDatagram.
	UDPMTU int
	// UDPFallback is how long a UDP handshake waits for an answer before
	// the client tries WebSocket (with Transport TransportUDP: before it
	// gives up). Zero means DefaultUDPFallback (2 s).
	UDPFallback time.Duration

	// SDKVersion goes into HELLO.sdk_version (≤ 64 bytes). Empty means
	// DefaultSDKVersion.
	SDKVersion string
	// Heartbeat is the PING interval. Zero means DefaultHeartbeat (1 s).
	Heartbeat time.Duration
	// SilenceTimeout is how long without any message from the node makes a
	// disconnect. Zero means DefaultSilenceTimeout (5 s).
	SilenceTimeout time.Duration
	// HandshakeTimeout bounds dialing plus the handshake up to WELCOME.
	// Zero means DefaultHandshakeTimeout (10 s).
	HandshakeTimeout time.Duration
	// WriteTimeout bounds each socket write. Zero means DefaultWriteTimeout
	// (5 s).
	WriteTimeout time.Duration
	// Backoff returns the wait before reconnect attempt n (0-based). Nil means
	// [DefaultBackoff]: 0, 1, 2, 4, 4, … seconds.
	Backoff func(attempt int) time.Duration
	// ReconnectWindow caps how long a disconnected room tries to come back.
	// Zero means the room's reconnect_window_seconds from Join, or
	// DefaultReconnectWindow (60 s) when Join did not say.
	ReconnectWindow time.Duration

	// FrameBuffer is the capacity of Room.Frames. Zero means
	// DefaultFrameBuffer (64).
	FrameBuffer int
	// EventBuffer is the capacity of Room.Events. Zero means
	// DefaultEventBuffer (32).
	EventBuffer int
	// MaxSendQueueBytes caps the bytes waiting for the socket; sends beyond
	// it fail with ErrSendQueueFull. Zero means DefaultMaxSendQueueBytes
	// (256 KiB); it is raised to fit one largest SNAPSHOT_PUT.
	MaxSendQueueBytes int
	// MaxMessageSize caps one message from the node; a bigger one closes the
	// connection. Zero means DefaultMaxMessageSize (1 MiB), which holds a full
	// FRAME_BATCH of a 16-seat room.
	MaxMessageSize int
	// MaxResponseBytes caps an HTTP response body. Zero means
	// DefaultMaxResponseBytes (1 MiB).
	MaxResponseBytes int64

	// RefreshBefore is how long before the access token expires the client
	// refreshes it. Zero means DefaultRefreshBefore (1 min).
	RefreshBefore time.Duration
	// SessionChanged, when set, is called with the new session after each
	// refresh of the tokens, so an app can save it. It must not block.
	SessionChanged func(Session)

	// SnapshotInterval is the room's snapshot_interval_frames (WELCOME does
	// not carry it). When it is non-zero and this client holds the snapshot
	// seat, every frame whose number is a multiple of it is delivered with
	// Frame.SnapshotDue set and SnapshotFunc is called. Zero means off.
	SnapshotInterval uint32
	// SnapshotFunc, when set, returns the game state after frame; the room
	// sends it as SNAPSHOT_PUT. It is called on the room's reader goroutine
	// right after that frame is queued on Frames, so it suits games whose
	// state it can read safely at that moment; a game loop that applies
	// frames itself leaves it nil and calls Room.PutSnapshot when it sees
	// Frame.SnapshotDue. A nil or empty result sends nothing.
	SnapshotFunc func(frame uint32) []byte
}

// DefaultBackoff is the seed's reconnect schedule: 0, 1, 2, 4, 4, … seconds.
func DefaultBackoff(attempt int) time.Duration {
	switch {
	case attempt <= 0:
		return 0
	case attempt == 1:
		return time.Second
	case attempt == 2:
		return 2 * time.Second
	}
	return 4 * time.Second
}

// resolve returns a copy of c with the defaults filled in.
func (c *Config) resolve() (Config, error) {
	var r Config
	if c != nil {
		r = *c
	}
	if r.HTTPClient == nil {
		r.HTTPClient = &http.Client{Timeout: DefaultHTTPTimeout}
	}
	if r.Dialer != nil {
		d := *r.Dialer
		r.Dialer = &d
	} else {
		r.Dialer = &ws.Dialer{}
	}
	if r.Logger == nil {
		r.Logger = slog.Default()
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.SDKVersion == "" {
		r.SDKVersion = DefaultSDKVersion
	}
	if len(r.SDKVersion) > roomwire.MaxSDKVersionLen {
		return r, fmt.Errorf("sdk version longer than %d bytes", roomwire.MaxSDKVersionLen)
	}
	switch r.Transport {
	case "", TransportUDP, TransportWS:
	default:
		return r, fmt.Errorf("transport %q: want %q or %q: %w", r.Transport, TransportUDP, TransportWS, ErrInvalidArgument)
	}
	setInt(&r.UDPMTU, DefaultUDPMTU)
	if r.UDPMTU < roomudp.MinMTU || r.UDPMTU > roomudp.MaxDatagram {
		return r, fmt.Errorf("udp mtu %d not in [%d, %d]: %w", r.UDPMTU, roomudp.MinMTU, roomudp.MaxDatagram, ErrInvalidArgument)
	}
	setDur(&r.UDPFallback, DefaultUDPFallback)
	setDur(&r.Heartbeat, DefaultHeartbeat)
	setDur(&r.SilenceTimeout, DefaultSilenceTimeout)
	setDur(&r.HandshakeTimeout, DefaultHandshakeTimeout)
	setDur(&r.WriteTimeout, DefaultWriteTimeout)
	setDur(&r.RefreshBefore, DefaultRefreshBefore)
	if r.Backoff == nil {
		r.Backoff = DefaultBackoff
	}
	setInt(&r.FrameBuffer, DefaultFrameBuffer)
	setInt(&r.EventBuffer, DefaultEventBuffer)
	setInt(&r.MaxSendQueueBytes, DefaultMaxSendQueueBytes)
	setInt(&r.MaxMessageSize, DefaultMaxMessageSize)
	if r.MaxResponseBytes <= 0 {
		r.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if minQ := roomwire.MaxSnapshotLen + 64; r.MaxSendQueueBytes < minQ {
		r.MaxSendQueueBytes = minQ
	}
	if r.MaxMessageSize < 64<<10+64 {
		r.MaxMessageSize = 64<<10 + 64 // one SNAPSHOT always fits
	}
	r.Dialer.Protocols = []string{roomwire.Subprotocol}
	if r.Dialer.Timeout <= 0 || r.Dialer.Timeout > r.HandshakeTimeout {
		r.Dialer.Timeout = r.HandshakeTimeout
	}
	return r, nil
}

// sessionConfig is the part of a resolved c that its login session uses.
func (c *Config) sessionConfig() *session.Config {
	return &session.Config{
		HTTPClient:       c.HTTPClient,
		MaxResponseBytes: c.MaxResponseBytes,
		RefreshBefore:    c.RefreshBefore,
		SessionChanged:   c.SessionChanged,
		Logger:           c.Logger,
		Now:              c.Now,
	}
}

func setDur(d *time.Duration, def time.Duration) {
	if *d <= 0 {
		*d = def
	}
}

func setInt(n *int, def int) {
	if *n <= 0 {
		*n = def
	}
}
