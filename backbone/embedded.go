package backbone

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
)

// Defaults of [EmbeddedConfig].
const (
	// DefaultDataDir is the directory used when EmbeddedConfig.DataDir is
	// empty, relative to the working directory (as `switchboard dev`).
	DefaultDataDir = "switchboard-data"
	// DefaultEmbeddedHost is the interface the embedded server listens on
	// when EmbeddedConfig.Host is empty.
	DefaultEmbeddedHost = "127.0.0.1"
	// DefaultStartTimeout bounds how long StartEmbedded waits for the
	// server to accept connections.
	DefaultStartTimeout = 10 * time.Second
	// CredentialsFileName is the file in EmbeddedConfig.DataDir that holds
	// the nkey seed the embedded server requires of every client. It is
	// created, mode 0600, on the first start and kept across restarts.
	CredentialsFileName = "nats-user.nk"
)

// EmbeddedConfig configures [StartEmbedded]. Its zero value works: an
// embedded server on 127.0.0.1, a free port, JetStream under
// ./switchboard-data/nats, clients authenticated by the nkey in
// ./switchboard-data/nats-user.nk.
type EmbeddedConfig struct {
	// DataDir is the directory for data on disk; JetStream stores under
	// DataDir/nats. Empty means DefaultDataDir.
	DataDir string
	// Host is the listen interface. Empty means DefaultEmbeddedHost.
	Host string
	// Port is the client port. 0 picks a free port; read it back with
	// Embedded.ClientURL.
	Port int
	// StartTimeout bounds the wait for the server to accept connections.
	// Zero means DefaultStartTimeout.
	StartTimeout time.Duration
	// Logger receives the server's warnings and errors (its notices,
	// debug and trace lines are dropped). Nil means slog.Default().
	Logger *slog.Logger
}

// Embedded is a nats-server with JetStream running inside this process.
// Its methods are safe for concurrent use.
type Embedded struct {
	// immutable after StartEmbedded
	srv   *server.Server
	creds string
}

// StartEmbedded starts a nats-server in this process with JetStream storing
// under cfg.DataDir/nats and waits until it accepts connections. It does
// not install signal handlers. On error nothing is left running.
//
// The server accepts only clients that sign its challenge with the nkey
// kept in cfg.DataDir/[CredentialsFileName], created on the first start:
// whoever can connect can read the signing key from the store, so a local
// process or another host needs that file to join. Pass
// [Embedded.CredentialsFile] as [Config.CredentialsFile] to [Connect].
func StartEmbedded(cfg EmbeddedConfig) (*Embedded, error) {
	if cfg.DataDir == "" {
		cfg.DataDir = DefaultDataDir
	}
	if cfg.Host == "" {
		cfg.Host = DefaultEmbeddedHost
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Port < 0 || cfg.Port > 65535 {
		return nil, fmt.Errorf("backbone: embedded port %d out of range", cfg.Port)
	}
	port := cfg.Port
	if port == 0 {
		port = server.RANDOM_PORT
	}
	credsPath := filepath.Join(cfg.DataDir, CredentialsFileName)
	pub, err := loadOrCreateUserKey(credsPath)
	if err != nil {
		return nil, err
	}
	opts := &server.Options{
		ServerName: "switchboard-embedded",
		Host:       cfg.Host,
		Port:       port,
		JetStream:  true,
		StoreDir:   filepath.Join(cfg.DataDir, "nats"),
		NoSigs:     true,
		// One user, authenticated by nkey challenge: the seed never crosses
		// the wire and the server holds only the public key.
		Nkeys: []*server.NkeyUser{{Nkey: pub}},
		// The HTTP monitor, cluster, leaf and gateway listeners stay off.
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("backbone: embedded server: %w", err)
	}
	lg := &serverLogger{log: cfg.Logger.With("subsystem", "nats-server")}
	srv.SetLoggerV2(lg, false, false, false)
	srv.Start()
	// Poll so that a fatal start error (the port in use, say) ends the
	// wait at once, and say what it was.
	deadline := time.Now().Add(cfg.StartTimeout)
	for !srv.ReadyForConnections(readyPoll) {
		cause := lg.fatal.Load()
		if cause == nil && time.Now().Before(deadline) {
			continue
		}
		srv.Shutdown()
		srv.WaitForShutdown()
		if cause != nil {
			return nil, fmt.Errorf("backbone: embedded server on %s: %w", net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)), startError{*cause})
		}
		return nil, fmt.Errorf("backbone: embedded server on %s: %w", net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)), ErrNotReady)
	}
	lg.started.Store(true)
	return &Embedded{srv: srv, creds: credsPath}, nil
}

// ClientURL returns the URL clients connect to, such as
// "nats://127.0.0.1:41235". It carries no credentials: see
// [Embedded.CredentialsFile].
func (e *Embedded) ClientURL() string { return e.srv.ClientURL() }

// CredentialsFile returns the path of the nkey seed file that clients of
// this server need, for [Config.CredentialsFile] or `--nats-creds`.
func (e *Embedded) CredentialsFile() string { return e.creds }

// Shutdown stops the server and waits until it has stopped. It is
// idempotent.
func (e *Embedded) Shutdown() {
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
}

// readyPoll is how often StartEmbedded checks for a fatal start error
// while it waits for the server.
const readyPoll = 50 * time.Millisecond

// serverLogger routes nats-server logging to slog: warnings and errors
// only, so that a healthy server says nothing. It keeps the first fatal
// error for StartEmbedded's message, and logs fatal errors only once
// StartEmbedded has returned the server: before, its error says it once.
type serverLogger struct {
	log     *slog.Logger
	fatal   atomic.Pointer[error]
	started atomic.Bool
}

func (l *serverLogger) Noticef(string, ...any) {}
func (l *serverLogger) Debugf(string, ...any)  {}
func (l *serverLogger) Tracef(string, ...any)  {}
func (l *serverLogger) Warnf(format string, v ...any) {
	l.log.Log(context.Background(), slog.LevelWarn, fmt.Sprintf(format, v...))
}
func (l *serverLogger) Errorf(format string, v ...any) {
	l.log.Log(context.Background(), slog.LevelError, fmt.Sprintf(format, v...))
}
func (l *serverLogger) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	var err error = fatalError{msg: msg}
	for _, a := range v {
		if e, ok := a.(error); ok { // the listener's error, say
			err = fatalError{msg: msg, err: e}
			break
		}
	}
	l.fatal.CompareAndSwap(nil, &err)
	if l.started.Load() {
		l.log.Log(context.Background(), slog.LevelError, msg, "fatal", true)
	}
}

// loadOrCreateUserKey returns the public key of the nkey user seed in path,
// creating the seed (and its directory) when the file does not exist.
func loadOrCreateUserKey(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return createUserKey(path)
	}
	if err != nil {
		return "", fmt.Errorf("backbone: read nats credentials: %w", err)
	}
	defer wipe(b)
	kp, err := nkeys.ParseDecoratedNKey(b)
	if err != nil {
		return "", fmt.Errorf("backbone: nats credentials %s: %w", path, err)
	}
	defer kp.Wipe()
	pub, err := kp.PublicKey()
	if err != nil || !nkeys.IsValidPublicUserKey(pub) {
		return "", fmt.Errorf("backbone: nats credentials %s: %w", path, ErrBadCredentials)
	}
	return pub, nil
}

func createUserKey(path string) (string, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return "", fmt.Errorf("backbone: create nats credentials: %w", err)
	}
	defer kp.Wipe()
	seed, err := kp.Seed()
	if err != nil {
		return "", fmt.Errorf("backbone: create nats credentials: %w", err)
	}
	defer wipe(seed)
	pub, err := kp.PublicKey()
	if err != nil {
		return "", fmt.Errorf("backbone: create nats credentials: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("backbone: create nats credentials: %w", err)
	}
	// O_EXCL: a second process starting on the same data dir at the same
	// moment does not overwrite the first one's key.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return loadOrCreateUserKey(path)
	}
	if err != nil {
		return "", fmt.Errorf("backbone: create nats credentials: %w", err)
	}
	_, werr := f.Write(append(seed, '\n'))
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		os.Remove(path)
		return "", fmt.Errorf("backbone: write nats credentials: %w", err)
	}
	return pub, nil
}

// wipe overwrites secret bytes once they are no longer needed.
func wipe(b []byte) {
	for i := range b {
		b[i] = 'x'
	}
}

// fatalError is a fatal message of nats-server and the error it names, so
// that errors.Is finds the cause (syscall.EADDRINUSE, say).
type fatalError struct {
	msg string
	err error
}

func (e fatalError) Error() string { return e.msg }
func (e fatalError) Unwrap() error { return e.err }

// startError is the fatal error that ended StartEmbedded: it is
// ErrNotReady and unwraps to the cause, whose text it is, and says "port
// in use" for a taken port instead of nats-server's message naming the
// address twice.
type startError struct{ cause error }

func (e startError) Error() string {
	if errors.Is(e.cause, syscall.EADDRINUSE) {
		return "port in use"
	}
	return e.cause.Error()
}
func (e startError) Is(target error) bool { return target == ErrNotReady }
func (e startError) Unwrap() error        { return e.cause }
