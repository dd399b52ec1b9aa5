package httpguard_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/adapters/httpguard"
)

// systemResolver answers like a host's stub resolver, from a table: names
// are case-insensitive and may end in dots, localhost is loopback, and
// numeric spellings (2130706433, 0x7f.1, 0177.0.0.1) are addresses, as
// inet_aton reads them. It never sends a query.
type systemResolver map[string][]netip.Addr

func (r systemResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	name := strings.ToLower(strings.TrimRight(host, "."))
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()}, nil
	}
	if a, ok := inetAton(name); ok {
		return []netip.Addr{a}, nil
	}
	if a, ok := r[name]; ok {
		return a, nil
	}
	if strings.HasSuffix(name, ".internal") {
		return []netip.Addr{netip.MustParseAddr("10.1.2.3")}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// inetAton reads an IPv4 address in the spellings of inet_aton: one to
// four parts, each decimal, octal (leading 0) or hex (0x), the last
// filling the remaining bytes.
func inetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var v [4]uint64
	for i, p := range parts {
		n, err := strconv.ParseUint(p, 0, 32)
		if err != nil || strings.HasPrefix(p, "+") {
			return netip.Addr{}, false
		}
		v[i] = n
	}
	var x uint64
	for i := 0; i < len(parts)-1; i++ {
		if v[i] > 255 {
			return netip.Addr{}, false
		}
		x |= v[i] << (24 - 8*i)
	}
	last := v[len(parts)-1]
	if last >= 1<<(8*(5-len(parts))) {
		return netip.Addr{}, false
	}
	x |= last
	return netip.AddrFrom4([4]byte{byte(x >> 24), byte(x >> 16), byte(x >> 8), byte(x)}), true
}

// internal reports whether a is an address no customer URL may reach,
// by the standard library's classification plus carrier-grade NAT: an
// oracle written apart from the guard's.
func internal(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() ||
		a.IsUnspecified() || a.IsMulticast() || netip.MustParsePrefix("100.64.0.0/10").Contains(a)
}

// FuzzCheckURL holds the guard to its promise for any URL, resolved by a
// resolver that answers like a real one but from a table, and connected
// by the recording dialer, so that nothing leaves the process. A request
// through the guard's client never dials an internal address. A URL
// CheckURL accepts is not then refused at connect time: the check sees
// every spelling the client dials.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{
		"https://public.example/hook", "http://93.184.215.14:8080/", "http://127.0.0.1/", "http://2130706433/", "http://0x7f.1/",
		"http://0177.0.0.1/", "http://017700000001/", "http://[::1]/", "http://[::ffff:127.0.0.1]/", "http://[fe80::1%25eth0]/",
		"http://[fd00::1]/", "http://LocalHost./", "http://api.localhost/", "http://rebind.example/", "http://mixed.example:81/",
		"http://db.internal/", "http://%6c%6f%63%61%6c%68%6f%73%74/", "http://ｌｏｃａｌｈｏｓｔ/", "http://１２７.０.０.１/",
		"http://bücher.example/", "http://xn--bcher-kva.example/", "http://user@public.example/", "ftp://public.example/",
		"http://0/", "http://100.64.0.1/", "http://[64:ff9b::a00:1]/", "http://169.254.169.254/latest/", "https://v6.example/",
	} {
		f.Add(s)
	}
	table := systemResolver{
		"public.example":              {netip.MustParseAddr("93.184.215.14")},
		"xn--bcher-kva.example":       {netip.MustParseAddr("93.184.215.15")},
		"rebind.example":              {netip.MustParseAddr("10.0.0.7")},
		"mixed.example":               {netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("169.254.169.254")},
		"v6.example":                  {netip.MustParseAddr("fd00::7")},
		"mapped.example":              {netip.MustParseAddr("::ffff:192.168.0.1")},
		"xn--80ak6aa92e.example":      {netip.MustParseAddr("127.0.0.2")},
		"metadata.google.internal":    {netip.MustParseAddr("169.254.169.254")},
		"public-v6.example":           {netip.MustParseAddr("2606:2800:220:1:248:1893:25c8:1946")},
		"xn--public-5ya.example":      {netip.MustParseAddr("192.168.9.9")},
		"two-faced.public.example":    {netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("::1")},
		"zero.example":                {netip.MustParseAddr("0.0.0.0")},
		"cgnat.example":               {netip.MustParseAddr("100.64.3.4")},
		"link-local-v6.example":       {netip.MustParseAddr("fe80::1")},
		"unique-local.public.example": {netip.MustParseAddr("fc00::1")},
	}
	dialer := &recordingDialer{}
	g := httpguard.New(httpguard.Options{Resolver: table, Dialer: dialer})
	client := g.Client(httpguard.ClientOptions{Timeout: 5 * time.Second, FollowRedirects: true})
	f.Fuzz(func(t *testing.T, raw string) {
		ctx := context.Background()
		checkErr := g.CheckURL(ctx, raw)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
		if err != nil {
			return
		}
		dialer.mu.Lock()
		dialer.dials = nil
		dialer.mu.Unlock()
		_, getErr := client.Do(req)
		dialer.mu.Lock()
		dials := dialer.dials
		dialer.mu.Unlock()
		for _, d := range dials {
			host, _, err := net.SplitHostPort(d)
			if err != nil {
				t.Fatalf("%q: the client dialled %q", raw, d)
			}
			a, err := netip.ParseAddr(host)
			if err != nil || internal(a) {
				t.Fatalf("%q: the client dialled %q", raw, d)
			}
		}
		if checkErr == nil && errors.Is(getErr, httpguard.ErrForbiddenAddress) {
			t.Fatalf("CheckURL accepts %q, which the client then refuses to dial: %v", raw, getErr)
		}
	})
}
