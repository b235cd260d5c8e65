package p2p

import (
	"bytes"
	"crypto/tls"
	"encoding/hex"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/internal/certs"
	"github.com/switchboardgg/switchboard/tokens"
)

// FuzzHandle feeds arbitrary frame bodies to a reader's frame handling (no
// sockets): it never panics, and whatever it queues for the peers is whole
// frames.
func FuzzHandle(f *testing.F) {
	v := loadVectors(f)
	for _, s := range v.Stamping {
		b, _ := hex.DecodeString(s.Body)
		f.Add(b)
	}
	for _, r := range append(append(v.HubRefuses, v.RoutingInvalid...), v.UnknownKinds...) {
		b, _ := hex.DecodeString(r.Hex)
		f.Add(b)
	}
	// Punch requests and results (docs/protocol/p2p.md §20): both peers
	// are registered on UDP below, so a good request reaches the offers.
	for _, s := range []string{
		"09 00 0000000000000007 01 00001388 08 626f627e78377132",
		"09 00 0000000000000007 02 00001388 0a 616c6963657e6b336639",
		"0b 00 0000000000000001 01",
	} {
		b, _ := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
		f.Add(b)
	}
	keys, err := tokens.NewHubKeyring(tokens.HubKey{ID: 1, Secret: testSecret})
	if err != nil {
		f.Fatal(err)
	}
	h, err := New(Config{ID: testHubID, Keyring: keys, TLS: fuzzTLS(f)})
	if err != nil {
		f.Fatal(err)
	}
	now := time.Now().UnixNano()
	f.Fuzz(func(t *testing.T, body []byte) {
		n := &network{name: "lobby", peers: map[string]*peer{}}
		n.bw.b = newBucket(-1)
		mk := func(id string) *peer {
			p := &peer{id: id, idb: []byte(id), net: n, udp: &udpPeer{}}
			ep := netip.MustParseAddrPort("198.18.0.2:40001")
			p.udp.ep.Store(&ep)
			p.cond.L = &p.mu
			n.peers[id] = p
			return p
		}
		a, b := mk("alice~k3f9"), mk("bob~x7q2")
		h.mu.Lock()
		h.networks["lobby"] = n
		h.peers += 2
		h.mu.Unlock()
		c := &conn{h: h, p: a, rate: newBucket(-1), bw: newBucket(-1)}
		c.handle(bytes.Clone(body), now)
		for _, p := range []*peer{a, b} {
			out := p.out
			for len(out) > 0 {
				if len(out) < 4 {
					t.Fatalf("partial frame header in %s's queue", p.id)
				}
				l := int(out[0])<<24 | int(out[1])<<16 | int(out[2])<<8 | int(out[3])
				if l < 2 || 4+l > len(out) {
					t.Fatalf("bad frame in %s's queue: length %d of %d", p.id, l, len(out)-4)
				}
				out = out[4+l:]
			}
		}
		h.remove(a, "goodbye")
		h.remove(b, "goodbye")
	})
}

// fuzzTLS is a server TLS configuration with a self-signed certificate.
func fuzzTLS(f *testing.F) *tls.Config {
	certFile, keyFile, _, err := certs.SelfSigned(certs.SelfSignedConfig{Dir: f.TempDir()})
	if err != nil {
		f.Fatal(err)
	}
	st, err := certs.Load(certFile, keyFile)
	if err != nil {
		f.Fatal(err)
	}
	return st.TLSConfig()
}
