package backbone

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Defaults of [Config].
const (
	// DefaultURL is the NATS server used when Config.URL is empty.
	DefaultURL = nats.DefaultURL
	// DefaultName is the connection name shown by the server when
	// Config.Name is empty.
	DefaultName = "switchboard"
	// DefaultReconnectWait is the first delay between reconnect attempts.
	DefaultReconnectWait = 100 * time.Millisecond
	// DefaultMaxReconnectWait caps the exponential reconnect backoff.
	DefaultMaxReconnectWait = 5 * time.Second
	// DefaultRequestTimeout bounds Request when its ctx has no deadline,
	// and each handler run by Handle.
	DefaultRequestTimeout = 2 * time.Second
	// DefaultMaxConcurrentHandlers bounds the goroutines one Handle
	// subscription runs at a time.
	DefaultMaxConcurrentHandlers = 64
)

// Config configures [Connect]. Its zero value connects to DefaultURL.
type Config struct {
	// URL is the NATS server URL, or several separated by commas. User
	// and password may be given in the URL. Empty means DefaultURL.
	URL string
	// Name is the connection name reported to the server. Empty means
	// DefaultName.
	Name string
	// CredentialsFile is the file that authenticates this connection:
	// either an nkey user seed file, such as the one [StartEmbedded]
	// generates, or a .creds file (user JWT and nkey seed) of a NATS
	// deployment with accounts. The file is read at Connect and again at
	// every reconnect; the seed is not kept in memory. Empty means none
	// (or the user and password given in URL).
	CredentialsFile string
	// ReconnectWait is the first delay between (re)connect attempts; each
	// failed attempt doubles it, with jitter, up to MaxReconnectWait.
	// Zero means DefaultReconnectWait.
	ReconnectWait time.Duration
	// MaxReconnectWait caps the backoff. Zero means DefaultMaxReconnectWait.
	MaxReconnectWait time.Duration
	// RequestTimeout bounds Request when its ctx has no deadline, and
	// each handler run by Handle. Zero means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// MaxConcurrentHandlers bounds the goroutines of one Handle
	// subscription; further requests wait. Zero means
	// DefaultMaxConcurrentHandlers.
	MaxConcurrentHandlers int
	// Logger receives connection events: disconnects at warn, reconnects
	// at info. Nil means slog.Default().
	Logger *slog.Logger
}

// Conn is a NATS connection with JetStream. It reconnects forever until
// Close. Its methods are safe for concurrent use.
type Conn struct {
	// immutable after Connect
	cfg Config
	nc  *nats.Conn
	js  jetstream.JetStream
	log *slog.Logger
}

// Connect connects to cfg.URL, retrying with backoff until it succeeds or
// ctx is done. Once connected, the connection reconnects forever.
func Connect(ctx context.Context, cfg Config) (*Conn, error) {
	if cfg.URL == "" {
		cfg.URL = DefaultURL
	}
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	if cfg.ReconnectWait <= 0 {
		cfg.ReconnectWait = DefaultReconnectWait
	}
	if cfg.MaxReconnectWait <= 0 {
		cfg.MaxReconnectWait = DefaultMaxReconnectWait
	}
	if cfg.MaxReconnectWait < cfg.ReconnectWait {
		cfg.MaxReconnectWait = cfg.ReconnectWait
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.MaxConcurrentHandlers <= 0 {
		cfg.MaxConcurrentHandlers = DefaultMaxConcurrentHandlers
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	log := cfg.Logger.With("subsystem", "backbone", "name", cfg.Name)
	c := &Conn{cfg: cfg, log: log}

	opts := []nats.Option{
		nats.Name(cfg.Name),
		nats.MaxReconnects(-1),
		nats.CustomReconnectDelay(func(attempts int) time.Duration {
			return c.backoff(attempts)
		}),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			switch {
			case nc.IsClosed():
				// Close was called: nothing to report.
			case err != nil:
				log.Warn("nats disconnected, reconnecting", "err", err)
			default:
				log.Warn("nats disconnected, reconnecting")
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("nats reconnected", "server", nc.ConnectedUrlRedacted())
		}),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			if sub != nil {
				log.Warn("nats async error", "subject", sub.Subject, "err", err)
				return
			}
			log.Warn("nats async error", "err", err)
		}),
	}
	if cfg.CredentialsFile != "" {
		opt, err := credentialsOption(cfg.CredentialsFile)
		if err != nil {
			return nil, err
		}
		opts = append(opts, opt)
	}

	for attempt := 1; ; attempt++ {
		nc, err := nats.Connect(cfg.URL, opts...)
		if err == nil {
			js, err := jetstream.New(nc)
			if err != nil {
				nc.Close()
				return nil, fmt.Errorf("backbone: jetstream: %w", err)
			}
			c.nc, c.js = nc, js
			return c, nil
		}
		if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) {
			return nil, fmt.Errorf("backbone: connect %s: %w", redactURL(cfg.URL), err)
		}
		if attempt == 1 || attempt%10 == 0 {
			log.Warn("nats connect failed, retrying", "attempt", attempt, "err", err)
		}
		t := time.NewTimer(c.backoff(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("backbone: connect %s: %w: %w", redactURL(cfg.URL), ctx.Err(), err)
		case <-t.C:
		}
	}
}

// credentialsOption returns the nats.go option that authenticates with the
// nkey seed or .creds file at path.
func credentialsOption(path string) (nats.Option, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("backbone: nats credentials: %w", err)
	}
	jwt := bytes.Contains(b, []byte("BEGIN NATS USER JWT"))
	wipe(b)
	if jwt {
		return nats.UserCredentials(path), nil
	}
	opt, err := nats.NkeyOptionFromSeed(path)
	if err != nil {
		return nil, fmt.Errorf("backbone: nats credentials %s: %w: %w", path, ErrBadCredentials, err)
	}
	return opt, nil
}

// backoff returns the delay before reconnect attempt n (1-based):
// exponential from ReconnectWait, capped, with up to 25% jitter.
func (c *Conn) backoff(n int) time.Duration {
	d := c.cfg.ReconnectWait
	for i := 1; i < n && d < c.cfg.MaxReconnectWait; i++ {
		d *= 2
	}
	d = min(d, c.cfg.MaxReconnectWait)
	return d - time.Duration(rand.Int64N(int64(d)/4+1))
}

// NATS returns the underlying connection.
func (c *Conn) NATS() *nats.Conn { return c.nc }

// JetStream returns the JetStream context of the connection.
func (c *Conn) JetStream() jetstream.JetStream { return c.js }

// Close closes the connection immediately; pending requests fail. It is
// idempotent. Subscriptions made by Handle should be stopped first.
func (c *Conn) Close() { c.nc.Close() }

// KeyValue creates the bucket described by cfg, or updates it to cfg if it
// exists. Processes racing to create the same bucket all succeed.
func (c *Conn) KeyValue(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	var err error
	for range 3 {
		var kv jetstream.KeyValue
		kv, err = c.js.CreateOrUpdateKeyValue(ctx, cfg)
		if err == nil {
			return kv, nil
		}
		// Another process created it between our update and create: try
		// again, which updates it.
		if !errors.Is(err, jetstream.ErrBucketExists) && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			break
		}
	}
	return nil, fmt.Errorf("backbone: bucket %s: %w", cfg.Bucket, err)
}

// redactURL drops user information from a URL list for logs and errors.
func redactURL(u string) string {
	parts := strings.Split(u, ",")
	for i, part := range parts {
		at := strings.LastIndexByte(part, '@')
		if at < 0 {
			continue
		}
		scheme := ""
		if s := strings.Index(part, "://"); s >= 0 && s < at {
			scheme = part[:s+3]
		}
		parts[i] = scheme + "***@" + part[at+1:]
	}
	return strings.Join(parts, ",")
}
