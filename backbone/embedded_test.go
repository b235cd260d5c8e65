package backbone

import (
	"errors"
	"net"
	"syscall"
	"testing"
)

// TestEmbeddedPortInUse checks that the error of a server whose port is
// taken names the cause, not only "not ready".
func TestEmbeddedPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = StartEmbedded(EmbeddedConfig{DataDir: t.TempDir(), Port: ln.Addr().(*net.TCPAddr).Port, Logger: discard})
	if !errors.Is(err, ErrNotReady) || !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("StartEmbedded on a taken port: got %v, want ErrNotReady and EADDRINUSE", err)
	}
}
