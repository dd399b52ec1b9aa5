package edge

import (
	"net/url"
	"strings"
)

// FromOwnOrigin reports whether a request a browser sent with a session
// comes from the server's own pages, by what the browser says of it: its
// Fetch Metadata (secFetchSite, the Sec-Fetch-Site header) and its Origin
// header. host is the request's Host; overTLS says whether it arrived
// over TLS at this server (then the origin must be https too; behind a
// TLS proxy it may be either).
//
// A request that says neither (an old browser's GET, a command-line
// client) passes: the SameSite cookie and the CSRF token are what stop
// those. Where the caller needs the Origin (a WebSocket upgrade), it
// requires one itself.
func FromOwnOrigin(origin, secFetchSite, host string, overTLS bool) bool {
	switch strings.ToLower(secFetchSite) {
	case "", "same-origin", "none": // none: the user opened the URL
	default: // same-site, cross-site, anything new
		return false
	}
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") {
		return false // "null" (a sandboxed or opaque origin) lands here
	}
	switch u.Scheme {
	case "https":
	case "http":
		if overTLS {
			return false
		}
	default:
		return false
	}
	return host != "" && strings.EqualFold(u.Host, host)
}
