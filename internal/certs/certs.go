package certs

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
)

// Store is a certificate and key loaded from PEM files, reloadable. Its
// methods are safe for concurrent use.
type Store struct {
	// immutable after Load
	certFile, keyFile string

	// replaced whole by Reload
	cur atomic.Pointer[loaded]
}

// loaded is one successful load.
type loaded struct {
	cert        *tls.Certificate
	fingerprint string
}

// Load reads a PEM certificate (chain, leaf first) and its PEM private key.
// An empty file name, a file without a certificate, or a key that does
// not match returns an error.
func Load(certFile, keyFile string) (*Store, error) {
	if certFile == "" || keyFile == "" {
		return nil, fmt.Errorf("certs: load: %w: both a certificate and a key file are needed", ErrNoCertificate)
	}
	s := &Store{certFile: certFile, keyFile: keyFile}
	if err := s.Reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// Reload reads the files again. On success new TLS handshakes use the new
// certificate; connections already open keep theirs. On error the
// certificate loaded before stays in use.
func (s *Store) Reload() error {
	certPEM, err := os.ReadFile(s.certFile)
	if err != nil {
		return fmt.Errorf("certs: read certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(s.keyFile)
	if err != nil {
		return fmt.Errorf("certs: read key: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("certs: load %s and %s: %w", s.certFile, s.keyFile, err)
	}
	if len(cert.Certificate) == 0 {
		return fmt.Errorf("certs: load %s: %w", s.certFile, ErrNoCertificate)
	}
	if cert.Leaf == nil {
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return fmt.Errorf("certs: parse %s: %w", s.certFile, err)
		}
	}
	s.cur.Store(&loaded{cert: &cert, fingerprint: Fingerprint(cert.Certificate[0])})
	return nil
}

// Certificate returns the certificate loaded last. Its Leaf is set.
func (s *Store) Certificate() *tls.Certificate { return s.cur.Load().cert }

// Fingerprint returns the [Fingerprint] of the leaf certificate loaded
// last.
func (s *Store) Fingerprint() string { return s.cur.Load().fingerprint }

// Files returns the certificate and key file names given to [Load].
func (s *Store) Files() (certFile, keyFile string) { return s.certFile, s.keyFile }

// TLSConfig returns a server configuration that presents the certificate
// loaded last, TLS 1.2 at least, offering HTTP/1.1 only (the node's
// WebSocket upgrade needs it, and the API serves HTTP/1.1).
func (s *Store) TLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return s.cur.Load().cert, nil
		},
	}
}

// Fingerprint returns the SHA-256 of a DER certificate as upper-case hex
// byte pairs separated by colons, as browsers and `openssl x509
// -fingerprint -sha256` show it.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	h := strings.ToUpper(hex.EncodeToString(sum[:]))
	var b strings.Builder
	b.Grow(len(h) + len(h)/2)
	for i := 0; i < len(h); i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(h[i : i+2])
	}
	return b.String()
}
