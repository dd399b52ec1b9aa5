package rest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/adapters/edge/rest"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// refusingAccounts refuses every credential.
type refusingAccounts struct{}

func (refusingAccounts) Authenticate(context.Context, string, string, bool) (accounts.Principal, error) {
	return accounts.Principal{}, failure.Unauthenticated()
}

func (refusingAccounts) Overview(context.Context, string) (accounts.Overview, error) {
	return accounts.Overview{}, errors.New("not used")
}

func (refusingAccounts) Rename(context.Context, string, string) (account.Account, error) {
	return account.Account{}, errors.New("not used")
}

func (refusingAccounts) SetHistoryRetention(context.Context, string, *int, ...any) (account.Account, error) {
	return account.Account{}, errors.New("not used")
}

func (refusingAccounts) SetMessageRetention(context.Context, string, *int, ...any) (account.Account, error) {
	return account.Account{}, errors.New("not used")
}

func (refusingAccounts) HistoryRetention(account.Account) time.Duration { return 0 }

// addressBundle serves the API over refusingAccounts; status sends one
// request as it would arrive from peer (ip:port) with the given headers.
type addressBundle struct{ h http.Handler }

func setupAddresses(t *testing.T, limits edge.Limits) *addressBundle {
	t.Helper()
	h, err := rest.NewHandler(edge.Deps{
		Accounts: refusingAccounts{}, Registry: prometheus.NewRegistry(), Limits: limits, Logger: slog.New(slog.DiscardHandler),
	}, rest.Deps{Accounts: refusingAccounts{}})
	require.NoError(t, err)
	return &addressBundle{h: h}
}

func (b *addressBundle) status(peer string, headers ...string) int {
	r := httptest.NewRequest(http.MethodGet, "/v1/accounts/acc_1", nil)
	r.RemoteAddr = peer
	r.Header.Set("X-API-Key", accounts.KeyPrefix+"guess")
	r.Header.Set("X-API-Secret", "guess")
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Set(headers[i], headers[i+1])
	}
	w := httptest.NewRecorder()
	b.h.ServeHTTP(w, r)
	return w.Code
}

// The addresses of one IPv6 /64 share one failed-authentication budget;
// another /64, and each IPv4 address, has its own.
func TestFailedAuthenticationLimitCountsIPv6ByPrefix(t *testing.T) {
	t.Parallel()
	b := setupAddresses(t, edge.Limits{AuthFailuresPerMinute: 3})
	for i := range 11 {
		want := http.StatusUnauthorized
		if i >= 3 {
			want = http.StatusTooManyRequests
		}
		peer := fmt.Sprintf("[2001:db8:1:2::%x]:4000", i+1)
		require.Equal(t, want, b.status(peer), "address %d of the /64", i+1)
	}
	require.Equal(t, http.StatusUnauthorized, b.status("[2001:db8:1:3::1]:4000"), "another /64")
	for i := range 4 {
		require.Equal(t, http.StatusUnauthorized, b.status(fmt.Sprintf("192.0.2.%d:4000", i+1)), "IPv4 address %d", i+1)
	}

	wide := setupAddresses(t, edge.Limits{AuthFailuresPerMinute: 3, AuthFailuresIPv6Prefix: 48})
	for i := range 3 {
		require.Equal(t, http.StatusUnauthorized, wide.status(fmt.Sprintf("[2001:db8:1:%x::1]:4000", i+1)))
	}
	require.Equal(t, http.StatusTooManyRequests, wide.status("[2001:db8:1:ff::1]:4000"), "a /48 when configured")
}

// X-Forwarded-For is believed only from a trusted proxy: a client that
// forges it is limited by its own address, and a trusted proxy's clients
// by theirs (the right-most address that is not a trusted proxy).
func TestTrustedProxiesDecideTheClientAddress(t *testing.T) {
	t.Parallel()
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	b := setupAddresses(t, edge.Limits{AuthFailuresPerMinute: 2, TrustedProxies: proxies})

	// An untrusted peer names a new client each time: still one budget.
	for i := range 3 {
		want := http.StatusUnauthorized
		if i >= 2 {
			want = http.StatusTooManyRequests
		}
		require.Equal(t, want, b.status("192.0.2.1:4000", "X-Forwarded-For", fmt.Sprintf("198.51.100.%d", i+1)), "forged %d", i+1)
	}
	require.Equal(t, http.StatusUnauthorized, b.status("192.0.2.2:4000"), "another peer has its own budget")

	// Through trusted proxies, each forwarded client has its own budget,
	// whatever it put in front of its own address.
	for i := range 2 {
		require.Equal(t, http.StatusUnauthorized, b.status("10.0.0.1:4000", "X-Forwarded-For", "203.0.113.1, 10.1.1.1"), "client 1, attempt %d", i+1)
	}
	require.Equal(t, http.StatusTooManyRequests, b.status("10.0.0.2:4000", "X-Forwarded-For", "198.51.100.9, 203.0.113.1"), "client 1 through another proxy, with a forged entry")
	require.Equal(t, http.StatusUnauthorized, b.status("10.0.0.1:4000", "X-Forwarded-For", "203.0.113.2"), "client 2")
	require.Equal(t, http.StatusUnauthorized, b.status("[fd00::1]:4000", "X-Forwarded-For", "[2001:db8:9::1]:5555"), "an IPv6 client with a port")

	// Without trusted proxies the header is never believed.
	plain := setupAddresses(t, edge.Limits{AuthFailuresPerMinute: 1})
	require.Equal(t, http.StatusUnauthorized, plain.status("10.0.0.1:4000", "X-Forwarded-For", "203.0.113.1"))
	require.Equal(t, http.StatusTooManyRequests, plain.status("10.0.0.1:4000", "X-Forwarded-For", "203.0.113.2"))
}

// The request log names the client clientOf decided on.
func TestRequestLogNamesTheForwardedClient(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	h, err := rest.NewHandler(edge.Deps{
		Accounts: refusingAccounts{}, Registry: prometheus.NewRegistry(), Limits: edge.Limits{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}, Logger: slog.New(slog.NewJSONHandler(&log, nil)),
	}, rest.Deps{Accounts: refusingAccounts{}})
	require.NoError(t, err)
	for _, peer := range []string{"10.0.0.1:4000", "192.0.2.1:4000"} {
		r := httptest.NewRequest(http.MethodGet, "/healthz", nil)
		r.RemoteAddr = peer
		r.Header.Set("X-Forwarded-For", "203.0.113.7")
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	require.Len(t, lines, 2)
	require.Contains(t, lines[0], `"remote":"203.0.113.7"`, "through a trusted proxy")
	require.Contains(t, lines[1], `"remote":"192.0.2.1"`, "from an untrusted peer")
}
