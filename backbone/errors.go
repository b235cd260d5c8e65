package backbone

import "errors"

// ErrNoResponders is returned (wrapped) by [Conn.Request] when nobody
// subscribes to the subject. Callers usually map it to 503.
var ErrNoResponders = errors.New("backbone: no responders")

// ErrTimeout is returned (wrapped) by [Conn.Request] when no reply arrived
// before the deadline. It satisfies [net.Error] with Timeout() true.
// Callers usually map it to 503.
var ErrTimeout error = timeoutError{}

// ErrClosed is returned (wrapped) by calls on a connection after
// [Conn.Close].
var ErrClosed = errors.New("backbone: connection closed")

// ErrNotReady is returned (wrapped) by [StartEmbedded] when the server does
// not accept connections within [EmbeddedConfig.StartTimeout].
var ErrNotReady = errors.New("backbone: embedded server not ready")

// ErrBadCredentials is returned (wrapped) by [StartEmbedded] and [Connect]
// when a credentials file holds no valid NATS user nkey or JWT.
var ErrBadCredentials = errors.New("backbone: not a nats user credentials file")

// ErrUnwritable is returned (wrapped) by [Probe.Probe], [Probe.Run],
// [Probe.Check] and [Embedded.Check] when JetStream does not accept
// writes, such as when its disk is full. Health checks answer 503.
var ErrUnwritable = errors.New("backbone: jetstream does not accept writes")

// ErrRestartRequired is returned (wrapped, with [ErrUnwritable]) by
// [Embedded.Check] and the calls of [Probe] when the embedded server has a
// write error it keeps until restart: nats-server marks a stream that
// failed to write (ENOSPC, EIO) and refuses its writes from then on, also
// once space is freed. The process should exit non-zero so that a
// supervisor restarts it.
var ErrRestartRequired = errors.New("backbone: embedded jetstream needs a restart")

type timeoutError struct{}

func (timeoutError) Error() string   { return "backbone: request timed out" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }
