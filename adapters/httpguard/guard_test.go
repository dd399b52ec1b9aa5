package httpguard_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/httpguard"
	appcron "github.com/switchboard-dev/switchboard/application/cron"
)

// recordingDialer records every address the guard tries to connect to and
// connects to none of them.
type recordingDialer struct {
	mu    sync.Mutex
	dials []string
}

func (d *recordingDialer) DialContext(_ context.Context, _, address string) (net.Conn, error) {
	d.mu.Lock()
	d.dials = append(d.dials, address)
	d.mu.Unlock()
	return nil, errors.New("recording dialer never connects")
}

// fakeResolver answers from a table.
type fakeResolver map[string][]netip.Addr

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := f[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

var resolver = fakeResolver{
	"public.example":  {netip.MustParseAddr("93.184.215.14")},
	"rebind.example":  {netip.MustParseAddr("10.0.0.7")},
	"mixed.example":   {netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("169.254.169.254")},
	"metadata.google": {netip.MustParseAddr("169.254.169.254")},
}

func TestCheckURLRefusesSpecialAddresses(t *testing.T) {
	t.Parallel()
	g := httpguard.New(httpguard.Options{Resolver: resolver, Dialer: &recordingDialer{}})
	ctx := context.Background()
	for _, raw := range []string{
		"http://127.0.0.1/x", "http://127.1.2.3:8080/", "http://localhost/", "http://api.localhost/",
		"http://10.0.0.1/", "http://172.16.5.4/", "http://192.168.1.1/", "http://169.254.169.254/latest/meta-data",
		"http://[::1]/", "http://[::ffff:10.0.0.1]/", "http://[::ffff:127.0.0.1]/", "http://[fe80::1%25eth0]/", "http://[fd00::1]/",
		"http://0.0.0.0/", "http://100.64.0.1/", "http://2130706433/", "http://0x7f.1/", "http://0177.0.0.1/", "http://017700000001/",
		"http://rebind.example/", "http://mixed.example/", "http://metadata.google/",
	} {
		err := g.CheckURL(ctx, raw)
		require.ErrorIs(t, err, httpguard.ErrForbiddenAddress, raw)
	}
	for _, raw := range []string{"ftp://public.example/", "file:///etc/passwd", "http://user:pw@public.example/", "/relative", "http://"} {
		require.Error(t, g.CheckURL(ctx, raw), raw)
	}
	for _, raw := range []string{"https://public.example/hook", "https://93.184.215.14/", "https://not-yet-in-dns.example/"} {
		require.NoError(t, g.CheckURL(ctx, raw), raw)
	}
}

func TestCheckURLSeesThroughSpellingsOfAName(t *testing.T) {
	t.Parallel()
	g := httpguard.New(httpguard.Options{Resolver: resolver, Dialer: &recordingDialer{}})
	ctx := context.Background()
	for _, tt := range []struct {
		raw     string
		allowed bool
	}{
		{raw: "http://localhost./"},
		{raw: "http://localhost../"},
		{raw: "http://LOCALHOST/"},
		{raw: "http://LocalHost.:8080/"},
		{raw: "http://foo.localhost./"},
		{raw: "http://Foo.LOCALHOST./hook"},
		{raw: "http://rebind.example./"},
		{raw: "http://REBIND.Example/"},
		{raw: "http://metadata.google./"},
		{raw: "http://127.0.0.1./"},
		{raw: "http://0x7f.1./"},
		// Names net/http maps to ASCII before it dials (found by FuzzCheckURL).
		{raw: "http://ｌｏｃａｌｈｏｓｔ/"},
		{raw: "http://１２７.０.０.１/"},
		{raw: "http://ＲＥＢＩＮＤ.example/"},
		{raw: "http://rebind。example/"},
		{raw: "https://ｐｕｂｌｉｃ.example/hook", allowed: true},
		{raw: "https://public.example./hook", allowed: true},
		{raw: "https://PUBLIC.example/hook", allowed: true},
	} {
		t.Run(tt.raw, func(t *testing.T) {
			err := g.CheckURL(ctx, tt.raw)
			if tt.allowed {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, httpguard.ErrForbiddenAddress)
		})
	}
	require.Error(t, g.CheckURL(ctx, "http://./"), "a host of dots is no host")
}

func TestDialRefusesWithoutConnecting(t *testing.T) {
	t.Parallel()
	dialer := &recordingDialer{}
	g := httpguard.New(httpguard.Options{Resolver: resolver, Dialer: dialer})
	client := g.Client(httpguard.ClientOptions{})
	for _, raw := range []string{"http://10.0.0.1/", "http://rebind.example/", "http://metadata.google/", "http://[::ffff:169.254.169.254]/", "http://2130706433/"} {
		_, err := client.Get(raw)
		require.ErrorIs(t, err, httpguard.ErrForbiddenAddress, raw)
	}
	require.Empty(t, dialer.dials, "no forbidden address was ever dialled")

	// An address with the trailing dot of a fully qualified name is the
	// address (found by FuzzCheckURL: CheckURL accepted it, the dial
	// refused it as a numeric name).
	_, err := g.DialContext(context.Background(), "tcp", "93.184.215.14.:443")
	require.NotErrorIs(t, err, httpguard.ErrForbiddenAddress)
	_, err = g.DialContext(context.Background(), "tcp", "127.0.0.1.:443")
	require.ErrorIs(t, err, httpguard.ErrForbiddenAddress)
	require.Equal(t, []string{"93.184.215.14:443"}, dialer.dials)
	dialer.dials = nil

	// A public name is dialled at the address the guard checked.
	_, err = client.Get("http://mixed.example:8080/")
	require.Error(t, err)
	require.Equal(t, []string{"93.184.215.14:8080"}, dialer.dials, "only the allowed address of a mixed answer")
}

func TestRedirectsAreCheckedOrRefused(t *testing.T) {
	t.Parallel()
	dialer := &recordingDialer{}
	var target int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "http://10.1.2.3/secret", http.StatusFound)
			return
		}
		target++
	}))
	defer srv.Close()
	g := httpguard.New(httpguard.Options{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, Resolver: resolver, Dialer: &proxyToLoopback{recordingDialer: dialer}})

	resp, err := g.Client(httpguard.ClientOptions{}).Get(srv.URL + "/redirect")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode, "without following, a 3xx is the answer")

	_, err = g.Client(httpguard.ClientOptions{FollowRedirects: true}).Get(srv.URL + "/redirect")
	require.ErrorIs(t, err, httpguard.ErrForbiddenAddress, "a redirect into a private range is refused at dial")
	require.Zero(t, target)
	for _, d := range dialer.dials {
		require.Contains(t, d, "127.0.0.1", "only the allowed loopback test server was dialled")
	}
}

// proxyToLoopback records dials and connects only to 127.0.0.1, where the
// test server listens.
type proxyToLoopback struct{ *recordingDialer }

func (p *proxyToLoopback) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	p.mu.Lock()
	p.dials = append(p.dials, address)
	p.mu.Unlock()
	host, _, _ := net.SplitHostPort(address)
	if host != "127.0.0.1" {
		return nil, errors.New("test dialer connects to 127.0.0.1 only")
	}
	var d net.Dialer
	return d.DialContext(ctx, network, address)
}

func TestAllowListOpensRanges(t *testing.T) {
	t.Parallel()
	g := httpguard.New(httpguard.Options{Allow: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, Resolver: resolver, Dialer: &recordingDialer{}})
	require.NoError(t, g.CheckURL(context.Background(), "http://10.20.30.40/hook"))
	require.NoError(t, g.CheckURL(context.Background(), "http://rebind.example/"))
	require.Error(t, g.CheckURL(context.Background(), "http://192.168.0.1/"))
}

// headerServer answers on 127.0.0.1 with about 1 MiB of headers on
// /long, and a plain answer elsewhere.
func headerServer(t *testing.T) *httptest.Server {
	t.Helper()
	big := strings.Repeat("h", 1<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/long" {
			for i := range 1 << 10 {
				w.Header().Set(fmt.Sprintf("X-Filler-%d", i), big)
			}
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestClientsRefuseOverlongResponseHeaders(t *testing.T) {
	t.Parallel()
	srv := headerServer(t)
	g := httpguard.New(httpguard.Options{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})

	// The general client: media probes and fetches, group pictures.
	client := g.Client(httpguard.ClientOptions{Timeout: 10 * time.Second, FollowRedirects: true})
	resp, err := client.Get(srv.URL + "/short")
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	_, err = client.Get(srv.URL + "/long")
	require.ErrorContains(t, err, "server response headers exceeded 65536 bytes")

	// The cron caller: the run fails with the reason.
	cron := g.NewCronCaller()
	ok := cron.Call(context.Background(), appcron.Request{Method: http.MethodGet, URL: srv.URL + "/short", Timeout: 10 * time.Second})
	require.NoError(t, ok.Err)
	require.Equal(t, http.StatusOK, ok.StatusCode)
	long := cron.Call(context.Background(), appcron.Request{Method: http.MethodGet, URL: srv.URL + "/long", Timeout: 10 * time.Second})
	require.ErrorContains(t, long.Err, "server response headers exceeded 65536 bytes")
	require.Zero(t, long.StatusCode)
}

func TestRefusalsNameTheOperatorsSetting(t *testing.T) {
	t.Parallel()
	const hint = "SET_THIS allows a range"
	d := &recordingDialer{}
	g := httpguard.New(httpguard.Options{Resolver: resolver, Dialer: d, Hint: hint})
	ctx := context.Background()
	for _, raw := range []string{"http://127.0.0.1:9000/hook", "http://localhost/", "http://rebind.example/", "http://[fd00::1]/"} {
		err := g.CheckURL(ctx, raw)
		require.ErrorIs(t, err, httpguard.ErrForbiddenAddress, raw)
		require.ErrorContains(t, err, "("+hint+")", raw)
	}
	_, err := g.DialContext(ctx, "tcp", "127.0.0.1:9000")
	require.ErrorIs(t, err, httpguard.ErrForbiddenAddress)
	require.ErrorContains(t, err, hint, "the connect-time refusal says it too (a cron run's error)")

	// An IP in a spelling that no setting allows gets no hint.
	err = g.CheckURL(ctx, "http://0x7f.1/")
	require.ErrorIs(t, err, httpguard.ErrForbiddenAddress)
	require.NotContains(t, err.Error(), hint)
	require.Empty(t, d.dials)

	// Without a hint, the message is the address alone.
	err = httpguard.New(httpguard.Options{Resolver: resolver, Dialer: d}).CheckURL(ctx, "http://127.0.0.1/")
	require.EqualError(t, err, "destination address is not allowed: 127.0.0.1")
}
