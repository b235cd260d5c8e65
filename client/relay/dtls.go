package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/pion/dtls/v3"
	dtlsnet "github.com/pion/dtls/v3/pkg/net"
	"github.com/pion/logging"

	"github.com/switchboardgg/switchboard/api"
	"github.com/switchboardgg/switchboard/protocol/relaywire"
)

// dtlsCarrier is the DTLS carrier (docs/protocol/relay.md §16): a
// connected UDP socket, so the kernel drops datagrams from any address but
// the relay node's, under a pion/dtls client authenticated by the
// allocation's key (PSK) and id (PSK identity, its 16 bytes as Unity
// Transport sends it).
type dtlsCarrier struct {
	// immutable after dialDTLS
	c            *net.UDPConn
	conn         *dtls.Conn
	writeTimeout time.Duration

	closed atomic.Bool
}

func dialDTLS(ctx context.Context, ep api.RelayServerEndpoint, a *Allocation, cfg *Config) (carrier, error) {
	addr := net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port))
	if cfg.udpAddr != "" { // tests: a proxy in front of the node (DTLS is UDP)
		addr = cfg.udpAddr
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "udp", addr)
	if err != nil {
		return nil, fmt.Errorf("relay: dtls %s: %w", addr, err)
	}
	c := nc.(*net.UDPConn)
	_ = c.SetReadBuffer(cfg.SocketBuffer)
	_ = c.SetWriteBuffer(cfg.SocketBuffer)
	suites := make([]dtls.CipherSuiteID, len(relaywire.DTLSCipherSuites))
	for i, id := range relaywire.DTLSCipherSuites {
		suites[i] = dtls.CipherSuiteID(id)
	}
	key := a.Key // copied: the callback outlives this call
	conn, err := dtls.ClientWithOptions(dtlsnet.PacketConnFromConn(c), c.RemoteAddr(),
		dtls.WithPSK(func([]byte) ([]byte, error) { return key[:], nil }),
		dtls.WithPSKIdentityHint(relaywire.DTLSIdentity(a.ID)),
		dtls.WithCipherSuites(suites...),
		dtls.WithExtendedMasterSecret(dtls.RequestExtendedMasterSecret),
		dtls.WithLoggerFactory(&logging.DefaultLoggerFactory{Writer: io.Discard, DefaultLogLevel: logging.LogLevelDisabled}),
	)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("relay: dtls %s: %w", addr, err)
	}
	if err := conn.HandshakeContext(ctx); err != nil {
		conn.Close()
		c.Close()
		return nil, fmt.Errorf("relay: dtls handshake with %s (a wrong key, or a relay without DTLS): %w", addr, err)
	}
	return &dtlsCarrier{c: c, conn: conn, writeTimeout: cfg.WriteTimeout}, nil
}

func (t *dtlsCarrier) send(b []byte) error {
	_ = t.conn.SetWriteDeadline(time.Now().Add(t.writeTimeout))
	if _, err := t.conn.Write(b); err != nil {
		return t.err("send", err)
	}
	return nil
}

func (t *dtlsCarrier) recv(buf []byte) (int, error) {
	for {
		n, err := t.conn.Read(buf)
		if err == nil {
			return n, nil
		}
		var te *dtls.TemporaryError
		if errors.As(err, &te) && !te.Timeout() && !t.closed.Load() {
			continue // a record longer than buf: dropped
		}
		return 0, t.err("recv", err)
	}
}

// err wraps a pion error: net.ErrClosed once close was called, io.EOF
// when the relay sent close_notify (its allocation was released).
func (t *dtlsCarrier) err(op string, err error) error {
	switch {
	case t.closed.Load():
		return fmt.Errorf("relay: dtls %s: %w", op, net.ErrClosed)
	case errors.Is(err, io.EOF):
		return fmt.Errorf("relay: dtls closed by the relay: %w", io.EOF)
	}
	return fmt.Errorf("relay: dtls %s: %w", op, err)
}

func (t *dtlsCarrier) close() error {
	if !t.closed.CompareAndSwap(false, true) {
		return nil
	}
	// close_notify first, while the socket is open; then the socket.
	return errors.Join(ignoreClosed(t.conn.Close()), ignoreClosed(t.c.Close()))
}

func ignoreClosed(err error) error {
	if err == nil || errors.Is(err, net.ErrClosed) || errors.Is(err, dtls.ErrConnClosed) {
		return nil
	}
	return err
}
