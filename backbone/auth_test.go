package backbone

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestEmbeddedRequiresCredentials: the embedded server holds the signing
// key, so a client without the data dir's nkey must not get in.
func TestEmbeddedRequiresCredentials(t *testing.T) {
	e, _ := startServer(t)

	nc, err := nats.Connect(e.ClientURL(), nats.MaxReconnects(0))
	if err == nil {
		nc.Close()
		t.Fatal("nats.Connect without credentials succeeded, want an authorization error")
	}
	if !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("nats.Connect without credentials: got %v, want nats.ErrAuthorization", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Connect gives up at once on an authorization error instead of
	// retrying until ctx ends.
	if _, err := Connect(ctx, Config{URL: e.ClientURL(), Logger: discard}); !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("Connect without credentials: got %v, want nats.ErrAuthorization", err)
	}

	// Another data dir's key is not this server's.
	other, err := StartEmbedded(EmbeddedConfig{DataDir: t.TempDir(), Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	other.Shutdown()
	if _, err := Connect(ctx, Config{URL: e.ClientURL(), CredentialsFile: other.CredentialsFile(), Logger: discard}); !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("Connect with another server's key: got %v, want nats.ErrAuthorization", err)
	}

	// A user and password in the URL are no way in either.
	u := "nats://switchboard:switchboard@" + e.ClientURL()[len("nats://"):]
	if _, err := Connect(ctx, Config{URL: u, Logger: discard}); !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("Connect with a made-up password: got %v, want nats.ErrAuthorization", err)
	}
}

func TestEmbeddedCredentialsFile(t *testing.T) {
	dir := t.TempDir()
	e, err := StartEmbedded(EmbeddedConfig{DataDir: dir, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	path := e.CredentialsFile()
	e.Shutdown()
	if want := filepath.Join(dir, CredentialsFileName); path != want {
		t.Errorf("CredentialsFile() = %q, want %q", path, want)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("credentials file mode %v, want 0600", st.Mode().Perm())
	}
	seed, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	// A restart keeps the key, so that copies of the file stay valid.
	e, err = StartEmbedded(EmbeddedConfig{DataDir: dir, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	connect(t, e)
	e.Shutdown()
	if again, _ := os.ReadFile(path); string(again) != string(seed) {
		t.Errorf("restart replaced the nkey seed")
	}

	// A damaged file is an error, not a new key.
	if err := os.WriteFile(path, []byte("not a seed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := StartEmbedded(EmbeddedConfig{DataDir: dir, Logger: discard}); err == nil {
		t.Error("StartEmbedded with a damaged credentials file succeeded, want an error")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := Connect(ctx, Config{CredentialsFile: path, Logger: discard}); !errors.Is(err, ErrBadCredentials) {
		t.Errorf("Connect with a damaged credentials file: got %v, want ErrBadCredentials", err)
	}
	if _, err := Connect(ctx, Config{CredentialsFile: filepath.Join(dir, "missing"), Logger: discard}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Connect with a missing credentials file: got %v, want os.ErrNotExist", err)
	}
}

// TestCredentialsFileKinds: a file with a user JWT is used as a .creds
// file (JWT and seed), one without as a bare nkey seed. The embedded
// server takes no JWTs, so the same seed behind a JWT is refused: that
// shows which way the file was read.
func TestCredentialsFileKinds(t *testing.T) {
	e, _ := startServer(t)
	seed, err := os.ReadFile(e.CredentialsFile())
	if err != nil {
		t.Fatal(err)
	}
	creds := filepath.Join(t.TempDir(), "user.creds")
	body := "-----BEGIN NATS USER JWT-----\neyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.e30.c2ln\n------END NATS USER JWT------\n\n" +
		"-----BEGIN USER NKEY SEED-----\n" + string(seed) + "------END USER NKEY SEED------\n"
	if err := os.WriteFile(creds, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if c, err := Connect(ctx, Config{URL: e.ClientURL(), CredentialsFile: creds, Logger: discard}); err == nil {
		c.Close()
		t.Error("a .creds file was read as a bare seed: connected to a server that takes no JWTs")
	}
	if c, err := Connect(ctx, Config{URL: e.ClientURL(), CredentialsFile: e.CredentialsFile(), Logger: discard}); err != nil {
		t.Errorf("the seed file: %v", err)
	} else {
		c.Close()
	}
}
