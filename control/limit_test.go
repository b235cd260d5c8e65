package control

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
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
