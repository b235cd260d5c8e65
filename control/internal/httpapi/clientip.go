package httpapi

import (
	"net/http"
	"net/netip"
)

// ClientIP is the rate-limit key of a client: the peer address, and for
// IPv6 its /64, the prefix one subscriber or host gets (RFC 6177), so that
// a client cannot take a new bucket per address of its prefix. An
// IPv4-mapped IPv6 address counts as the IPv4 address. Proxy headers are
// not trusted.
func ClientIP(r *http.Request) string {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr // not ip:port (a test's or a unix socket's)
	}
	a := ap.Addr().Unmap().WithZone("")
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}
