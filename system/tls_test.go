package system_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/switchboardgg/switchboard/client/backend"
	"github.com/switchboardgg/switchboard/client/rooms"
	"github.com/switchboardgg/switchboard/internal/certs"
)

// TestTLSSelfSigned starts every role with a generated certificate and
// plays over it: the backend and the player call the API over https, and
// the player's game connection is wss, all trusting the certificate in
// the data dir.
func TestTLSSelfSigned(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.TLS.SelfSigned = true
	cfg.API.PublishServerKey = true
	cfg.Admin.Addr = "127.0.0.1:0"
	s := start(t, cfg)
	r := s.Ready()
	if !strings.HasPrefix(r.API, "https://") || !strings.HasPrefix(r.NodeWS, "wss://") {
		t.Fatalf("Ready api %q, node_ws %q; want https and wss", r.API, r.NodeWS)
	}
	if strings.Join(r.TLS, ",") != "node_ws,api,admin" || !strings.HasPrefix(r.Admin, "https://") {
		t.Errorf("Ready TLS = %v, admin %q; want node_ws, api and admin", r.TLS, r.Admin)
	}
	certFile := filepath.Join(dir, certs.DefaultCertFile)
	st, err := certs.Load(certFile, filepath.Join(dir, certs.DefaultKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if r.TLSFingerprint != st.Fingerprint() {
		t.Errorf("Ready fingerprint %s, want the data dir's %s", r.TLSFingerprint, st.Fingerprint())
	}
	tlsCfg := trust(t, certFile)
	tr := &http.Transport{TLSClientConfig: tlsCfg}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}

	// Both /healthz answer the same JSON.
	for _, u := range []string{r.API + "/healthz", r.Admin + "/healthz"} {
		resp, err := hc.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || string(body) != `{"status":"ok"}`+"\n" || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("GET %s: %s %q (%s), want 200 {\"status\":\"ok\"} as JSON", u, resp.Status, body, resp.Header.Get("Content-Type"))
		}
	}

	// A plain-HTTP client is refused: the listener speaks TLS only.
	if resp, err := http.Get("http://" + strings.TrimPrefix(r.API, "https://") + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plain http to the TLS API answered 200")
		}
	}
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()

	be, err := backend.New(r.API, r.ServerKey, hc)
	if err != nil {
		t.Fatal(err)
	}
	room := createRoom(t, be)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	auth, err := be.CreateAuthToken(ctx, "alice", 0)
	if err != nil {
		t.Fatal(err)
	}
	ticket, _, err := be.CreateTicket(ctx, room.RoomID, backend.TicketRequest{Username: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := rooms.Login(ctx, r.API, "alice", auth, &rooms.Config{
		HTTPClient: hc, Dialer: &ws.Dialer{TLSConfig: tlsCfg}, Logger: discard,
	})
	if err != nil {
		t.Fatalf("login over https: %v", err)
	}
	pr, err := c.Connect(ctx, room.RoomID, rooms.JoinOptions{Ticket: ticket})
	if err != nil {
		t.Fatalf("connect over wss: %v", err)
	}
	if err := pr.Leave(ctx); err != nil {
		t.Errorf("leave: %v", err)
	}
	pr.Close()
}

// TestTLSReload serves certificate files, replaces them, and checks that
// ReloadTLS makes new connections see the new certificate on every TLS
// listener.
func TestTLSReload(t *testing.T) {
	certDir := t.TempDir()
	cf, kf, _, err := certs.SelfSigned(certs.SelfSignedConfig{Dir: certDir})
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t.TempDir())
	cfg.TLS.CertFile, cfg.TLS.KeyFile = cf, kf
	s := start(t, cfg)
	r := s.Ready()
	api := hostOf(t, r.API)
	nodeWS := hostOf(t, r.NodeWS)
	first := r.TLSFingerprint
	for _, addr := range []string{api, nodeWS} {
		if got := served(t, addr); got != first {
			t.Fatalf("%s serves %s, want %s", addr, got, first)
		}
	}
	if err := os.Remove(cf); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := certs.SelfSigned(certs.SelfSignedConfig{Dir: certDir}); err != nil {
		t.Fatal(err)
	}
	if err := s.ReloadTLS(); err != nil {
		t.Fatalf("ReloadTLS: %v", err)
	}
	second := s.TLSFingerprint()
	if second == first {
		t.Fatalf("fingerprint unchanged after ReloadTLS")
	}
	for _, addr := range []string{api, nodeWS} {
		if got := served(t, addr); got != second {
			t.Errorf("%s serves %s after ReloadTLS, want %s", addr, got, second)
		}
	}
}

func hostOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// trust returns a client config that trusts the certificate in certFile.
func trust(t *testing.T, certFile string) *tls.Config {
	t.Helper()
	b, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		t.Fatalf("no certificate in %s", certFile)
	}
	return &tls.Config{RootCAs: pool}
}

// served returns the fingerprint of the certificate served at addr.
func served(t *testing.T, addr string) string {
	t.Helper()
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) // only the fingerprint is checked
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer c.Close()
	return certs.Fingerprint(c.ConnectionState().PeerCertificates[0].Raw)
}
