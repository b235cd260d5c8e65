package p2p

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboardgg/switchboard/internal/certs"
	"github.com/switchboardgg/switchboard/protocol/p2pwire"
	"github.com/switchboardgg/switchboard/tokens"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testHub is a hub serving TLS on 127.0.0.1 with a self-signed certificate.
type testHub struct {
	t           testing.TB
	h           *Hub
	addr        string
	fingerprint string
	keys        *tokens.HubKeyring
	cfg         Config
}

const testHubID = "hub-test"

var testSecret = bytes.Repeat([]byte{7}, 32)

func startHub(t testing.TB, tweak func(*Config)) *testHub {
	t.Helper()
	dir := t.TempDir()
	certFile, keyFile, _, err := certs.SelfSigned(certs.SelfSignedConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	store, err := certs.Load(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := tokens.NewHubKeyring(tokens.HubKey{ID: 1, Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{ID: testHubID, Keyring: keys, TLS: store.TLSConfig()}
	if tweak != nil {
		tweak(&cfg)
	}
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pc, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(ln.Addr().(*net.TCPAddr).AddrPort()))
	if err != nil {
		_ = ln.Close()
		t.Fatal(err)
	}
	served := make(chan error, 2)
	go func() { served <- h.Serve(ln) }()
	go func() { served <- h.ServeUDP(pc) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		for range 2 {
			if err := <-served; !errors.Is(err, ErrServerClosed) {
				t.Errorf("serve: %v", err)
			}
		}
	})
	return &testHub{t: t, h: h, addr: ln.Addr().String(), fingerprint: store.Fingerprint(), keys: keys, cfg: cfg}
}

// ticket seals a ticket for user on network with a fresh peer id.
func (th *testHub) ticket(user, network string) []byte {
	th.t.Helper()
	now := time.Now()
	s, err := th.keys.Seal(tokens.HubTicket{
		Username: user, Network: network, PeerID: user + "~" + tokens.NewName(6), HubID: testHubID,
		Issued: now, Expires: now.Add(time.Minute),
	})
	if err != nil {
		th.t.Fatal(err)
	}
	return []byte(s)
}

// client is a test peer speaking p2pwire over TLS, pinning the hub's
// fingerprint as real clients do.
type client struct {
	t       testing.TB
	nc      *tls.Conn
	br      *bufio.Reader
	welcome *p2pwire.Welcome
}

func (th *testHub) dial() *client {
	th.t.Helper()
	fp := th.fingerprint
	nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", th.addr, &tls.Config{
		InsecureSkipVerify: true, // pinned below
		MinVersion:         tls.VersionTLS13,
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 || certs.Fingerprint(raw[0]) != fp {
				return errors.New("fingerprint mismatch")
			}
			return nil
		},
	})
	if err != nil {
		th.t.Fatal(err)
	}
	c := &client{t: th.t, nc: nc, br: bufio.NewReader(nc)}
	th.t.Cleanup(func() { _ = nc.Close() })
	return c
}

// join dials, says HELLO with a ticket and reads WELCOME and the PEER_SET.
func (th *testHub) join(user, network string) (*client, *p2pwire.PeerSet) {
	th.t.Helper()
	c := th.dial()
	c.send(&p2pwire.Hello{Ticket: th.ticket(user, network)})
	c.welcome = expect[*p2pwire.Welcome](c)
	return c, expect[*p2pwire.PeerSet](c)
}

func (c *client) id() p2pwire.PeerID { return c.welcome.PeerID }

func (c *client) send(m p2pwire.Message) {
	c.t.Helper()
	b, err := p2pwire.AppendMessageFrame(nil, m)
	if err != nil {
		c.t.Fatal(err)
	}
	c.sendRaw(b)
}

func (c *client) sendRaw(b []byte) {
	c.t.Helper()
	_ = c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// read returns the next message, or the error that ended the stream.
func (c *client) read() (p2pwire.Message, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	body, err := p2pwire.ReadFrame(c.br, nil, p2pwire.MaxFrameSize)
	if err != nil {
		return nil, err
	}
	return p2pwire.Decode(body)
}

// expect reads the next message, skipping PONGs, and fails unless it is a T.
func expect[T p2pwire.Message](c *client) T {
	c.t.Helper()
	for {
		m, err := c.read()
		if err != nil {
			c.t.Fatalf("want %T: %v", *new(T), err)
		}
		if _, ok := m.(*p2pwire.Pong); ok {
			continue
		}
		v, ok := m.(T)
		if !ok {
			c.t.Fatalf("want %T, got %s", *new(T), describe(m))
		}
		return v
	}
}

func describe(m p2pwire.Message) string {
	if e, ok := m.(*p2pwire.Error); ok {
		return fmt.Sprintf("ERROR %s (%q)", e.Code, e.Reason)
	}
	return fmt.Sprintf("%s %+v", m.Kind(), m)
}

// expectError reads until an ERROR and checks its code and closing flag.
func (c *client) expectError(code p2pwire.ErrorCode, closing bool) *p2pwire.Error {
	c.t.Helper()
	e := expect[*p2pwire.Error](c)
	if e.Code != code || e.Closing != closing {
		c.t.Fatalf("got ERROR %s closing=%v (%q), want %s closing=%v", e.Code, e.Closing, e.Reason, code, closing)
	}
	return e
}

// expectClosed checks that the hub closes the connection.
func (c *client) expectClosed() {
	c.t.Helper()
	for {
		m, err := c.read()
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				c.t.Fatalf("connection still open")
			}
			return // reset
		}
		if e, ok := m.(*p2pwire.Error); !ok || !e.Closing {
			c.t.Fatalf("want the connection closed, got %s", describe(m))
		}
	}
}

// ping round-trips a PING, proving the connection (and the hub) still work.
func (c *client) ping(v uint64) {
	c.t.Helper()
	c.send(&p2pwire.Ping{Value: v})
	for {
		m, err := c.read()
		if err != nil {
			c.t.Fatalf("ping: %v", err)
		}
		if p, ok := m.(*p2pwire.Pong); ok && p.Value == v {
			return
		}
	}
}

func msgTo(to p2pwire.PeerID, header string, payload []byte) *p2pwire.Msg {
	return &p2pwire.Msg{Route: p2pwire.Route{To: to}, Envelope: p2pwire.Envelope{Header: header, Payload: payload}}
}
