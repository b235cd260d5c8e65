package main

import (
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/switchboardgg/switchboard/control/relayapi"
	"github.com/switchboardgg/switchboard/relay"
	"github.com/switchboardgg/switchboard/system"
)

// relayOptions are the relay flags that are not fields of system.Config.
type relayOptions struct {
	secretFile string
	trusted    []string
	unityJWKS  string
}

// addRelaySecretFlag registers --relay-secret-file: every control and relay
// process of a deployment needs the same secret.
func addRelaySecretFlag(f *pflag.FlagSet, o *systemOptions) {
	f.StringVar(&o.relay.secretFile, "relay-secret-file", "",
		"`FILE` holding the relay secret in hex (at least 32 bytes), the same for every control and relay process of a deployment (default: $SWITCHBOARD_RELAY_SECRET, else generated once and kept in --data-dir)")
}

// addRelayListenFlags registers the relay data plane's listeners and
// public addresses.
func addRelayListenFlags(f *pflag.FlagSet, o *systemOptions, udpDefault string) {
	c := &o.cfg.Relay
	f.StringVar(&c.UDPAddr, "relay", udpDefault, "relay UDP listen address, e.g. 127.0.0.1:7702 (Unity Relay protocol and QoS); empty: no relay")
	f.StringVar(&c.WSAddr, "relay-ws", "", "relay WebSocket listen address, e.g. 127.0.0.1:7703 (wss with TLS); empty: none")
	dtlsHelp := "relay DTLS listen address over UDP, e.g. 127.0.0.1:7704 (relay messages in DTLS 1.2 with the allocation key as PSK); empty: none"
	if udpDefault == "" { // dev
		dtlsHelp += " (default: with a relay, port 7704 on --relay's host, or a free port when --relay's port is 0)"
	}
	f.StringVar(&c.DTLSAddr, "relay-dtls", "", dtlsHelp)
	f.StringVar(&c.PublicUDP, "relay-public-udp", "", "IPv4 `HOST:PORT` clients are told to send relay UDP to (default: the bound address; required when bound to all interfaces)")
	f.StringVar(&c.PublicUDP6, "relay-public-udp6", "", "IPv6 `[HOST]:PORT` clients may send relay UDP to (default: the bound address when IPv6)")
	f.StringVar(&c.PublicWS, "relay-public-ws", "", "WebSocket `URL` clients are told to dial, ws:// or wss:// (default: the bound address)")
	f.IntVar(&c.Relay.MaxWSConnsPerIP, "relay-ws-max-conns-per-ip", relay.DefaultMaxWSConnsPerIP,
		"WebSocket connections the relay takes from one IPv4 address or IPv6 /64; raise it behind a TLS terminator or proxy, whose address every connection then has")
	f.StringVar(&c.PublicDTLS, "relay-public-dtls", "", "`HOST:PORT` clients are told to send relay DTLS to (default: the bound address; required when bound to all interfaces)")
}

// devDTLSPort is the DTLS port dev serves beside a relay on a fixed port.
const devDTLSPort = "7704"

// devDTLSAddr is dev's DTLS address when --relay-dtls is not given: with a
// relay, on --relay's host (--relay-ws's without it; loopback when that
// host is all interfaces), port 7704, or a free port when that listener's
// port is 0 (as tests ask); without a relay, none.
func devDTLSAddr(c *system.RelayConfig) string {
	base := c.UDPAddr
	if base == "" {
		base = c.WSAddr
	}
	host, port, err := net.SplitHostPort(base)
	if err != nil {
		return "" // no relay, or an address its own listener refuses
	}
	if ip, err := netip.ParseAddr(host); host == "" || (err == nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	if port != "0" {
		port = devDTLSPort
	}
	return net.JoinHostPort(host, port)
}

// addRelayAPIFlags registers the relay REST API's options (control role).
func addRelayAPIFlags(f *pflag.FlagSet, o *systemOptions) {
	c := &o.cfg.Relay.API
	f.BoolVar(&c.AllowAnonymous, "relay-allow-anonymous", false, "accept relay REST calls without credentials (never in production)")
	f.StringSliceVar(&o.relay.trusted, "relay-trusted-networks", nil, "`CIDR`s from which any Bearer is accepted on /relay/v1 (a Unity Authentication token, not verified)")
	f.StringVar(&o.relay.unityJWKS, "relay-unity-jwks", "", "JWKS `FILE` of Unity Authentication's signing keys: RS256 tokens they sign are accepted on /relay/v1")
	f.StringVar(&c.UnityIssuer, "relay-unity-issuer", "", "the \"iss\" a Unity token must carry (empty: any)")
	f.StringVar(&c.DefaultRegion, "relay-default-region", "", "region of an allocation that names none (default: the least-loaded relay of any region)")
	f.IntVar(&c.RequestsPerMinute, "relay-rate", relayapi.DefaultRequestsPerMinute, "relay REST calls per minute, per player and call; negative turns the limit off")
	f.IntVar(&c.JoinsPerMinutePerAddress, "relay-join-rate", relayapi.DefaultJoinsPerMinutePerAddress, "relay joins with a code per minute and source address; negative turns the limit off")
	f.IntVar(&c.MaxAllocationsPerKey, "relay-max-allocations-per-key", relayapi.DefaultMaxAllocationsPerKey, "live relay allocations (hosts and joiners) one relay API key may hold; negative turns the limit off")
	f.IntVar(&c.MaxAllocationsPerAddress, "relay-max-allocations-per-address", relayapi.DefaultMaxAllocationsPerAddress, "live relay allocations one source address may hold, whatever the credentials; negative turns the limit off")
	f.IntVar(&c.JoinCodeLength, "relay-join-code-length", relayapi.DefaultJoinCodeLength, "length of new join codes, 6 to 12")
	f.DurationVar(&c.AllocationTTL, "relay-allocation-ttl", relayapi.DefaultAllocationTTL, "how long an allocation's connection data stays valid (a client may re-bind until then)")
	f.DurationVar(&c.MaxIdleTimeout, "relay-max-idle-timeout", relayapi.DefaultMaxIdleTimeout, "the longest idleTimeoutSeconds an allocate or join may ask for (whole seconds, at most 65535s); negative refuses any")
	f.DurationVar(&c.MigrationGrace, "relay-migration-grace", relayapi.DefaultMigrationGrace, "how long the join code of a dead host that opted in to host migration is held for a peer to take over (at most 10m)")
}

// resolveRelay reads the relay secret, trusted networks and Unity keys
// named by the flags and the environment.
func resolveRelay(o *systemOptions) error {
	text := os.Getenv("SWITCHBOARD_RELAY_SECRET")
	if o.relay.secretFile != "" {
		b, err := os.ReadFile(o.relay.secretFile)
		if err != nil {
			return fmt.Errorf("--relay-secret-file: %w", err)
		}
		text = string(b)
	}
	if text = strings.TrimSpace(text); text != "" {
		secret, err := hex.DecodeString(text)
		if err != nil || len(secret) < 32 {
			return fmt.Errorf("relay secret: want at least 32 bytes in hex")
		}
		o.cfg.Relay.Secret = secret
	}
	for _, s := range o.relay.trusted {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("--relay-trusted-networks %q: %w", s, err)
		}
		o.cfg.Relay.API.TrustedNetworks = append(o.cfg.Relay.API.TrustedNetworks, p.Masked())
	}
	if o.relay.unityJWKS != "" {
		b, err := os.ReadFile(o.relay.unityJWKS)
		if err != nil {
			return fmt.Errorf("--relay-unity-jwks: %w", err)
		}
		o.cfg.Relay.API.UnityKeys = b
	}
	return nil
}
