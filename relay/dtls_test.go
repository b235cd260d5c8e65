package relay_test

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pion/dtls/v3"
	"github.com/pion/dtls/v3/pkg/protocol"
	"github.com/pion/dtls/v3/pkg/protocol/handshake"
	"github.com/pion/dtls/v3/pkg/protocol/recordlayer"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchboardgg/switchboard/protocol/relaywire"
	"github.com/switchboardgg/switchboard/relay"
	"github.com/switchboardgg/switchboard/tokens"
)

// serveDTLS serves the fixture's relay over DTLS on a new socket and
// returns its address.
func (f *fixture) serveDTLS() string {
	f.t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		f.t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := f.s.ServeDTLS(pc); !errors.Is(err, relay.ErrServerClosed) {
			f.t.Errorf("ServeDTLS returned %v, want ErrServerClosed", err)
		}
	}()
	f.t.Cleanup(func() {
		f.s.Close() // idempotent; the fixture's cleanup runs after this one
		wg.Wait()
	})
	return pc.LocalAddr().String()
}

// allSuites are the suites the carrier offers, as pion names them.
func allSuites() []dtls.CipherSuiteID {
	var out []dtls.CipherSuiteID
	for _, id := range relaywire.DTLSCipherSuites {
		out = append(out, dtls.CipherSuiteID(id))
	}
	return out
}

// dtlsClient is a pion DTLS client on its own UDP socket: the identity and
// key as Unity Transport sets them (UnityTLSConfiguration: pskIdentity =
// the allocation id's 16 bytes, psk = the 64-byte key).
type dtlsClient struct {
	t    *testing.T
	pc   net.PacketConn
	conn *dtls.Conn
}

func dialDTLS(t *testing.T, addr string, identity, key []byte, suites ...dtls.CipherSuiteID) (*dtlsClient, error) {
	t.Helper()
	ra, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if len(suites) == 0 {
		suites = allSuites()
	}
	conn, err := dtls.ClientWithOptions(pc, ra,
		dtls.WithPSK(func([]byte) ([]byte, error) { return key, nil }),
		dtls.WithPSKIdentityHint(identity),
		dtls.WithCipherSuites(suites...))
	if err != nil {
		pc.Close()
		t.Fatal(err)
	}
	c := &dtlsClient{t: t, pc: pc, conn: conn}
	t.Cleanup(c.close)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := conn.HandshakeContext(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *dtlsClient) send(b []byte) {
	if _, err := c.conn.Write(b); err != nil {
		c.t.Fatal(err)
	}
}

func (c *dtlsClient) recv(d time.Duration) ([]byte, error) {
	buf := make([]byte, 65536)
	_ = c.conn.SetReadDeadline(time.Now().Add(d))
	n, err := c.conn.Read(buf)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return nil, errTimeout
	}
	return buf[:n], err
}

func (c *dtlsClient) close() {
	c.conn.Close()
	c.pc.Close()
}

// TestDTLSRelay: a host over DTLS and a joiner over UDP in one allocation
// pair, with the identity in both forms and every cipher suite offered:
// bind, connect, relay both ways, ping echoed, stats name the carrier.
func TestDTLSRelay(t *testing.T) {
	f := newFixture(t, nil)
	addr := f.serveDTLS()
	for _, form := range []string{"bytes", "uuid"} {
		for _, suite := range allSuites() {
			t.Run(form+"/"+suite.String(), func(t *testing.T) {
				h := f.host(4)
				j := f.joiner(h)
				identity := h.id[:]
				if form == "uuid" {
					identity = []byte(uuid(h.id))
				}
				hc, err := dialDTLS(t, addr, identity, h.key, suite)
				if err != nil {
					t.Fatalf("handshake: %v", err)
				}
				if strings.HasPrefix(suite.String(), "unknown") {
					t.Fatalf("pion does not know suite %#04x", uint16(suite))
				}
				if st, _ := hc.conn.ConnectionState(); st.CipherSuiteID != suite {
					t.Fatalf("negotiated %v, want %v", st.CipherSuiteID, suite)
				}
				jc := dialUDP(t, f.udp)
				bound(t, hc, h, 0)
				bound(t, jc, j, 0)
				connected(t, jc, j, h)

				m := mRelay(j.id, h.id, []byte("hello DTLS host"))
				jc.send(m)
				expectNext(t, hc, m)
				m = mRelay(h.id, j.id, make([]byte, 1434)) // UTP's largest UDP payload
				hc.send(m)
				expectNext(t, jc, m)
				hc.send(mPing(h.id))
				expectNext(t, hc, mPing(h.id))

				st, ok := f.s.Allocation(h.id)
				if !ok || st.Carrier != "dtls" || st.Peers != 1 || st.PacketsIn != 1 {
					t.Fatalf("host stats %+v, %v; want carrier dtls, 1 peer, 1 packet in", st, ok)
				}
			})
		}
	}
}

func uuid(id [16]byte) string {
	const hex = "0123456789abcdef"
	var b strings.Builder
	for i, x := range id {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b.WriteByte('-')
		}
		b.WriteByte(hex[x>>4])
		b.WriteByte(hex[x&15])
	}
	return b.String()
}

// TestDTLSRefusals: a wrong key, an identity that is no allocation id, and
// an unknown key id fail the handshake; a connection binds only the
// allocation its identity names.
func TestDTLSRefusals(t *testing.T) {
	f := newFixture(t, nil)
	addr := f.serveDTLS()
	h := f.host(4)
	other := f.host(4)

	wrongKey := append([]byte(nil), h.key...)
	wrongKey[0] ^= 1
	unknownKeyID := h.id
	unknownKeyID[15] ^= 1 // names relay secret 0, which the node does not have
	for name, tc := range map[string]struct{ identity, key []byte }{
		"wrong key":      {h.id[:], wrongKey},
		"not an id":      {[]byte("player-1"), h.key},
		"unknown key id": {unknownKeyID[:], h.key},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := dialDTLS(t, addr, tc.identity, tc.key); err == nil {
				t.Fatal("handshake succeeded")
			}
		})
	}
	waitFor(t, "3 failed handshakes", func() bool {
		return f.value("switchboard_relay_dtls_handshakes_total", "result", "failed") >= 3
	})

	c, err := dialDTLS(t, addr, h.id[:], h.key)
	if err != nil {
		t.Fatal(err)
	}
	c.send(mBind(0, other.blob, other.key)) // a valid BIND, of another allocation
	expectSilence(t, c)
	if got := f.drops("dtls_identity"); got != 1 {
		t.Fatalf("dtls_identity drops %v, want 1", got)
	}
	if _, ok := f.s.Allocation(other.id); ok {
		t.Fatal("the other allocation was bound")
	}
	bound(t, c, h, 0)
}

// clientHello returns the first datagram a pion client sends: a
// ClientHello without a cookie, as a spoofing attacker would send it.
func clientHello(t *testing.T) []byte {
	t.Helper()
	sink, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	conn, err := dtls.ClientWithOptions(pc, sink.LocalAddr(),
		dtls.WithPSK(func([]byte) ([]byte, error) { return make([]byte, 64), nil }),
		dtls.WithPSKIdentityHint(make([]byte, 16)),
		dtls.WithCipherSuites(allSuites()...))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); conn.HandshakeContext(ctx) }()
	defer func() { cancel(); <-done }()
	buf := make([]byte, 2048)
	_ = sink.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, _, err := sink.ReadFrom(buf)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}

// minimalClientHello is a ClientHello with nothing but its fixed fields
// (version, random, empty session id and cookie, no cipher suite, no
// compression method) and an empty extension list: 13 + 12 + 39 + 2 = 66
// bytes. Without the extension list's length (optional in TLS 1.2) it
// would be 64, the smallest a ClientHello can be.
func minimalClientHello(t *testing.T) []byte {
	t.Helper()
	m := &handshake.MessageClientHello{Version: protocol.Version1_2}
	rand.Read(m.Random.RandomBytes[:])
	r := &recordlayer.RecordLayer{
		Header:  recordlayer.Header{Version: protocol.Version1_2},
		Content: &handshake.Handshake{Message: m},
	}
	b, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// hvrSize is the size of a DTLS 1.2 HelloVerifyRequest with a 20-byte
// cookie: record header 13, handshake header 12, version 2, cookie length
// 1, cookie 20 (RFC 6347 §4.2.1).
const hvrSize = 13 + 12 + 2 + 1 + 20

// TestDTLSHelloVerify: a ClientHello without a cookie, from a source that
// never answers (a spoofed one), gets exactly one HelloVerifyRequest of the
// standard size, smaller than the ClientHello, and nothing more: the relay
// is no amplifier. Datagrams that are not a ClientHello get nothing.
func TestDTLSHelloVerify(t *testing.T) {
	f := newFixture(t, func(c *relay.Config) { c.DTLSHandshakeTimeout = 300 * time.Millisecond })
	addr := f.serveDTLS()
	minimal := minimalClientHello(t)
	if len(minimal) != 66 {
		t.Fatalf("the minimal ClientHello has %d bytes, want 66", len(minimal))
	}
	for name, hello := range map[string][]byte{"pion's": clientHello(t), "minimal": minimal} {
		t.Run(name, func(t *testing.T) {
			spoofed := dialUDP(t, addr)
			spoofed.send(hello)
			got, err := spoofed.recv(5 * time.Second)
			if err != nil {
				t.Fatalf("no HelloVerifyRequest: %v", err)
			}
			if len(got) != hvrSize || got[0] != 22 || got[13] != byte(handshake.TypeHelloVerifyRequest) {
				t.Fatalf("got % x (%d bytes), want a HelloVerifyRequest of %d bytes", got, len(got), hvrSize)
			}
			if len(got) >= len(hello) {
				t.Fatalf("answer of %d bytes to a ClientHello of %d", len(got), len(hello))
			}
			// HelloVerifyRequests are never retransmitted (RFC 6347
			// §4.2.1): pion's first retransmission would come after 1 s.
			if more, err := spoofed.recv(1500 * time.Millisecond); err == nil {
				t.Fatalf("a second answer: % x", more)
			}
		})
	}
	junk := dialUDP(t, addr)
	junk.send(mPing([16]byte{1})) // a relay message, not DTLS
	junk.send([]byte{23, 0xfe, 0xfd, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0})
	expectSilence(t, junk)
	waitFor(t, "2 dtls_not_hello drops", func() bool { return f.drops("dtls_not_hello") == 2 })
}

// TestDTLSHandshakeLimits: handshakes per IP address are bounded (a
// ClientHello over the bound gets nothing), and a slot comes back when a
// handshake times out.
func TestDTLSHandshakeLimits(t *testing.T) {
	f := newFixture(t, func(c *relay.Config) {
		c.MaxDTLSHandshakesPerIP = 1
		c.DTLSHandshakeTimeout = time.Second // long enough that the first holds its slot while the second knocks
	})
	addr := f.serveDTLS()
	hello := clientHello(t)
	first, second := dialUDP(t, addr), dialUDP(t, addr)
	first.send(hello)
	if _, err := first.recv(5 * time.Second); err != nil {
		t.Fatalf("first handshake: no HelloVerifyRequest: %v", err)
	}
	second.send(hello) // same IP address, another port
	expectSilence(t, second)
	if got := f.drops("dtls_handshakes"); got != 1 {
		t.Fatalf("dtls_handshakes drops %v, want 1", got)
	}
	// The first handshake times out; its slot is free again.
	waitFor(t, "the first handshake to time out", func() bool {
		return f.value("switchboard_relay_dtls_handshakes_total", "result", "failed") == 1
	})
	second.send(hello)
	if _, err := second.recv(5 * time.Second); err != nil {
		t.Fatalf("after the timeout: no HelloVerifyRequest: %v", err)
	}
	// A whole handshake still works within the limit once that one ends.
	waitFor(t, "the second handshake to time out", func() bool {
		return f.value("switchboard_relay_dtls_handshakes_total", "result", "failed") == 2
	})
	h := f.host(1)
	c, err := dialDTLS(t, addr, h.id[:], h.key)
	if err != nil {
		t.Fatal(err)
	}
	bound(t, c, h, 0)
}

// TestDTLSClosedWithAllocation: releasing the allocation bound over a DTLS
// connection closes the connection (close_notify), and a server Close ends
// every connection and goroutine.
func TestDTLSClosedWithAllocation(t *testing.T) {
	f := newFixture(t, nil)
	addr := f.serveDTLS()
	h := f.host(1)
	c, err := dialDTLS(t, addr, h.id[:], h.key)
	if err != nil {
		t.Fatal(err)
	}
	bound(t, c, h, 0)
	c.send(append(hdr(tClose), h.id[:]...))
	if got, err := c.recv(5 * time.Second); err == nil || errors.Is(err, errTimeout) {
		t.Fatalf("after CLOSE: got % x, %v; want the connection closed", got, err)
	}
	waitFor(t, "no DTLS connection", func() bool { return f.gauge("switchboard_relay_dtls_connections") == 0 })

	// A live connection at Close: goleak (TestMain) checks that nothing
	// is left.
	h2 := f.host(1)
	c2, err := dialDTLS(t, addr, h2.id[:], h2.key)
	if err != nil {
		t.Fatal(err)
	}
	bound(t, c2, h2, 0)
	if got := f.gauge("switchboard_relay_dtls_connections"); got != 1 {
		t.Fatalf("%v DTLS connections, want 1", got)
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %s", what)
		}
	}
}

// value is the value of the counter name{label=value}.
func (f *fixture) value(name, label, value string) float64 {
	f.t.Helper()
	return testutil.ToFloat64(f.counter(name, label, value))
}

// gauge is the value of the unlabelled gauge name.
func (f *fixture) gauge(name string) float64 {
	f.t.Helper()
	mfs, err := f.reg.Gather()
	if err != nil {
		f.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	f.t.Fatalf("no gauge %s", name)
	return 0
}

// TestDTLSConfigDefaults: the documented defaults, and negative limits
// refused.
func TestDTLSConfigDefaults(t *testing.T) {
	c := relay.FilledConfigForTest(relay.Config{})
	if c.DTLSHandshakeTimeout != 10*time.Second || c.DTLSIdleTimeout != 60*time.Second || c.MaxDTLSConns != 20_000 ||
		c.MaxDTLSHandshakes != 1024 || c.MaxDTLSHandshakesPerIP != 8 || c.DTLSQueue != 64 || c.MaxDTLSConnsPerAllocation != 4 {
		t.Fatalf("DTLS defaults %+v", c)
	}
	keys, _ := tokens.NewRelayKeyring(tokens.RelayKey{ID: 1, Secret: make([]byte, 32)})
	for _, bad := range []relay.Config{
		{Keys: keys, NodeID: "n", BootEpoch: 1, DTLSHandshakeTimeout: -1},
		{Keys: keys, NodeID: "n", BootEpoch: 1, MaxDTLSHandshakesPerIP: -1},
		{Keys: keys, NodeID: "n", BootEpoch: 1, DTLSQueue: -1},
	} {
		if _, err := relay.New(bad); !errors.Is(err, relay.ErrConfig) {
			t.Errorf("%+v: got %v, want ErrConfig", bad, err)
		}
	}
}

// TestDTLSIdle: a DTLS connection that sends nothing for DTLSIdleTimeout
// is closed (close_notify), bound or not.
func TestDTLSIdle(t *testing.T) {
	f := newFixture(t, func(c *relay.Config) { c.DTLSIdleTimeout = 300 * time.Millisecond })
	addr := f.serveDTLS()
	h := f.host(1)
	c, err := dialDTLS(t, addr, h.id[:], h.key)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.recv(10 * time.Second); err == nil || errors.Is(err, errTimeout) {
		t.Fatalf("idle connection: got % x, %v; want it closed", got, err)
	}
	waitFor(t, "no DTLS connection", func() bool { return f.gauge("switchboard_relay_dtls_connections") == 0 })
}

// TestDTLSConnsPerAllocation: an allocation's DTLS connections past the
// handshake are bounded; one beyond is closed at once, and its place
// comes back when a connection ends.
func TestDTLSConnsPerAllocation(t *testing.T) {
	f := newFixture(t, func(c *relay.Config) { c.MaxDTLSConnsPerAllocation = 1 })
	addr := f.serveDTLS()
	h := f.host(1)
	first, err := dialDTLS(t, addr, h.id[:], h.key)
	if err != nil {
		t.Fatal(err)
	}
	bound(t, first, h, 0)
	second, err := dialDTLS(t, addr, h.id[:], h.key)
	if err == nil {
		if got, err := second.recv(5 * time.Second); err == nil || errors.Is(err, errTimeout) {
			t.Fatalf("second connection: got % x, %v; want it closed", got, err)
		}
	}
	waitFor(t, "a refused connection", func() bool {
		return f.value("switchboard_relay_dtls_handshakes_total", "result", "refused") == 1
	})
	first.close()
	waitFor(t, "no DTLS connection", func() bool { return f.gauge("switchboard_relay_dtls_connections") == 0 })
	third, err := dialDTLS(t, addr, h.id[:], h.key)
	if err != nil {
		t.Fatal(err)
	}
	bound(t, third, h, 1) // a new address: a larger nonce
}

// TestDTLSIdleFollowsAllocation: a DTLS connection stays open through the
// silence its allocation's own idle timeout allows, when longer than
// DTLSIdleTimeout.
func TestDTLSIdleFollowsAllocation(t *testing.T) {
	// 1 s: the BIND must come within it after the handshake, even on a
	// loaded machine.
	f := newFixture(t, func(c *relay.Config) { c.DTLSIdleTimeout = time.Second })
	addr := f.serveDTLS()
	h := f.mint(tokens.RelayConnection{MaxConnections: 1, IdleTimeout: time.Hour})
	c, err := dialDTLS(t, addr, h.id[:], h.key)
	if err != nil {
		t.Fatal(err)
	}
	bound(t, c, h, 0)
	if got, err := c.recv(2 * time.Second); !errors.Is(err, errTimeout) { // silence past DTLSIdleTimeout
		t.Fatalf("during the silence: got % x, %v; want nothing and the connection open", got, err)
	}
	c.send(mPing(h.id))
	expectNext(t, c, mPing(h.id))
}

func TestDTLSHandshakeSource(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.7:5000":                   "192.0.2.7",
		"[::ffff:192.0.2.7]:5000":          "192.0.2.7",
		"[2001:db8:1:2:aaaa::1]:5000":      "2001:db8:1:2::",
		"[2001:db8:1:2:ffff:ffff::9]:6000": "2001:db8:1:2::",
	} {
		if got := relay.HandshakeSourceForTest(netip.MustParseAddrPort(in)); got.String() != want {
			t.Errorf("handshake source of %s: got %s, want %s", in, got, want)
		}
	}
}

// TestDTLSReleasedIdentity: the key of a released allocation still
// derives from its id, so its former holder completes a handshake; the
// connection is closed at once (it could bind nothing), so that released
// allocations' keys cannot hold DTLS connections open.
func TestDTLSReleasedIdentity(t *testing.T) {
	f := newFixture(t, nil)
	addr := f.serveDTLS()
	h := f.host(1)
	c, err := dialDTLS(t, addr, h.id[:], h.key)
	if err != nil {
		t.Fatal(err)
	}
	bound(t, c, h, 0)
	c.send(append(hdr(tClose), h.id[:]...))
	waitFor(t, "no DTLS connection", func() bool { return f.gauge("switchboard_relay_dtls_connections") == 0 })

	// The node finishes the handshake and closes at once: the close can
	// reach the client before its own last handshake step (the dial then
	// fails with close_notify) or after it (the first read fails). The
	// refused count below says which side closed it, and why.
	again, err := dialDTLS(t, addr, h.id[:], h.key)
	switch {
	case err != nil && !strings.Contains(err.Error(), "CloseNotify"):
		t.Fatal(err)
	case err == nil:
		if got, err := again.recv(5 * time.Second); err == nil || errors.Is(err, errTimeout) {
			t.Fatalf("released identity: got % x, %v; want the connection closed", got, err)
		}
	}
	waitFor(t, "no DTLS connection", func() bool { return f.gauge("switchboard_relay_dtls_connections") == 0 })
	if got := f.value("switchboard_relay_dtls_handshakes_total", "result", "refused"); got != 1 {
		t.Fatalf("%v refused handshakes, want 1", got)
	}
}

// TestDTLSCookieTimeout: a handshake whose source never echoes the cookie
// (a spoofed one) gives its slot back after DTLSCookieTimeout, long
// before DTLSHandshakeTimeout; one that echoes it goes on.
func TestDTLSCookieTimeout(t *testing.T) {
	f := newFixture(t, func(c *relay.Config) {
		c.MaxDTLSHandshakesPerIP = 1
		c.DTLSHandshakeTimeout = time.Minute
		c.DTLSCookieTimeout = 300 * time.Millisecond
	})
	addr := f.serveDTLS()
	spoofed := dialUDP(t, addr)
	spoofed.send(clientHello(t))
	if _, err := spoofed.recv(5 * time.Second); err != nil {
		t.Fatalf("no HelloVerifyRequest: %v", err)
	}
	waitFor(t, "the unechoed handshake to end", func() bool {
		return f.value("switchboard_relay_dtls_handshakes_total", "result", "failed") == 1
	})
	h := f.host(1)
	c, err := dialDTLS(t, addr, h.id[:], h.key)
	if err != nil {
		t.Fatal(err)
	}
	bound(t, c, h, 0)
	if c := relay.FilledConfigForTest(relay.Config{}); c.DTLSCookieTimeout != 2*time.Second {
		t.Fatalf("DTLSCookieTimeout default %v, want 2s", c.DTLSCookieTimeout)
	}
}

// TestDTLSCookieEchoed: a source that echoes the cookie and then stalls
// keeps its handshake past DTLSCookieTimeout, until DTLSHandshakeTimeout.
func TestDTLSCookieEchoed(t *testing.T) {
	f := newFixture(t, func(c *relay.Config) {
		c.DTLSHandshakeTimeout = 4 * time.Second
		c.DTLSCookieTimeout = time.Second
	})
	addr := f.serveDTLS()
	hello := clientHello(t)
	start := time.Now()
	c := dialUDP(t, addr)
	c.send(hello)
	hvr, err := c.recv(5 * time.Second)
	if err != nil {
		t.Fatalf("no HelloVerifyRequest: %v", err)
	}
	c.send(withCookie(t, hello, hvr[13+12+3:13+12+3+int(hvr[13+12+2])]))
	// Past the cookie timeout (with a margin), the handshake is still on.
	time.Sleep(time.Until(start.Add(2500 * time.Millisecond)))
	if got := f.value("switchboard_relay_dtls_handshakes_total", "result", "failed"); got != 0 {
		t.Fatalf("an echoed handshake ended at the cookie timeout (%v failed)", got)
	}
	waitFor(t, "the handshake timeout", func() bool {
		return f.value("switchboard_relay_dtls_handshakes_total", "result", "failed") == 1
	})
}

// withCookie returns the cookieless ClientHello hello with cookie in it,
// as the second ClientHello of a handshake (message_seq 1, record
// sequence 1).
func withCookie(t *testing.T, hello, cookie []byte) []byte {
	t.Helper()
	at := 13 + 12 + 2 + 32
	at += 1 + int(hello[at])
	if hello[at] != 0 {
		t.Fatalf("the ClientHello has a cookie already")
	}
	out := append(append(append(append([]byte(nil), hello[:at]...), byte(len(cookie))), cookie...), hello[at+1:]...)
	put16 := func(i, d int) { binary.BigEndian.PutUint16(out[i:], uint16(int(binary.BigEndian.Uint16(out[i:]))+d)) }
	put24 := func(i, d int) {
		v := int(out[i])<<16 | int(out[i+1])<<8 | int(out[i+2]) + d
		out[i], out[i+1], out[i+2] = byte(v>>16), byte(v>>8), byte(v)
	}
	put16(11, len(cookie)) // record length
	out[10] = 1            // record sequence number 1
	put24(14, len(cookie)) // handshake length
	out[18] = 1            // message_seq 1
	put24(22, len(cookie)) // fragment length
	return out
}

// TestDTLSMustBind: a DTLS connection that binds nothing within
// DTLSHandshakeTimeout of its handshake is closed, however much it sends
// (a live allocation's key holder cannot keep idle connections), and one
// that bound stays.
func TestDTLSMustBind(t *testing.T) {
	f := newFixture(t, func(c *relay.Config) { c.DTLSHandshakeTimeout = 500 * time.Millisecond })
	addr := f.serveDTLS()
	h := f.host(1)
	idle, err := dialDTLS(t, addr, h.id[:], h.key)
	if err != nil {
		t.Fatal(err)
	}
	j := f.joiner(h)
	busy, err := dialDTLS(t, addr, j.id[:], j.key)
	if err != nil {
		t.Fatal(err)
	}
	bound(t, busy, j, 0)
	for deadline := time.Now().Add(10 * time.Second); ; {
		if time.Now().After(deadline) {
			t.Fatal("the unbound connection is still open after 10 s")
		}
		idle.send(mPing(h.id)) // unbound: answered with ERROR 4 at most
		if got, err := idle.recv(100 * time.Millisecond); err != nil && !errors.Is(err, errTimeout) {
			break // closed
		} else if err == nil && len(got) > 0 && got[3] != tError {
			t.Fatalf("unbound connection got % x", got)
		}
		busy.send(mPing(j.id))
		expectNext(t, busy, mPing(j.id))
		if f.gauge("switchboard_relay_dtls_connections") < 2 {
			break
		}
	}
	waitFor(t, "the unbound connection closed", func() bool { return f.gauge("switchboard_relay_dtls_connections") == 1 })
	if got := f.drops("dtls_unbound"); got != 1 {
		t.Fatalf("dtls_unbound %v, want 1", got)
	}
	busy.send(mPing(j.id))
	expectNext(t, busy, mPing(j.id))
}
