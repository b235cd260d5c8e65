package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSelfSignedReusedWhileValid(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := SelfSignedConfig{Dir: dir, Hosts: []string{"0.0.0.0", "game.test"}, Now: func() time.Time { return now }}
	cf, kf, gen, err := SelfSigned(cfg)
	if err != nil || !gen {
		t.Fatalf("first SelfSigned: generated %v, err %v; want a new certificate", gen, err)
	}
	first := mustLoad(t, cf, kf)
	leaf := first.Certificate().Leaf
	for _, h := range []string{"localhost", "127.0.0.1", "::1", "game.test"} {
		if err := leaf.VerifyHostname(h); err != nil {
			t.Errorf("certificate does not cover %s: %v", h, err)
		}
	}
	if fi, err := os.Stat(kf); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode: %v, %v; want 0600", fi.Mode(), err)
	}

	if _, _, gen, err := SelfSigned(cfg); err != nil || gen {
		t.Fatalf("second SelfSigned: generated %v, err %v; want the files reused", gen, err)
	}
	if got := mustLoad(t, cf, kf).Fingerprint(); got != first.Fingerprint() {
		t.Errorf("fingerprint changed on reuse: got %s, want %s", got, first.Fingerprint())
	}

	tests := []struct {
		name string
		cfg  SelfSignedConfig
	}{
		{"new host", SelfSignedConfig{Dir: dir, Hosts: []string{"other.test"}, Now: cfg.Now}},
		{"near expiry", SelfSignedConfig{Dir: dir, Now: func() time.Time { return now.Add(DefaultValidity - DefaultRenewBefore/2) }}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := mustLoad(t, cf, kf).Fingerprint()
			if _, _, gen, err := SelfSigned(tc.cfg); err != nil || !gen {
				t.Fatalf("SelfSigned: generated %v, err %v; want a new certificate", gen, err)
			}
			if mustLoad(t, cf, kf).Fingerprint() == before {
				t.Errorf("fingerprint unchanged, want a new certificate")
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	cf, kf, _, err := SelfSigned(SelfSignedConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.pem")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load("", kf); !errors.Is(err, ErrNoCertificate) {
		t.Errorf("Load without a certificate file: got %v, want ErrNoCertificate", err)
	}
	if _, err := Load(filepath.Join(dir, "missing.pem"), kf); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of a missing file: got %v, want ErrNotExist", err)
	}
	if _, err := Load(empty, kf); err == nil {
		t.Errorf("Load of an empty certificate file: got nil error")
	}
	if _, err := Load(cf, cf); err == nil {
		t.Errorf("Load with the certificate as key: got nil error")
	}
}

func TestFingerprint(t *testing.T) {
	// SHA-256 of the empty string.
	const want = "E3:B0:C4:42:98:FC:1C:14:9A:FB:F4:C8:99:6F:B9:24:27:AE:41:E4:64:9B:93:4C:A4:95:99:1B:78:52:B8:55"
	if got := Fingerprint(nil); got != want {
		t.Errorf("Fingerprint(nil) = %s, want %s", got, want)
	}
}

// TestReloadOverTLS serves TLS on 127.0.0.1 with a Store's config and
// checks that a client sees the new certificate after Reload, and the old
// one after a failed Reload.
func TestReloadOverTLS(t *testing.T) {
	dir := t.TempDir()
	cf, kf, _, err := SelfSigned(SelfSignedConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	s := mustLoad(t, cf, kf)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", s.TLSConfig())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			_, _ = io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	defer func() { ln.Close(); <-done }()

	first := s.Fingerprint()
	if got := peerFingerprint(t, ln.Addr().String(), cf); got != first {
		t.Fatalf("served %s, want %s", got, first)
	}
	// A new certificate in the same files.
	if err := os.Remove(cf); err != nil {
		t.Fatal(err)
	}
	if _, _, gen, err := SelfSigned(SelfSignedConfig{Dir: dir}); err != nil || !gen {
		t.Fatalf("regenerate: %v %v", gen, err)
	}
	if err := s.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	second := s.Fingerprint()
	if second == first {
		t.Fatalf("fingerprint unchanged after Reload")
	}
	if got := peerFingerprint(t, ln.Addr().String(), cf); got != second {
		t.Errorf("after Reload served %s, want %s", got, second)
	}
	// A broken file keeps the certificate in use.
	if err := os.WriteFile(cf, []byte("not pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err == nil {
		t.Errorf("Reload of a broken file: got nil error")
	}
	if s.Fingerprint() != second {
		t.Errorf("failed Reload changed the certificate")
	}
}

func mustLoad(t *testing.T, cf, kf string) *Store {
	t.Helper()
	s, err := Load(cf, kf)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return s
}

// peerFingerprint dials addr trusting the certificate in certFile and
// returns the fingerprint of the certificate served.
func peerFingerprint(t *testing.T, addr, certFile string) string {
	t.Helper()
	pemData, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemData) {
		t.Fatalf("no certificate in %s", certFile)
	}
	host, _, _ := net.SplitHostPort(addr)
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: host})
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer c.Close()
	certs := c.ConnectionState().PeerCertificates
	if len(certs) == 0 || !strings.Contains(Fingerprint(certs[0].Raw), ":") {
		t.Fatalf("no peer certificate")
	}
	return Fingerprint(certs[0].Raw)
}
