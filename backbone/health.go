package backbone

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
)

// Defaults of [ProbeConfig].
const (
	// DefaultProbeInterval is the time between two probes.
	DefaultProbeInterval = 5 * time.Second
	// DefaultProbeTimeout bounds one probe write.
	DefaultProbeTimeout = 2 * time.Second
	// DefaultProbeBucket is the key-value bucket the probe writes to.
	DefaultProbeBucket = "sb_health"
	// ProbeTTL is how long a probe key lives in the bucket after its last
	// write, so that the keys of processes gone do not pile up.
	ProbeTTL = time.Minute
	// probeMaxBytes caps the probe bucket; each key holds a timestamp.
	probeMaxBytes = 1 << 20
)

// ProbeConfig configures [NewProbe]. Conn is required.
type ProbeConfig struct {
	// Conn is the connection the probe writes through. Required.
	Conn *Conn
	// Embedded, when not nil, is the embedded server behind Conn: the
	// probe also reads its JetStream health, which names a stream write
	// error the server keeps until restart ([ErrRestartRequired]).
	Embedded *Embedded
	// Interval is the time between two probes. Zero means
	// DefaultProbeInterval.
	Interval time.Duration
	// Timeout bounds one probe write. Zero means DefaultProbeTimeout.
	Timeout time.Duration
	// Bucket is the key-value bucket written to (file storage, entries
	// expire after ProbeTTL). Empty means DefaultProbeBucket.
	Bucket string
	// Key is this process's key in Bucket. Empty means a random one.
	Key string
	// Logger receives the changes between writable and not (warn, info).
	// Nil means slog.Default().
	Logger *slog.Logger
}

// Probe measures whether JetStream accepts writes: every Interval it puts
// a timestamp into a file-backed bucket and remembers the outcome, so
// that a health check reads the last result without doing I/O. Its
// methods are safe for concurrent use.
type Probe struct {
	// immutable after NewProbe
	cfg ProbeConfig
	log *slog.Logger

	mu  sync.Mutex
	err error // guarded by mu: the last outcome; nil is writable
	kv  jetstream.KeyValue
}

// NewProbe returns a probe of cfg. It starts no goroutine and does no I/O;
// until the first probe of [Probe.Run], [Probe.Check] reports nil.
func NewProbe(cfg ProbeConfig) (*Probe, error) {
	if cfg.Conn == nil {
		return nil, errors.New("backbone: probe: Conn is nil")
	}
	if cfg.Interval < 0 || cfg.Timeout < 0 {
		return nil, fmt.Errorf("backbone: probe: negative interval %v or timeout %v", cfg.Interval, cfg.Timeout)
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultProbeInterval
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultProbeTimeout
	}
	if cfg.Bucket == "" {
		cfg.Bucket = DefaultProbeBucket
	}
	if cfg.Key == "" {
		cfg.Key = "p" + rand.Text()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Probe{cfg: cfg, log: cfg.Logger.With("subsystem", "backbone", "probe", cfg.Bucket)}, nil
}

// Run probes at once and then every Interval until ctx is done, and
// returns nil then. When the embedded server reports a write error it
// keeps until restart, Run returns that error, wrapping
// [ErrRestartRequired] and [ErrUnwritable]: the caller should stop the
// process with a non-zero status so that a supervisor restarts it.
func (p *Probe) Run(ctx context.Context) error {
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	for {
		if err := p.Probe(ctx); errors.Is(err, ErrRestartRequired) {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Probe probes once and returns the outcome, which Check reports until the
// next probe: nil when the write succeeded, else an error wrapping
// [ErrUnwritable] (and [ErrRestartRequired] when the embedded server keeps
// the failure until restart). A probe cut short by ctx is not recorded.
func (p *Probe) Probe(ctx context.Context) error {
	err := p.probe(ctx)
	if ctx.Err() != nil {
		return err
	}
	p.mu.Lock()
	was := p.err
	p.err = err
	p.mu.Unlock()
	switch {
	case err != nil && was == nil:
		p.log.Warn("the NATS backbone does not accept writes; health reports it until it does", "err", err)
	case err == nil && was != nil:
		p.log.Info("the NATS backbone accepts writes again")
	}
	return err
}

func (p *Probe) probe(ctx context.Context) error {
	if e := p.cfg.Embedded; e != nil {
		if err := e.Check(); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	p.mu.Lock()
	kv := p.kv
	p.mu.Unlock()
	if kv == nil {
		var err error
		kv, err = p.cfg.Conn.KeyValue(ctx, jetstream.KeyValueConfig{
			Bucket: p.cfg.Bucket, Description: "switchboard write probes", History: 1,
			TTL: ProbeTTL, MaxBytes: probeMaxBytes, Storage: jetstream.FileStorage,
		})
		if err != nil {
			return &unwritableError{cause: fmt.Errorf("bucket %s: %w", p.cfg.Bucket, err)}
		}
		p.mu.Lock()
		p.kv = kv
		p.mu.Unlock()
	}
	stamp := time.Now().UTC().AppendFormat(nil, time.RFC3339Nano)
	if _, err := kv.Put(ctx, p.cfg.Key, stamp); err != nil {
		return &unwritableError{cause: fmt.Errorf("put %s: %w", p.cfg.Bucket, err)}
	}
	return nil
}

// Check returns the outcome of the last probe; its ctx is not used. It
// has the shape of the health funcs of control and the admin listener.
func (p *Probe) Check(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Check reports the embedded server's own health: nil when it accepts
// connections and every JetStream stream can write. A stream write error
// (such as "no space left on device") wraps [ErrRestartRequired]:
// nats-server keeps it until the server restarts, also once space is
// freed.
func (e *Embedded) Check() error {
	h := e.srv.Healthz(&server.HealthzOptions{Details: true})
	if h == nil || len(h.Errors) == 0 && h.Error == "" {
		return nil
	}
	var msgs []string
	restart := false
	for _, he := range h.Errors {
		msgs = append(msgs, he.Error)
		// nats-server's text for a stream's stored write error, which
		// only a restart clears (stream.go setWriteErrLocked).
		if he.Type == server.HealthzErrorStream && strings.Contains(he.Error, "write error") {
			restart = true
		}
	}
	if h.Error != "" {
		msgs = append(msgs, h.Error)
	}
	msg := strings.Join(msgs, "; ")
	if restart {
		return &unwritableError{cause: errors.New(msg), restart: true}
	}
	return fmt.Errorf("backbone: embedded server unhealthy: %s", msg)
}

// unwritableError is ErrUnwritable, and ErrRestartRequired with restart,
// with its cause, in one readable message.
type unwritableError struct {
	cause   error
	restart bool
}

func (e *unwritableError) Error() string {
	if e.restart {
		return "backbone: jetstream does not accept writes until the embedded server restarts: " + e.cause.Error()
	}
	return "backbone: jetstream does not accept writes: " + e.cause.Error()
}

func (e *unwritableError) Unwrap() error { return e.cause }

func (e *unwritableError) Is(target error) bool {
	return target == ErrUnwritable || e.restart && target == ErrRestartRequired
}
