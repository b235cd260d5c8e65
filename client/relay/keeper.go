package relay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/switchboardgg/switchboard/protocol/relaywire"
)

// maxSubscribeTries is how many times a host sends PEERS_SUBSCRIBE at
// the retransmit interval without an ack before it sends it only with its
// keep-alive (a relay without peer events never answers).
const maxSubscribeTries = 5

// bind sends BIND with nonce every Config.Retransmit until BIND_RECEIVED,
// for at most Config.BindTimeout (docs/protocol/relay.md §5, BIND). An
// ERROR 3 (the nonce is not larger than the one the node holds from
// another address) makes it bump the nonce.
func (c *Conn) bind(ctx context.Context, nonce uint16) error {
	select {
	case <-c.bound: // stale
	default:
	}
	deadline := time.NewTimer(c.cfg.BindTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(c.cfg.Retransmit)
	defer tick.Stop()
	for {
		m, err := relaywire.NewBind(nonce, c.alloc.ConnectionData, &c.alloc.Key)
		if err != nil {
			return fmt.Errorf("relay: bind: %w", err)
		}
		_ = c.write(m) // a lost or failed send is retried
		select {
		case <-c.bound:
			c.mu.Lock()
			c.nonce = nonce
			c.mu.Unlock()
			select {
			case <-c.mismatch: // answers to messages sent before the bind
			default:
			}
			return nil
		case <-c.mismatch:
			nonce++
		case <-tick.C:
		case <-deadline.C:
			return fmt.Errorf("relay: bind to %s over %s: %w", c.ep.Host, c.transport, ErrBindTimeout)
		case <-c.done:
			return c.Err()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// connect sends CONNECT_REQUEST every Config.Retransmit until ACCEPTED or
// REJECTED (docs/protocol/relay.md §5), for at most Config.BindTimeout.
func (c *Conn) connect(ctx context.Context) error {
	m, err := relaywire.NewConnectRequest(c.alloc.ID, c.alloc.HostConnectionData)
	if err != nil {
		return fmt.Errorf("relay: connect: %w", err)
	}
	c.mu.Lock()
	c.connecting = true
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.connecting = false
		c.mu.Unlock()
	}()
	deadline := time.NewTimer(c.cfg.BindTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(c.cfg.Retransmit)
	defer tick.Stop()
	for {
		_ = c.write(m)
		select {
		case err := <-c.connected:
			if err != nil {
				return fmt.Errorf("relay: connect: %w", err)
			}
			host := c.HostID()
			c.addPeer(host)
			c.emit(Event{Type: EventPeerConnected, Peer: host})
			return nil
		case <-c.mismatch:
			if err := c.bind(ctx, c.nextNonce()); err != nil {
				return err
			}
		case <-tick.C:
		case <-deadline.C:
			return fmt.Errorf("relay: connect to the host: %w", ErrBindTimeout)
		case <-c.done:
			return c.Err()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (c *Conn) nextNonce() uint16 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nonce + 1
}

// keeper keeps the allocation alive and bound: a PING every
// Config.KeepAlive (with a host's PEERS_SUBSCRIBE), a re-bind on ERROR 3,
// a new carrier and a re-bind when the carrier breaks, when the node is
// silent for Config.DeadAfter, or on [Conn.Rebind].
func (c *Conn) keeper() {
	defer c.wg.Done()
	keep := time.NewTicker(c.cfg.KeepAlive)
	defer keep.Stop()
	retry := time.NewTicker(c.cfg.Retransmit)
	defer retry.Stop()
	c.sendSubscribe()
	for {
		select {
		case <-c.done:
			return
		case <-keep.C:
			_ = c.write(&relaywire.Ping{From: c.alloc.ID, Sequence: relaywire.UTPSequence})
			c.sendSubscribe()
			if silent := time.Since(time.Unix(0, c.lastRecv.Load())); silent > c.cfg.DeadAfter {
				c.reconnect(true, fmt.Errorf("relay: no answer from the relay node for %v", silent.Round(time.Second)))
			}
		case <-retry.C:
			c.mu.Lock()
			again := c.subscribe && !c.subAcked && c.subTries < maxSubscribeTries
			c.mu.Unlock()
			if again {
				c.sendSubscribe()
			}
		case <-c.mismatch:
			c.reconnect(false, &ServerError{Code: relaywire.CodeClientMismatch, Allocation: c.alloc.ID})
		case ref := <-c.broken:
			if c.car.Load() == ref {
				c.reconnect(true, errors.New("relay: the carrier broke"))
			}
		case reply := <-c.rebindReq:
			reply <- c.reconnect(true, errors.New("relay: Rebind called"))
		}
	}
}

// sendSubscribe sends a host's PEERS_SUBSCRIBE (0x80, Switchboard's
// extension): the relay node acks it with PEER_EVENT subscribed, sends
// "connected" for each peer connected now, then an event per change. A
// relay without the extension drops it; the host then learns of a peer
// from its first RELAY and of its leaving from DISCONNECT.
func (c *Conn) sendSubscribe() {
	if !c.subscribe {
		return
	}
	c.mu.Lock()
	c.subTries++
	c.mu.Unlock()
	_ = c.write(&relaywire.PeersSubscribe{AllocationID: c.alloc.ID})
}

// reconnect binds again with a larger nonce, on a new carrier when
// redial is set, retrying for Config.ReconnectTimeout; then the Conn
// ends. It reports the result.
func (c *Conn) reconnect(redial bool, cause error) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.ReconnectTimeout)
	defer cancel()
	c.wg.Add(1) // the keeper holds the group open: Add is safe
	go func() { // Close stops a dial in progress
		defer c.wg.Done()
		select {
		case <-c.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	c.log.Debug("relay: re-binding", "cause", cause, "new_carrier", redial)
	backoff := 100 * time.Millisecond
	for {
		err := c.rebindOnce(ctx, redial)
		if err == nil {
			c.mu.Lock()
			c.stats.Rebinds++
			c.subAcked, c.subTries = false, 0
			c.mu.Unlock()
			c.lastRecv.Store(time.Now().UnixNano())
			c.sendSubscribe()
			c.emit(Event{Type: EventRebound, Err: cause})
			return nil
		}
		var se *ServerError
		if errors.As(err, &se) && se.Fatal() || c.Err() != nil {
			return err
		}
		if ctx.Err() != nil {
			err = fmt.Errorf("relay: re-bind after %v: %w", cause, err)
			c.end(err)
			c.closeCarrier()
			return err
		}
		redial = true
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

func (c *Conn) rebindOnce(ctx context.Context, redial bool) error {
	if redial {
		car, err := c.dialCarrier(ctx)
		if err != nil {
			return err
		}
		old := c.car.Load()
		c.sendMu.Lock()
		c.startReader(car)
		c.sendMu.Unlock()
		_ = old.c.close()
		select {
		case <-c.broken: // about the old one
		default:
		}
	}
	return c.bind(ctx, c.nextNonce())
}
