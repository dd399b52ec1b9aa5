// Package httpguard is the HTTP client every customer-supplied URL goes
// through (media, webhooks, cron endpoints, group pictures). It refuses
// private, loopback, link-local, metadata and other special-purpose
// addresses twice: when a URL is saved (CheckURL: IP literals in any
// spelling, and names that already resolve there) and when connecting
// (every dial, redirects included, resolves the name itself and connects to
// the address it checked, so DNS rebinding cannot slip past). Operators of
// self-hosted setups may allow ranges explicitly.
package httpguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"code.dny.dev/ssrf"
	"golang.org/x/net/idna"
)

// ErrForbiddenAddress is wrapped by every refusal of a destination.
var ErrForbiddenAddress = errors.New("destination address is not allowed")

// Resolver looks names up; *net.Resolver implements it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Dialer connects to a checked address; *net.Dialer implements it. Tests
// pass one that records and refuses, so no test ever reaches a real
// private address.
type Dialer interface {
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// Guard decides which destinations are allowed.
type Guard struct {
	guardian *ssrf.Guardian
	allow    []netip.Prefix
	hint     string
	resolver Resolver
	dialer   Dialer
}

// Options configure a Guard; the zero value guards with the system
// resolver and dialer and allows no private range.
type Options struct {
	// Allow lists ranges that are allowed although special-purpose
	// (SWITCHBOARD_ALLOW_PRIVATE_URLS).
	Allow []netip.Prefix
	// Hint ends the message of every refusal that Allow could lift: how
	// an operator allows a range (the composition root names its
	// setting), in parentheses.
	Hint     string
	Resolver Resolver
	Dialer   Dialer
}

// New builds a Guard.
func New(opts Options) *Guard {
	var v4, v6 []netip.Prefix
	for _, p := range opts.Allow {
		if p.Addr().Is4() {
			v4 = append(v4, p)
		} else {
			v6 = append(v6, p)
		}
	}
	g := &Guard{
		guardian: ssrf.New(ssrf.WithAnyPort(), ssrf.WithAllowedV4Prefixes(v4...), ssrf.WithAllowedV6Prefixes(v6...)),
		allow:    opts.Allow,
		hint:     opts.Hint,
		resolver: opts.Resolver,
		dialer:   opts.Dialer,
	}
	if g.resolver == nil {
		g.resolver = net.DefaultResolver
	}
	if g.dialer == nil {
		g.dialer = &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	}
	return g
}

// CheckAddr reports whether one address may be connected to.
func (g *Guard) CheckAddr(ip netip.Addr) error {
	if err := g.guardian.SafeAddr(ip); err != nil {
		return g.refuse(ip.String())
	}
	return nil
}

// refuse is the error for a destination that Options.Allow could allow.
func (g *Guard) refuse(dest string) error {
	if g.hint != "" {
		return fmt.Errorf("%w: %s (%s)", ErrForbiddenAddress, dest, g.hint)
	}
	return fmt.Errorf("%w: %s", ErrForbiddenAddress, dest)
}

// CheckURL validates a URL when it is saved: http or https, a host, no
// credentials, and no host that is or resolves to a forbidden address. A
// name that does not resolve (yet) is accepted; the dial checks it again.
func (g *Guard) CheckURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return errors.New("must be an absolute http(s) URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errors.New("must use http or https")
	}
	if u.User != nil {
		return errors.New("must not contain credentials")
	}
	host := canonicalName(u.Hostname())
	if host == "" {
		return errors.New("must be an absolute http(s) URL")
	}
	if ip, ok := parseIPLiteral(host); ok {
		return g.CheckAddr(ip)
	}
	if looksNumeric(host) {
		// 2130706433, 0x7f.1, 0177.0.0.1: spellings some resolvers turn
		// into addresses; no real host name looks like this.
		return fmt.Errorf("%w: %q is an IP address in a non-standard spelling", ErrForbiddenAddress, host)
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		if !g.allowsLoopback() {
			return g.refuse(host)
		}
	}
	lookupCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	addrs, err := g.resolver.LookupNetIP(lookupCtx, "ip", host)
	if err != nil {
		return nil // unresolvable now; checked again at connect time
	}
	for _, a := range addrs {
		if err := g.CheckAddr(a.Unmap()); err != nil {
			return fmt.Errorf("%s resolves to a forbidden address: %w", host, err)
		}
	}
	return nil
}

// canonicalName is the spelling of a host the checks compare and look up:
// the ASCII form net/http dials (IDNA's lookup mapping, so "ｌｏｃａｌｈｏｓｔ"
// is localhost and "１２７.０.０.１" is 127.0.0.1), lower case, without the
// trailing dots of a fully qualified name ("LocalHost." is localhost, and
// resolves like it). Like net/http, it maps only names that are not
// ASCII, and a name IDNA refuses keeps its spelling.
func canonicalName(host string) string {
	if strings.IndexFunc(host, func(r rune) bool { return r >= utf8.RuneSelf }) >= 0 {
		if ascii, err := idna.Lookup.ToASCII(host); err == nil {
			host = ascii
		}
	}
	return strings.ToLower(strings.TrimRight(host, "."))
}

func (g *Guard) allowsLoopback() bool {
	for _, p := range g.allow {
		if p.Contains(netip.MustParseAddr("127.0.0.1")) || p.Contains(netip.IPv6Loopback()) {
			return true
		}
	}
	return false
}

// parseIPLiteral accepts the standard spellings of an address, with or
// without IPv6 brackets and zone.
func parseIPLiteral(host string) (netip.Addr, bool) {
	h := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if i := strings.IndexByte(h, '%'); i >= 0 {
		h = h[:i]
	}
	ip, err := netip.ParseAddr(h)
	if err != nil {
		return netip.Addr{}, false
	}
	return ip.Unmap(), true
}

// looksNumeric reports whether every dot-separated label is a decimal,
// octal or hex number.
func looksNumeric(host string) bool {
	labels := strings.Split(strings.TrimSuffix(host, "."), ".")
	for _, l := range labels {
		l = strings.ToLower(l)
		if l == "" {
			return false
		}
		digits := strings.TrimPrefix(l, "0x")
		for _, c := range digits {
			if !(c >= '0' && c <= '9' || (strings.HasPrefix(l, "0x") && c >= 'a' && c <= 'f')) {
				return false
			}
		}
	}
	return true
}

// DialContext resolves the address itself, checks every candidate, and
// connects only to an allowed one. It reads the host as CheckURL does, so
// that a URL the check accepted is not refused here for its spelling
// ("1.0.0.0." is 1.0.0.0).
func (g *Guard) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	host = canonicalName(host)
	var candidates []netip.Addr
	if ip, ok := parseIPLiteral(host); ok {
		candidates = []netip.Addr{ip}
	} else {
		if looksNumeric(host) {
			return nil, fmt.Errorf("%w: %q", ErrForbiddenAddress, host)
		}
		addrs, err := g.resolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, err
		}
		for _, a := range addrs {
			candidates = append(candidates, a.Unmap())
		}
	}
	var lastErr error = fmt.Errorf("%s: no addresses", host)
	for _, ip := range candidates {
		if err := g.CheckAddr(ip); err != nil {
			lastErr = err
			continue
		}
		conn, err := g.dialer.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return conn, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

// MaxResponseHeaderBytes bounds the header of every answer a customer
// endpoint gives the guard's clients; a longer header fails the request.
const MaxResponseHeaderBytes = 64 << 10

// ClientOptions shape an HTTP client.
type ClientOptions struct {
	Timeout time.Duration
	// FollowRedirects allows up to 5 redirects (each dial checked again);
	// otherwise a 3xx is returned as the response.
	FollowRedirects bool
}

// Client returns an HTTP client whose every connection goes through the
// guard, with no proxy.
func (g *Guard) Client(opts ClientOptions) *http.Client {
	transport := &http.Transport{
		Proxy:                  nil,
		DialContext:            g.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    10,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  opts.Timeout,
		MaxResponseHeaderBytes: MaxResponseHeaderBytes,
	}
	c := &http.Client{Transport: transport, Timeout: opts.Timeout}
	if opts.FollowRedirects {
		c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("too many redirects")
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return errors.New("redirect to a non-http URL")
			}
			return nil
		}
	} else {
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	return c
}
