package rest_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/rest"
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

// addressBundle serves the API over refusingAccounts; status sends one
// request as it would arrive from peer (ip:port) with the given headers.
type addressBundle struct{ h http.Handler }

func setupAddresses(t *testing.T, limits rest.Limits) *addressBundle {
	t.Helper()
	h, err := rest.NewHandler(rest.Deps{
		Accounts: refusingAccounts{}, Registry: prometheus.NewRegistry(),
		Limits: limits, Logger: slog.New(slog.DiscardHandler),
	})
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
	b := setupAddresses(t, rest.Limits{AuthFailuresPerMinute: 3})
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

	wide := setupAddresses(t, rest.Limits{AuthFailuresPerMinute: 3, AuthFailuresIPv6Prefix: 48})
	for i := range 3 {
		require.Equal(t, http.StatusUnauthorized, wide.status(fmt.Sprintf("[2001:db8:1:%x::1]:4000", i+1)))
	}
	require.Equal(t, http.StatusTooManyRequests, wide.status("[2001:db8:1:ff::1]:4000"), "a /48 when configured")
}
