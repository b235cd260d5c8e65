package backbone

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/nats-io/nats.go"
)

// HandlerFunc answers one request made with [Conn.Request]. data is the
// request's JSON body. The value it returns is sent back as JSON; nil
// sends "{}". ctx is cancelled after Config.RequestTimeout.
//
// A handler that fails returns an error: the requester then gets
// [InternalErrorReply] and the error is logged, never sent. Handlers
// that need to tell the requester why should put the reason in the
// value they return instead.
type HandlerFunc func(ctx context.Context, data []byte) (any, error)

// InternalErrorReply is the JSON reply sent for a handler that returned
// an error.
const InternalErrorReply = `{"error":{"code":"internal","message":"internal error"}}`

// Request sends req as JSON to subject and decodes the JSON reply into
// resp (which may be nil to discard it). When ctx has no deadline,
// Config.RequestTimeout applies.
//
// The error wraps [ErrNoResponders] when nobody listens on subject,
// [ErrTimeout] (and ctx.Err() if ctx expired) when no reply came in time,
// [ErrClosed] after Close, and ctx.Err() when ctx was cancelled.
func (c *Conn) Request(ctx context.Context, subject string, req, resp any) error {
	data, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("backbone: request %s: encode: %w", subject, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.RequestTimeout)
		defer cancel()
	}
	msg, err := c.nc.RequestWithContext(ctx, subject, data)
	if err != nil {
		switch {
		case errors.Is(err, nats.ErrNoResponders):
			return fmt.Errorf("backbone: request %s: %w", subject, ErrNoResponders)
		case errors.Is(err, nats.ErrConnectionClosed):
			return fmt.Errorf("backbone: request %s: %w", subject, ErrClosed)
		case errors.Is(err, context.Canceled):
			return fmt.Errorf("backbone: request %s: %w", subject, context.Canceled)
		case errors.Is(err, context.DeadlineExceeded):
			return fmt.Errorf("backbone: request %s: %w: %w", subject, ErrTimeout, context.DeadlineExceeded)
		case errors.Is(err, nats.ErrTimeout):
			return fmt.Errorf("backbone: request %s: %w", subject, ErrTimeout)
		}
		return fmt.Errorf("backbone: request %s: %w", subject, err)
	}
	if resp == nil {
		return nil
	}
	if err := json.Unmarshal(msg.Data, resp); err != nil {
		return fmt.Errorf("backbone: request %s: decode reply: %w", subject, err)
	}
	return nil
}

// Handle subscribes fn to subject (which may contain wildcards). When
// queue is not empty, the subscription joins that queue group so that
// each request is answered by one member only. Each request runs in its
// own goroutine, at most Config.MaxConcurrentHandlers at a time.
//
// stop unsubscribes and waits for the handlers still running; it is
// idempotent.
func (c *Conn) Handle(subject, queue string, fn HandlerFunc) (stop func() error, err error) {
	h := &handler{
		c:   c,
		fn:  fn,
		sem: make(chan struct{}, c.cfg.MaxConcurrentHandlers),
		log: c.log.With("subject", subject),
	}
	sub, err := c.nc.QueueSubscribe(subject, queue, h.onMsg)
	if err != nil {
		return nil, fmt.Errorf("backbone: subscribe %s: %w", subject, err)
	}
	// Make sure the server knows the subscription before we return, so a
	// request sent right after Handle finds it.
	if err := c.nc.Flush(); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("backbone: subscribe %s: %w", subject, err)
	}
	var once sync.Once
	var stopErr error
	return func() error {
		once.Do(func() {
			h.mu.Lock()
			h.closed = true
			h.mu.Unlock()
			if err := sub.Unsubscribe(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) && !errors.Is(err, nats.ErrBadSubscription) {
				stopErr = fmt.Errorf("backbone: unsubscribe %s: %w", subject, err)
			}
			h.wg.Wait()
		})
		return stopErr
	}, nil
}

// handler is one Handle subscription.
type handler struct {
	// immutable after Handle
	c   *Conn
	fn  HandlerFunc
	sem chan struct{} // one token per running handler goroutine
	log *slog.Logger

	mu     sync.Mutex
	closed bool           // guarded by mu
	wg     sync.WaitGroup // Add guarded by mu, together with closed
}

// onMsg runs on the subscription's delivery goroutine.
func (h *handler) onMsg(msg *nats.Msg) {
	h.sem <- struct{}{} // back-pressure: wait for a free slot
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		<-h.sem
		return
	}
	h.wg.Add(1)
	h.mu.Unlock()
	go func() {
		defer func() {
			<-h.sem
			h.wg.Done()
		}()
		h.serve(msg)
	}()
}

func (h *handler) serve(msg *nats.Msg) {
	ctx, cancel := context.WithTimeout(context.Background(), h.c.cfg.RequestTimeout)
	defer cancel()
	v, err := h.fn(ctx, msg.Data)
	var out []byte
	if err != nil {
		h.log.Warn("request handler failed", "err", err)
		out = []byte(InternalErrorReply)
	} else if v == nil {
		out = []byte("{}")
	} else if out, err = json.Marshal(v); err != nil {
		h.log.Warn("request handler reply not encodable", "err", err)
		out = []byte(InternalErrorReply)
	}
	if msg.Reply == "" {
		return
	}
	if err := msg.Respond(out); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		h.log.Warn("reply failed", "err", err)
	}
}
