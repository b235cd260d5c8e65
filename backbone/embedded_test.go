package backbone

import (
	"bytes"
	"errors"
	"log/slog"
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
	var logged bytes.Buffer
	_, err = StartEmbedded(EmbeddedConfig{DataDir: t.TempDir(), Port: ln.Addr().(*net.TCPAddr).Port, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if !errors.Is(err, ErrNotReady) || !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("StartEmbedded on a taken port: got %v, want ErrNotReady and EADDRINUSE", err)
	}
	// Said once, in the error: not logged as well, nor wrapped twice.
	if want := "backbone: embedded server on " + ln.Addr().String() + ": port in use"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if logged.Len() > 0 {
		t.Errorf("StartEmbedded logged its error as well:\n%s", logged.String())
	}
}
