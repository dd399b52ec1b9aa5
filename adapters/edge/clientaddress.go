package edge

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// ClientAddress is the address of the client a request comes from, as
// the host decided it (see clientOf) for the per-address limits and the
// request log.
func ClientAddress(r *http.Request) string {
	if c := infoFrom(r.Context()).client; c != "" {
		return c
	}
	return peerAddress(r)
}

// peerAddress is the IP address of the connection's other end.
func peerAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// clientOf decides which address a request comes from. X-Forwarded-For is
// believed only when the peer is a trusted proxy: then the client is the
// right-most address in it that is not itself a trusted proxy (each proxy
// appends the address it was called from, so what lies left of that is
// whatever the client chose to send). Otherwise, and with no trusted
// proxies, the client is the peer: a forged header changes nothing.
func clientOf(r *http.Request, trusted []netip.Prefix) string {
	peer := peerAddress(r)
	if len(trusted) == 0 || !isTrusted(peer, trusted) {
		return peer
	}
	client := peer
	values := r.Header.Values("X-Forwarded-For")
	for i := len(values) - 1; i >= 0; i-- {
		hops := strings.Split(values[i], ",")
		for j := len(hops) - 1; j >= 0; j-- {
			hop, ok := parseHop(hops[j])
			if !ok {
				// Not written by a proxy of ours: the last good hop is
				// the nearest the client we can vouch for.
				return client
			}
			client = hop.String()
			if !inPrefixes(hop, trusted) {
				return client
			}
		}
	}
	return client
}

// ForwardedTLS reports whether the client reached the server over TLS: to
// this server, or to a trusted proxy that says so in X-Forwarded-Proto.
func ForwardedTLS(r *http.Request, trusted []netip.Prefix) bool {
	if r.TLS != nil {
		return true
	}
	return r.Header.Get("X-Forwarded-Proto") == "https" && len(trusted) > 0 && isTrusted(peerAddress(r), trusted)
}

// parseHop reads one X-Forwarded-For entry: an address, possibly with a
// port.
func parseHop(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	return netip.Addr{}, false
}

func isTrusted(addr string, trusted []netip.Prefix) bool {
	a, err := netip.ParseAddr(addr)
	return err == nil && inPrefixes(a.Unmap(), trusted)
}

func inPrefixes(a netip.Addr, prefixes []netip.Prefix) bool {
	a = a.WithZone("")
	for _, p := range prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
