package relay_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/client/relay"
)

// TestJoinCodeStatusAndRevoke: anyone may read a live code's status;
// only its maker may revoke it; a revoked code refuses joins while the
// host and its peer carry on, and the host can get a new code.
func TestJoinCodeStatusAndRevoke(t *testing.T) {
	s := startStack(t)
	ctx := ctxT(t)
	alice, bob := s.client(t, "alice", nil), s.client(t, "bob", nil)
	host, err := alice.Host(ctx, relay.AllocateRequest{MaxConnections: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	code := host.JoinCode()
	st, err := bob.JoinCodeStatus(ctx, strings.ToLower(code))
	if err != nil {
		t.Fatal(err)
	}
	if st.JoinCode != code || st.Migrating || st.Host != host.ID() || st.Region != "local" || st.HostMigration || time.Until(st.ExpiresAt) <= 0 {
		t.Fatalf("status %+v", st)
	}
	peer, err := bob.Join(ctx, code)
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()

	if err := bob.RevokeJoinCode(ctx, code); !errors.Is(err, relay.ErrForbidden) {
		t.Fatalf("revoke by a joiner: %v, want ErrForbidden", err)
	}
	if err := alice.RevokeJoinCode(ctx, code); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.JoinCodeStatus(ctx, code); !errors.Is(err, relay.ErrJoinCodeNotFound) {
		t.Fatalf("status of a revoked code: %v, want ErrJoinCodeNotFound", err)
	}
	if _, err := s.client(t, "carol", nil).JoinAllocation(ctx, code); !errors.Is(err, relay.ErrJoinCodeNotFound) {
		t.Fatalf("join with a revoked code: %v, want ErrJoinCodeNotFound", err)
	}
	if err := alice.RevokeJoinCode(ctx, code); !errors.Is(err, relay.ErrJoinCodeNotFound) {
		t.Fatalf("second revoke: %v, want ErrJoinCodeNotFound", err)
	}
	// The session carries on; a new code leads to the same host.
	if err := peer.Send(ctx, host.ID(), []byte("still here")); err != nil {
		t.Fatal(err)
	}
	if msg, _ := recv(t, host); msg != "still here" {
		t.Fatalf("host got %q", msg)
	}
	a := host.Allocation()
	fresh, err := alice.CreateJoinCode(ctx, &a)
	if err != nil || fresh == code {
		t.Fatalf("new code %q (old %q), %v", fresh, code, err)
	}
	st, err = bob.JoinCodeStatus(ctx, fresh)
	if err != nil || st.Host != host.ID() {
		t.Fatalf("status of the new code %+v, %v", st, err)
	}
}
