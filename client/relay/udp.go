package relay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/switchboardgg/switchboard/api"
)

// udpCarrier is the UDP carrier: a connected UDP socket, so the kernel
// drops datagrams from any address but the relay node's.
type udpCarrier struct {
	// immutable after dialUDP
	c            *net.UDPConn
	writeTimeout time.Duration
}

func dialUDP(ctx context.Context, ep api.RelayServerEndpoint, _ *Allocation, cfg *Config) (carrier, error) {
	addr := net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port))
	if cfg.udpAddr != "" {
		addr = cfg.udpAddr
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "udp", addr)
	if err != nil {
		return nil, fmt.Errorf("relay: udp %s: %w", addr, err)
	}
	c := nc.(*net.UDPConn)
	_ = c.SetReadBuffer(cfg.SocketBuffer)
	_ = c.SetWriteBuffer(cfg.SocketBuffer)
	return &udpCarrier{c: c, writeTimeout: cfg.WriteTimeout}, nil
}

func (u *udpCarrier) send(b []byte) error {
	_, err := u.c.Write(b)
	return err
}

func (u *udpCarrier) recv(buf []byte) (int, error) {
	for {
		n, err := u.c.Read(buf)
		if err == nil {
			if n == len(buf) {
				continue // possibly truncated: longer than any message we take
			}
			return n, nil
		}
		var ne net.Error
		if errors.As(err, &ne) && !ne.Timeout() && isRefused(err) {
			// ICMP port unreachable from an earlier send: the relay is
			// not there (yet); keep reading, the retries tell.
			continue
		}
		return 0, err
	}
}

func (u *udpCarrier) close() error { return u.c.Close() }
