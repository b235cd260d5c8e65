package control

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestLoginLimitKeysIPv6By64: the C0 limiter counts an IPv6 client by its
// /64, and an IPv4-mapped address as its IPv4 address. It used to give
// every address of a /64 (2^64 of them) a bucket of its own.
func TestLoginLimitKeysIPv6By64(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.LoginRate, c.LoginBurst = 1e-9, 1 })
	login := func(remote string) int {
		req := httptest.NewRequest("POST", "/client/v1/sessions", bytes.NewReader([]byte(`{"username": "alice"}`)))
		req.RemoteAddr = remote
		rec := httptest.NewRecorder()
		e.srv.Handler().ServeHTTP(rec, req)
		return rec.Code
	}
	steps := []struct {
		remote  string
		limited bool
	}{
		{"[2001:db8:1:2::1]:4000", false},
		{"[2001:db8:1:2:ffff:ffff:ffff:fffe]:4001", true}, // same /64
		{"[2001:db8:1:3::1]:4000", false},                 // next /64
		{"[fe80::1%eth0]:4000", false},
		{"[fe80::2%eth1]:4000", true}, // zones do not make a new key
		{"192.0.2.7:4000", false},
		{"[::ffff:192.0.2.7]:4001", true}, // IPv4-mapped: the same client
		{"192.0.2.8:4000", false},
	}
	for _, s := range steps {
		got := login(s.remote) == http.StatusTooManyRequests
		if got != s.limited {
			t.Errorf("%s: rate limited %v, want %v", s.remote, got, s.limited)
		}
	}
}

func TestClientIP(t *testing.T) {
	for remote, want := range map[string]string{
		"[2001:db8:a:b:c:d:e:f]:1": "2001:db8:a:b::/64",
		"[::1]:1":                  "::/64",
		"127.0.0.1:1":              "127.0.0.1",
		"[::ffff:10.0.0.1]:1":      "10.0.0.1",
		"pipe":                     "pipe",
	} {
		if got := clientIP(&http.Request{RemoteAddr: remote}); got != want {
			t.Errorf("%s: got %s, want %s", remote, got, want)
		}
	}
}

// TestLoginLimitKeysIPv6By48: past the limit per /64, a /48 has a looser
// bucket of its own, so that its 65,536 /64s are not as many buckets.
func TestLoginLimitKeysIPv6By48(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.LoginRate, c.LoginBurst = 1e-9, 1
		c.LoginPrefixRate, c.LoginPrefixBurst = 1e-9, 3
	})
	login := func(remote string) int {
		req := httptest.NewRequest("POST", "/client/v1/sessions", bytes.NewReader([]byte(`{"username": "alice"}`)))
		req.RemoteAddr = remote
		rec := httptest.NewRecorder()
		e.srv.Handler().ServeHTTP(rec, req)
		return rec.Code
	}
	steps := []struct {
		remote  string
		limited bool
	}{
		{"[2001:db8:1:1::1]:4000", false},
		{"[2001:db8:1:1::2]:4000", true}, // the /64's bucket is empty: no /48 token taken
		{"[2001:db8:1:2::1]:4000", false},
		{"[2001:db8:1:3::1]:4000", false}, // the /48's third token
		{"[2001:db8:1:4::1]:4000", true},  // a fresh /64, but the /48 is empty
		{"[2001:db8:2:1::1]:4000", false}, // another /48
		{"192.0.2.7:4000", false},         // IPv4: no /48 bucket
		{"192.0.2.8:4000", false},
		{"192.0.2.9:4000", false},
		{"192.0.2.10:4000", false},
	}
	for _, s := range steps {
		got := login(s.remote) == http.StatusTooManyRequests
		if got != s.limited {
			t.Errorf("%s: rate limited %v, want %v", s.remote, got, s.limited)
		}
	}
}

// TestServeMaxConnections: Serve holds at most MaxConnections open; the
// next connection is answered once one closes.
func TestServeMaxConnections(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxConnections = 1 })
	ln, err := listen(t)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- e.srv.Serve(ln) }()
	defer func() {
		_ = e.srv.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: got %v, want ErrServerClosed", err)
		}
	}()
	get := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		return c, bufio.NewReader(c)
	}
	status := func(br *bufio.Reader) int {
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	c1, br1 := get()
	if got := status(br1); got != http.StatusOK {
		t.Fatalf("first connection: %d", got)
	}
	// c1 stays open (keep-alive): c2 waits. A correct server never
	// answers here, so the short wait cannot fail a correct server.
	c2, br2 := get()
	_ = c2.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	var ne net.Error
	if _, err := br2.Peek(1); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("second connection answered while the first is open: %v", err)
	}
	c1.Close()
	_ = c2.SetReadDeadline(time.Now().Add(10 * time.Second))
	if got := status(br2); got != http.StatusOK {
		t.Fatalf("second connection: %d", got)
	}
}
