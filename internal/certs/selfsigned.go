package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Defaults of [SelfSignedConfig].
const (
	// DefaultCertFile and DefaultKeyFile are the names of the generated
	// files in SelfSignedConfig.Dir.
	DefaultCertFile = "tls-cert.pem"
	DefaultKeyFile  = "tls-key.pem"
	// DefaultValidity is how long a generated certificate is valid: a
	// year, under the 398 days browsers and Apple platforms accept.
	DefaultValidity = 365 * 24 * time.Hour
	// DefaultRenewBefore is how long before its expiry an existing
	// certificate is replaced by a new one.
	DefaultRenewBefore = 30 * 24 * time.Hour
)

// defaultHosts are the names a self-signed certificate covers when
// SelfSignedConfig.Hosts is empty, and always in addition to them.
var defaultHosts = []string{"localhost", "127.0.0.1", "::1"}

// SelfSignedConfig configures [SelfSigned]. Dir is required.
type SelfSignedConfig struct {
	// Dir receives DefaultCertFile and DefaultKeyFile (mode 0600).
	// Required; created if missing.
	Dir string
	// Hosts are the DNS names and IP addresses the certificate covers,
	// besides localhost, 127.0.0.1 and ::1. Empty and unspecified
	// addresses (0.0.0.0, ::) are skipped.
	Hosts []string
	// Validity is the lifetime of a new certificate. Zero means
	// DefaultValidity.
	Validity time.Duration
	// Now returns the current time. Nil means time.Now.
	Now func() time.Time
}

// SelfSigned returns the files of a self-signed certificate in cfg.Dir. It
// reuses the files there when they load, cover every host and stay valid
// for DefaultRenewBefore more, so that a client that pinned the
// fingerprint keeps trusting it across restarts; otherwise it writes a new
// ECDSA P-256 certificate and key. generated says which.
func SelfSigned(cfg SelfSignedConfig) (certFile, keyFile string, generated bool, err error) {
	if cfg.Dir == "" {
		return "", "", false, fmt.Errorf("certs: self-signed: no directory")
	}
	if cfg.Validity <= 0 {
		cfg.Validity = DefaultValidity
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	hosts := hostList(cfg.Hosts)
	certFile = filepath.Join(cfg.Dir, DefaultCertFile)
	keyFile = filepath.Join(cfg.Dir, DefaultKeyFile)
	now := cfg.Now()
	if s, err := Load(certFile, keyFile); err == nil && covers(s.Certificate().Leaf, hosts, now) {
		return certFile, keyFile, false, nil
	}
	certPEM, keyPEM, err := generate(hosts, now, cfg.Validity)
	if err != nil {
		return "", "", false, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return "", "", false, fmt.Errorf("certs: self-signed: %w", err)
	}
	// The key first: a crash between the two leaves a pair that does not
	// load, which the next call replaces.
	if err := writeFileAtomic(keyFile, keyPEM); err != nil {
		return "", "", false, err
	}
	if err := writeFileAtomic(certFile, certPEM); err != nil {
		return "", "", false, err
	}
	return certFile, keyFile, true, nil
}

// hostList returns the default hosts plus the usable ones of extra,
// without duplicates.
func hostList(extra []string) []string {
	seen := make(map[string]bool)
	var out []string
	for _, h := range append(append([]string(nil), defaultHosts...), extra...) {
		if h == "" || seen[h] {
			continue
		}
		if ip := net.ParseIP(h); ip != nil && ip.IsUnspecified() {
			continue
		}
		seen[h] = true
		out = append(out, h)
	}
	return out
}

// covers reports whether leaf is valid at now for DefaultRenewBefore more
// and names every host.
func covers(leaf *x509.Certificate, hosts []string, now time.Time) bool {
	if now.Before(leaf.NotBefore) || now.Add(DefaultRenewBefore).After(leaf.NotAfter) {
		return false
	}
	for _, h := range hosts {
		if leaf.VerifyHostname(h) != nil {
			return false
		}
	}
	return true
}

// generate returns a new self-signed certificate and key in PEM.
func generate(hosts []string, now time.Time, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: generate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, nil, fmt.Errorf("certs: serial number: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{"Switchboard development"}, CommonName: "switchboard dev"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: create certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: encode key: %w", err)
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	return certPEM, keyPEM, nil
}

// writeFileAtomic writes data to a temporary file in path's directory,
// mode 0600, and renames it to path.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return fmt.Errorf("certs: write %s: %w", path, err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("certs: write %s: %w", path, werr)
	}
	return nil
}
