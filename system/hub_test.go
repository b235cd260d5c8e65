package system_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/backbone"
	"github.com/switchboardgg/switchboard/internal/certs"
	"github.com/switchboardgg/switchboard/protocol/p2pwire"
	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/system"
	"github.com/switchboardgg/switchboard/tokens"
)

// TestHubRole: the hub role serves TLS with the fingerprint of the ready
// file, admits a ticket sealed under the deployment's signing key (as the
// p2p API seals it), and registers in the store's registry as role hub.
func TestHubRole(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.Roles = system.RoleHub
	cfg.Hub.Addr = "127.0.0.1:0"
	s := start(t, cfg)
	r := s.Ready()
	if r.Hub == "" || r.HubFingerprint == "" || r.HubID == "" {
		t.Fatalf("ready %+v", r)
	}

	ctx := t.Context()
	bb, err := backbone.Connect(ctx, backbone.Config{URL: r.NATS, CredentialsFile: filepath.Join(dir, backbone.CredentialsFileName), Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	defer bb.Close()
	db, err := store.Open(ctx, bb, store.Config{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	n, err := db.GetRoleNode(ctx, store.RoleHub, r.HubID)
	if err != nil {
		t.Fatalf("registry: %v", err)
	}
	if n.Addresses["tls"] != r.Hub || n.Addresses["tls_cert_sha256"] != r.HubFingerprint {
		t.Fatalf("registry entry %+v", n)
	}
	key, err := db.SigningKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := system.HubKeyring(key)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ticket, err := keys.Seal(tokens.HubTicket{Username: "alice", Network: "lobby", PeerID: "alice~abc", HubID: r.HubID, Issued: now, Expires: now.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", r.Hub, &tls.Config{
		InsecureSkipVerify: true, // pinned:
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if certs.Fingerprint(raw[0]) != r.HubFingerprint {
				return errors.New("fingerprint mismatch")
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	frame, _ := p2pwire.AppendMessageFrame(nil, &p2pwire.Hello{Ticket: []byte(ticket)})
	if _, err := conn.Write(frame); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	body, err := p2pwire.ReadFrame(conn, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var w p2pwire.Welcome
	if err := w.Unmarshal(body); err != nil || w.PeerID != "alice~abc" || w.Network != "lobby" {
		t.Fatalf("welcome %+v, %v", w, err)
	}
}
