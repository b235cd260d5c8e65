package system

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/switchboardgg/switchboard/relay"
	"github.com/switchboardgg/switchboard/tokens"
)

// RelaySecretFile keeps the relay secret (hex) generated when
// RelayConfig.Secret is empty.
const RelaySecretFile = "relay-secret"

// RelayConfig configures the relay data plane's listeners (issue 8). The
// relay runs when UDPAddr or WSAddr is set (`switchboard dev --relay
// --relay-ws`); its REST API, join codes and registry come with the relay
// role.
type RelayConfig struct {
	// UDPAddr is the UDP listen address, HOST:PORT (port 0: a free one).
	// Empty means no UDP listener.
	UDPAddr string
	// WSAddr is the WebSocket listen address, HOST:PORT, served with TLS
	// (wss) when the system serves TLS. Empty means no WebSocket listener.
	WSAddr string
	// Secret is the relay secret, at least tokens.RelayMinSecret bytes,
	// shared by whatever seals the allocations' connection data. Empty
	// means the secret kept in DataDir/relay-secret, generated there on
	// first start. Never logged.
	Secret []byte
	// Relay tunes the data plane: limits and timeouts, OnRelease. Start
	// sets its Keys, NodeID (the node id), Logger and Registerer; a zero
	// BootEpoch is a new one at every start (the Unix time in nanoseconds),
	// an empty Region the game node's.
	Relay relay.Config
}

// startRelay starts the relay data plane on its UDP and WebSocket
// listeners, when either is configured.
func (s *System) startRelay() error {
	c := &s.cfg
	if c.Relay.UDPAddr == "" && c.Relay.WSAddr == "" {
		return nil
	}
	secret := c.Relay.Secret
	if len(secret) == 0 {
		var err error
		if secret, err = relaySecret(c.DataDir); err != nil {
			return err
		}
	}
	keys, err := tokens.NewRelayKeyring(tokens.RelayKey{ID: 1, Secret: secret})
	if err != nil {
		return fmt.Errorf("system: relay: %w", err)
	}
	id := c.Node.ID
	if id == "" {
		if id, err = nodeID(c.DataDir); err != nil {
			return err
		}
	}
	rc := c.Relay.Relay
	rc.Keys, rc.NodeID = keys, id
	if rc.BootEpoch == 0 {
		rc.BootEpoch = uint64(time.Now().UnixNano())
	}
	if rc.Region == "" {
		rc.Region = c.Node.Node.Region
	}
	rc.Logger = s.log.With("component", "relay", "node_id", id)
	rc.Registerer = s.reg
	r, err := relay.New(rc)
	if err != nil {
		return fmt.Errorf("system: %w", err)
	}
	var pc net.PacketConn
	if c.Relay.UDPAddr != "" {
		if pc, err = net.ListenPacket("udp", c.Relay.UDPAddr); err != nil {
			return fmt.Errorf("system: relay_udp listener: %w", err)
		}
		s.ready.RelayUDP = pc.LocalAddr().String()
	}
	var ln net.Listener
	if c.Relay.WSAddr != "" {
		var bound string
		if ln, bound, err = s.listen("relay_ws", c.Relay.WSAddr, nil, true); err != nil {
			if pc != nil {
				pc.Close()
			}
			return err
		}
		s.ready.RelayWS = s.scheme("ws://", "wss://") + bound + "/"
	}
	s.servers = append(s.servers, &server{name: "relay", shutdown: r.Shutdown, close: r.Close})
	if pc != nil {
		s.serve("relay udp", func() error { return r.ServePacket(pc) })
	}
	if ln != nil {
		s.serve("relay ws", func() error { return r.Serve(ln) })
	}
	return nil
}

// relaySecret returns the relay secret kept in dir, or generates one and
// keeps it there.
func relaySecret(dir string) ([]byte, error) {
	path := filepath.Join(dir, RelaySecretFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		secret, err := hex.DecodeString(strings.TrimSpace(string(b)))
		if err != nil || len(secret) < tokens.RelayMinSecret {
			return nil, fmt.Errorf("system: %w: relay secret in %s: want at least %d bytes in hex", ErrConfig, path, tokens.RelayMinSecret)
		}
		return secret, nil
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("system: read relay secret: %w", err)
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("system: generate relay secret: %w", err)
	}
	if err := writeFileAtomic(path, []byte(hex.EncodeToString(secret)+"\n")); err != nil {
		return nil, fmt.Errorf("system: keep relay secret: %w", err)
	}
	return secret, nil
}
