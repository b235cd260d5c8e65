package relay_test

import (
	"bytes"
	"encoding/hex"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestDTLSOpenSSL: an independent DTLS implementation, OpenSSL's
// s_client, handshakes with the identity as the allocation id's UUID text
// (what Unity's docs say) and the key as PSK, and binds its allocation:
// pion's client is not the only one the node speaks with. Each suite
// OpenSSL implements of the node's list is tried alone. Skipped without
// an openssl binary.
func TestDTLSOpenSSL(t *testing.T) {
	bin, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("no openssl binary")
	}
	f := newFixture(t, nil)
	addr := f.serveDTLS()
	for _, suite := range []string{"PSK-AES128-GCM-SHA256", "PSK-CHACHA20-POLY1305", "PSK-AES128-CCM", "PSK-AES128-CCM8",
		"PSK-AES256-CCM8", "PSK-AES128-CBC-SHA256", "ECDHE-PSK-CHACHA20-POLY1305", "ECDHE-PSK-AES128-CBC-SHA256"} {
		t.Run(suite, func(t *testing.T) {
			h := f.host(1)
			cmd := exec.Command(bin, "s_client", "-dtls1_2", "-connect", addr, "-quiet", "-nocommands",
				"-psk", hex.EncodeToString(h.key), "-psk_identity", uuid(h.id), "-cipher", suite)
			in, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { cmd.Process.Kill(); cmd.Wait() }()
			got := make(chan []byte, 1)
			go func() {
				b := make([]byte, 4)
				n, _ := io.ReadFull(out, b)
				got <- b[:n]
			}()
			// s_client reads stdin after its handshake; a BIND written
			// before that waits in the pipe. Re-send until answered, as
			// a client does.
			bind := mBind(0, h.blob, h.key)
			deadline := time.After(10 * time.Second)
			tick := time.NewTicker(500 * time.Millisecond)
			defer tick.Stop()
			for {
				if _, err := in.Write(bind); err != nil {
					t.Fatalf("s_client: %v\n%s", err, stderr.String())
				}
				select {
				case b := <-got:
					if !bytes.Equal(b, hdr(tBindReceived)) {
						t.Fatalf("got % x, want BIND_RECEIVED\n%s", b, stderr.String())
					}
					if _, ok := f.s.Allocation(h.id); !ok {
						t.Fatal("not bound")
					}
					return
				case <-tick.C:
				case <-deadline:
					t.Fatalf("no BIND_RECEIVED in 10 s; s_client said:\n%s", strings.TrimSpace(stderr.String()))
				}
			}
		})
	}
}
