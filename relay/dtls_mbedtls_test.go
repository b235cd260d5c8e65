package relay_test

import (
	"bytes"
	"encoding/hex"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDTLSMbedTLS: a third DTLS implementation, mbed TLS (compiled here
// from testdata/mbedtls_client.c), handshakes as Unity Transport
// configures UnityTLS (the allocation id's 16 raw bytes as PSK identity)
// with each suite mbed TLS and the node share, cookie exchange included,
// and binds. Stock mbed TLS refuses PSKs over 32 bytes
// (MBEDTLS_PSK_MAX_LEN) and the allocation key has 64, so the node uses
// the key's first 32 bytes here (TruncatePSKForTest): what this checks is
// mbed TLS's DTLS against the node's, not the key. Skipped without a C
// compiler and the mbed TLS headers (Debian: libmbedtls-dev).
func TestDTLSMbedTLS(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler")
	}
	bin := filepath.Join(t.TempDir(), "mbedtls_client")
	if out, err := exec.Command(cc, "-O1", "-o", bin, "testdata/mbedtls_client.c", "-lmbedtls", "-lmbedx509", "-lmbedcrypto").CombinedOutput(); err != nil {
		t.Skipf("no mbed TLS to build against: %v\n%s", err, out)
	}
	f := newFixture(t, nil)
	f.s.TruncatePSKForTest(32)
	host, port, _ := net.SplitHostPort(f.serveDTLS())
	for _, suite := range []string{"TLS-PSK-WITH-AES-128-GCM-SHA256", "TLS-PSK-WITH-CHACHA20-POLY1305-SHA256", "TLS-PSK-WITH-AES-128-CCM",
		"TLS-PSK-WITH-AES-128-CCM-8", "TLS-PSK-WITH-AES-256-CCM-8", "TLS-PSK-WITH-AES-128-CBC-SHA256",
		"TLS-ECDHE-PSK-WITH-CHACHA20-POLY1305-SHA256", "TLS-ECDHE-PSK-WITH-AES-128-CBC-SHA256", ""} {
		name := suite
		if name == "" {
			name = "mbedTLS-defaults"
		}
		t.Run(name, func(t *testing.T) {
			h := f.host(1)
			args := []string{host, port, hex.EncodeToString(h.key[:32]), hex.EncodeToString(h.id[:]), hex.EncodeToString(mBind(0, h.blob, h.key))}
			if suite != "" {
				args = append(args, suite)
			}
			var stderr bytes.Buffer
			cmd := exec.Command(bin, args...)
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("mbedtls_client: %v\n%s", err, stderr.String())
			}
			if got := strings.TrimSpace(string(out)); got != hex.EncodeToString(hdr(tBindReceived)) {
				t.Fatalf("got %s, want BIND_RECEIVED\n%s", got, stderr.String())
			}
			if _, ok := f.s.Allocation(h.id); !ok {
				t.Fatal("not bound")
			}
			t.Log(strings.TrimSpace(stderr.String()))
		})
	}
}
