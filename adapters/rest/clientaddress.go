package rest

import (
	"net"
	"net/http"
	"net/netip"
	"time"
)

// clientAddress is the peer's IP address. Behind a proxy this is the
// proxy; per-client limits then apply to the proxy as a whole.
func clientAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// addressLimiter is a keyedLimiter over client addresses. An IPv4 address
// is one client; an IPv6 address counts with every address of its prefix
// (ipv6Prefix bits, 64 when 0), since one host commonly holds a whole /64
// and could otherwise take a fresh budget with each of its addresses.
type addressLimiter struct {
	keys       *keyedLimiter
	ipv6Prefix int
}

// blocked reports how long the client at addr must wait, without
// spending a token.
func (a *addressLimiter) blocked(addr string) time.Duration {
	if a == nil {
		return 0
	}
	return a.keys.blocked(a.key(addr))
}

// record spends a token of the client at addr.
func (a *addressLimiter) record(addr string) {
	if a == nil {
		return
	}
	a.keys.record(a.key(addr))
}

// key is the client addr counts as: the address itself (IPv4, or an IPv4
// address mapped into IPv6), or its IPv6 prefix. What is not an IP
// address counts as itself.
func (a *addressLimiter) key(addr string) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is4() {
		return ip.String()
	}
	bits := a.ipv6Prefix
	if bits <= 0 {
		bits = 64
	}
	p, err := ip.Prefix(bits)
	if err != nil {
		return ip.String()
	}
	return p.String()
}
