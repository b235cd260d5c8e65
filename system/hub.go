package system

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"time"

	"github.com/switchboardgg/switchboard/internal/certs"
	"github.com/switchboardgg/switchboard/p2p"
	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/tokens"
)

// The hub role (issue 10): the P2P hub on its own TLS listener.

// Defaults of [HubConfig].
const (
	// DefaultHubHeartbeat is the interval of the hub's registry heartbeat.
	DefaultHubHeartbeat = 5 * time.Second
	// HubCertDir is where a hub of a process without TLS listeners keeps
	// its self-signed certificate, under DataDir.
	HubCertDir = "hub-tls"
	// HubKeyID is the key id of the hub tickets sealed under the
	// deployment's signing key.
	HubKeyID = 1
)

// HubConfig configures the hub role.
type HubConfig struct {
	// Addr is the TLS listen address, HOST:PORT. Empty means
	// DefaultListenAddr.
	Addr string
	// Listener, when not nil, is used instead of Addr (plain TCP: the hub
	// does the TLS). Start takes it over and closes it, on error too.
	Listener net.Listener
	// PublicAddr is the HOST:PORT clients are told to dial (in the
	// registry). Empty means the bound address.
	PublicAddr string
	// Heartbeat is the registry heartbeat's interval. Zero means
	// DefaultHubHeartbeat.
	Heartbeat time.Duration
	// Hub tunes the hub: limits, timeouts, AllowAnonymous. Start sets its
	// ID, Keyring, TLS, Logger and Registerer.
	Hub p2p.Config
}

// HubKeyring returns the keyring that seals and opens hub tickets under a
// deployment's signing key (store.DB.SigningKey): key id HubKeyID. The p2p
// API seals with it; the hub opens.
func HubKeyring(signingKey []byte) (*tokens.HubKeyring, error) {
	k, err := tokens.NewHubKeyring(tokens.HubKey{ID: HubKeyID, Secret: signingKey})
	if err != nil {
		return nil, fmt.Errorf("system: hub keyring: %w", err)
	}
	return k, nil
}

// startHub starts the hub role: its TLS listener, the hub and its registry
// heartbeat.
func (s *System) startHub(ctx context.Context) error {
	c := &s.cfg
	id := c.Node.ID
	if id == "" {
		var err error
		if id, err = nodeID(c.DataDir); err != nil {
			return err
		}
	}
	ln, bound := s.bound["hub"].ln, s.bound["hub"].addr // bindListeners
	st := s.tls
	if st == nil {
		host, _, _ := net.SplitHostPort(bound)
		dir := filepath.Join(c.DataDir, HubCertDir)
		cf, kf, generated, err := certs.SelfSigned(certs.SelfSignedConfig{Dir: dir, Hosts: []string{host}})
		if err != nil {
			return fmt.Errorf("system: hub: %w", err)
		}
		if generated {
			s.log.Info("generated a self-signed TLS certificate for the hub", "file", cf)
		}
		if st, err = certs.Load(cf, kf); err != nil {
			return fmt.Errorf("system: hub: %w", err)
		}
	}
	s.ready.Hub, s.ready.HubID = bound, id
	s.ready.HubFingerprint = st.Fingerprint()
	bb, db, err := s.connect(ctx, "hub")
	if err != nil {
		return err
	}
	key, err := db.SigningKey(ctx)
	if err != nil {
		return fmt.Errorf("system: hub: %w", err)
	}
	keys, err := HubKeyring(key)
	if err != nil {
		return err
	}
	hc := c.Hub.Hub
	hc.ID, hc.Keyring, hc.TLS = id, keys, st.TLSConfig()
	hc.Logger = s.log.With("component", "hub", "node_id", id)
	hc.Registerer = s.reg
	if hc.AllowAnonymous {
		hc.Logger.Warn("hub allow-anonymous is on: peers join any network without a ticket; never in production")
	}
	h, err := p2p.New(hc)
	if err != nil {
		return fmt.Errorf("system: %w", err)
	}
	pc := s.boundUDP("hub_udp") // the TLS port's number (issue 11), by bindListeners; nil with DisableUDP
	public := c.Hub.PublicAddr
	if public == "" {
		public = bound
	}
	every := c.Hub.Heartbeat
	if every <= 0 {
		every = DefaultHubHeartbeat
	}
	hb := &hubHeartbeat{db: db, h: h, every: every, node: store.Node{
		Role: store.RoleHub, NodeID: id, Version: c.Version, StartedAt: time.Now().UTC(),
		Addresses: map[string]string{store.HubAddressTLS: public, store.HubAddressCertSHA256: st.Fingerprint()},
	}, maxConns: hc.MaxConns}
	if hb.maxConns == 0 {
		hb.maxConns = p2p.DefaultMaxConns
	}
	closeUDP := func() {
		if pc != nil {
			_ = pc.Close()
		}
	}
	stopCmds, err := serveHubCommands(bb, id, h) // before registering: the API may ask at once
	if err != nil {
		closeUDP()
		_ = h.Close()
		return err
	}
	if err := hb.put(ctx, false); err != nil {
		closeUDP()
		_ = stopCmds()
		_ = h.Close()
		return fmt.Errorf("system: hub %s: register: %w", id, err)
	}
	hbCtx, stopHB := context.WithCancel(context.Background())
	s.wg.Go(func() { hb.run(hbCtx) })
	s.servers = append(s.servers, &server{name: "hub",
		shutdown: func(ctx context.Context) error {
			stopHB()
			_ = hb.put(ctx, true) // draining: the API sends no new networks here
			_ = stopCmds()
			return h.Shutdown(ctx)
		},
		close: func() error { stopHB(); _ = stopCmds(); return h.Close() },
	})
	s.serve("hub", func() error {
		if err := h.Serve(ln); !errors.Is(err, p2p.ErrServerClosed) {
			return err
		}
		return nil
	})
	if pc != nil {
		s.serve("hub_udp", func() error {
			if err := h.ServeUDP(pc); !errors.Is(err, p2p.ErrServerClosed) {
				return err
			}
			return nil
		})
	}
	s.log.Info("hub serving", "addr", bound, "udp", pc != nil, "tls_sha256", st.Fingerprint())
	return nil
}

// hubHeartbeat writes the hub's registry entry.
type hubHeartbeat struct {
	db       *store.DB
	h        *p2p.Hub
	every    time.Duration
	node     store.Node
	maxConns int
}

func (hb *hubHeartbeat) run(ctx context.Context) {
	t := time.NewTicker(hb.every)
	defer t.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := hb.put(ctx, false); err != nil && ctx.Err() == nil {
				if failures++; failures == 1 || failures%12 == 0 {
					hb.h.Logger().Warn("hub registry heartbeat failed", "failures", failures, "err", err)
				}
			} else {
				failures = 0
			}
		}
	}
}

func (hb *hubHeartbeat) put(ctx context.Context, draining bool) error {
	ctx, cancel := context.WithTimeout(ctx, hb.every)
	defer cancel()
	l := hb.h.Load()
	n := hb.node
	n.Connections = l.Peers
	n.Load = min(1, float64(l.Peers)/float64(hb.maxConns))
	n.Draining = draining
	return hb.db.PutNode(ctx, &n)
}
