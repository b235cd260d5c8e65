package relay

import (
	"context"
	"fmt"
	"strings"

	"github.com/switchboardgg/switchboard/api"
)

// Transport names the carrier a [Conn] uses to reach its relay node. The
// same relay messages travel over every carrier (docs/protocol/relay.md
// §1); only the framing changes.
type Transport string

// The transports of this version.
const (
	// TransportUDP: one relay message per UDP datagram, to the "udp"
	// endpoint of the allocation (IPv4 first, as the API lists them).
	TransportUDP Transport = "udp"
	// TransportWebSocket: one relay message per binary WebSocket message,
	// to the "wss" or "ws" endpoint.
	TransportWebSocket Transport = "ws"
	// TransportDTLS: one relay message per DTLS 1.2 record, to the "dtls"
	// endpoint, with the allocation's key as pre-shared key and its id as
	// PSK identity (docs/protocol/relay.md §16).
	TransportDTLS Transport = "dtls"
)

// carrier carries relay messages between a [Conn] and its relay node:
// one message per datagram, binary WebSocket message or DTLS record,
// never split or merged. Each implementation is one file (udp.go, ws.go;
// dtls.go adds DTLS) and one entry of transports.
//
// Concurrency: recv is called by one goroutine (the Conn's reader), send
// by one goroutine at a time (the Conn serializes its writers), and close
// from any goroutine, also while recv or send block.
type carrier interface {
	// send sends one message, b, and does not retain it. It returns
	// within Config.WriteTimeout.
	send(b []byte) error
	// recv blocks until a message arrives, copies it into buf and returns
	// its length. A message longer than buf is dropped, not returned
	// truncated. It returns an error once the carrier is closed or broken;
	// after close the error wraps net.ErrClosed.
	recv(buf []byte) (int, error)
	// close closes the carrier and makes send and a blocked recv fail.
	// It is idempotent.
	close() error
}

// dialFunc opens a carrier to endpoint ep of allocation a (DTLS
// authenticates with a's id and key). It honours ctx for the whole dial (a
// handshake included).
type dialFunc func(ctx context.Context, ep api.RelayServerEndpoint, a *Allocation, cfg *Config) (carrier, error)

// transportInfo says which serverEndpoints a transport can use, in order
// of preference (connectionType values), and how to dial one.
type transportInfo struct {
	types []string
	dial  dialFunc
}

// transports lists every carrier. Adding one is one entry and one file.
var transports = map[Transport]transportInfo{
	TransportUDP:       {types: []string{"udp"}, dial: dialUDP},
	TransportWebSocket: {types: []string{"wss", "ws"}, dial: dialWS},
	TransportDTLS:      {types: []string{"dtls"}, dial: dialDTLS},
}

// Transports returns the names of the transports this version speaks,
// sorted.
func Transports() []Transport {
	out := make([]Transport, 0, len(transports))
	for t := range transports {
		out = append(out, t)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// ParseTransport returns the transport named s ("udp", "ws", …), case
// insensitive, or an error that lists the known ones.
func ParseTransport(s string) (Transport, error) {
	t := Transport(strings.ToLower(s))
	if _, ok := transports[t]; ok {
		return t, nil
	}
	names := make([]string, 0, len(transports))
	for _, t := range Transports() {
		names = append(names, string(t))
	}
	return "", fmt.Errorf("relay: transport %q (want %s): %w", s, strings.Join(names, ", "), ErrUnknownTransport)
}

// endpointFor returns the first of eps that transport t can use.
func endpointFor(t Transport, eps []api.RelayServerEndpoint) (api.RelayServerEndpoint, transportInfo, error) {
	info, ok := transports[t]
	if !ok {
		_, err := ParseTransport(string(t))
		return api.RelayServerEndpoint{}, info, err
	}
	for _, typ := range info.types {
		for _, ep := range eps {
			if ep.ConnectionType == typ {
				return ep, info, nil
			}
		}
	}
	return api.RelayServerEndpoint{}, info, fmt.Errorf("relay: the allocation has no %s endpoint (%s): %w", t, strings.Join(info.types, " or "), ErrNoEndpoint)
}
