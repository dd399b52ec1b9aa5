package rest_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/adapters/edge/rest"
	"github.com/switchboard-dev/switchboard/adapters/edge/rest/openapitest"
	"github.com/switchboard-dev/switchboard/adapters/keyring"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/sessions"
)

// sessionBundle is a real HTTP server that accepts dashboard sessions,
// over the real use cases and a fresh database.
type sessionBundle struct {
	client    *openapitest.Client
	url       string
	accounts  *accounts.Service
	sessions  *sessions.Service
	csrf      edge.CSRF
	accountID string
	otherID   string
	key       string
	secret    string
	keyID     string
}

func setupSessions(t *testing.T, dialect store.Dialect, limits edge.Limits) *sessionBundle {
	t.Helper()
	db := dbtest.Open(t, dialect)
	keys, err := keyring.New([]byte(strings.Repeat("k", 32)))
	require.NoError(t, err)
	acc := accounts.NewService(db.AccountStore(), keys, accounts.Options{})
	sess := sessions.NewService(db.SessionStore(), acc, keys, sessions.Options{})
	ctx := context.Background()
	a, cred, err := acc.CreateAccount(ctx, "Acme")
	require.NoError(t, err)
	o, _, err := acc.CreateAccount(ctx, "Other")
	require.NoError(t, err)
	csrf := edge.NewCSRF(keys)
	h, err := rest.NewHandler(edge.Deps{
		Accounts: acc, Sessions: sess, CSRF: csrf, Ready: db.Ready, Registry: prometheus.NewRegistry(), Limits: limits, Logger: slog.New(slog.DiscardHandler),
	}, rest.Deps{Accounts: acc})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &sessionBundle{
		client: openapitest.New(t, srv.URL), url: srv.URL, accounts: acc, sessions: sess, csrf: csrf,
		accountID: a.ID, otherID: o.ID, key: cred.Key, secret: cred.Secret, keyID: cred.Credential.ID,
	}
}

// signIn starts a session and returns its token.
func (b *sessionBundle) signIn(t *testing.T) string {
	t.Helper()
	issued, err := b.sessions.SignIn(context.Background(), b.key, b.secret)
	require.NoError(t, err)
	return issued.Token
}

// origin is the test server's own origin, as a browser sends it.
func (b *sessionBundle) origin() string { return b.url }

func cookie(token string) []string { return []string{"Cookie", edge.SessionCookie + "=" + token} }

func TestSessionCookieAuthenticatesTheAPI(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupSessions(t, dialect, unlimited)
		token := b.signIn(t)
		path := "/v1/accounts/" + b.accountID
		csrf := b.csrf.Token(token)
		rename := map[string]any{"name": "Renamed"}
		with := func(extra ...string) []string { return append(cookie(token), extra...) }

		r := b.client.Do(http.MethodGet, path, nil, with("Origin", b.origin(), "Sec-Fetch-Site", "same-origin")...)
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		require.Equal(t, b.accountID, r.JSON(t)["data"].(map[string]any)["account_id"])
		r = b.client.Do(http.MethodGet, path, nil, with()...)
		require.Equal(t, http.StatusOK, r.StatusCode, "a GET without Origin (as browsers send same-origin GETs) passes: %s", r.Body)

		requireError(t, b.client.Do(http.MethodPatch, path, rename, with("Origin", b.origin())...),
			http.StatusForbidden, "csrf_token_invalid")
		requireError(t, b.client.Do(http.MethodPatch, path, rename, with("Origin", b.origin(), edge.CSRFHeader, csrf+"x")...),
			http.StatusForbidden, "csrf_token_invalid")
		requireError(t, b.client.Do(http.MethodPatch, path, rename, with("Origin", b.origin(), edge.CSRFHeader, b.csrf.Token(b.signIn(t)))...),
			http.StatusForbidden, "csrf_token_invalid")
		requireError(t, b.client.Do(http.MethodPatch, path, rename, with("Origin", "http://evil.example", edge.CSRFHeader, csrf)...),
			http.StatusForbidden, "cross_site_request")
		requireError(t, b.client.Do(http.MethodPatch, path, rename, with("Sec-Fetch-Site", "cross-site", edge.CSRFHeader, csrf)...),
			http.StatusForbidden, "cross_site_request")
		requireError(t, b.client.Do(http.MethodGet, path, nil, with("Sec-Fetch-Site", "cross-site")...),
			http.StatusForbidden, "cross_site_request")
		got, err := b.accounts.Account(context.Background(), b.accountID)
		require.NoError(t, err)
		require.Equal(t, "Acme", got.Name, "no refused request changed anything")

		r = b.client.Do(http.MethodPatch, path, rename, with("Origin", b.origin(), "Sec-Fetch-Site", "same-origin", edge.CSRFHeader, csrf)...)
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		require.Equal(t, "Renamed", r.JSON(t)["data"].(map[string]any)["name"])

		requireError(t, b.client.Do(http.MethodGet, "/v1/accounts/"+b.otherID, nil, with()...),
			http.StatusForbidden, "account_mismatch")

		// API keys go on as before: no CSRF token, whatever cookie.
		r = b.client.Do(http.MethodPatch, path, map[string]any{"name": "By key"},
			"X-API-Key", b.key, "X-API-Secret", b.secret, "Cookie", edge.SessionCookie+"=garbage")
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
	})
}

func TestEndedAndForgedSessionsAreUnauthorized(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupSessions(t, dialect, unlimited)
		path := "/v1/accounts/" + b.accountID
		token := b.signIn(t)
		flipped := []byte(token)
		flipped[5] ^= 2
		for _, forged := range []string{string(flipped), "x", "", strings.Repeat("A", len(token))} {
			requireError(t, b.client.Do(http.MethodGet, path, nil, cookie(forged)...), http.StatusUnauthorized, "unauthorized")
		}

		require.NoError(t, b.sessions.SignOut(context.Background(), token))
		requireError(t, b.client.Do(http.MethodGet, path, nil, cookie(token)...), http.StatusUnauthorized, "unauthorized")

		revoked := b.signIn(t)
		require.Equal(t, http.StatusOK, b.client.Do(http.MethodGet, path, nil, cookie(revoked)...).StatusCode)
		_, err := b.accounts.RevokeCredential(context.Background(), b.accountID, b.keyID)
		require.NoError(t, err)
		requireError(t, b.client.Do(http.MethodGet, path, nil, cookie(revoked)...), http.StatusUnauthorized, "unauthorized")
	})
}

// Refused session cookies are not failed authentications (nothing to
// guess), but an address past its budget of failed API keys is refused
// with its session too, as with the right key.
func TestSessionsAndTheFailedAuthenticationBudget(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		limits := unlimited
		limits.AuthFailuresPerMinute = 3
		b := setupSessions(t, dialect, limits)
		path := "/v1/accounts/" + b.accountID
		token := b.signIn(t)
		for range 10 {
			requireError(t, b.client.Do(http.MethodGet, path, nil, cookie("forged")...), http.StatusUnauthorized, "unauthorized")
		}
		require.Equal(t, http.StatusOK, b.client.Do(http.MethodGet, path, nil, cookie(token)...).StatusCode)
		for range 3 {
			requireError(t, b.client.Do(http.MethodGet, path, nil, "X-API-Key", b.key, "X-API-Secret", "sws_wrong"), http.StatusUnauthorized, "unauthorized")
		}
		requireError(t, b.client.Do(http.MethodGet, path, nil, cookie(token)...), http.StatusTooManyRequests, "rate_limited")
	})
}

// The account's request budget and the body limit hold for sessions as
// for keys.
func TestSessionsKeepTheLimits(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		limits := edge.Limits{MaxBodyBytes: 1 << 10, RatePerSecond: 0.001, RateBurst: 2}
		b := setupSessions(t, dialect, limits)
		path := "/v1/accounts/" + b.accountID
		token := b.signIn(t)
		csrf := b.csrf.Token(token)
		big := map[string]any{"name": strings.Repeat("n", 2<<10)}
		requireError(t, b.client.Do(http.MethodPatch, path, big, append(cookie(token), edge.CSRFHeader, csrf)...),
			http.StatusRequestEntityTooLarge, "payload_too_large")
		r := b.client.Do(http.MethodGet, path, nil, cookie(token)...)
		require.Equal(t, http.StatusOK, r.StatusCode)
		require.NotEmpty(t, r.Header.Get("RateLimit-Policy"))
		require.Equal(t, http.StatusOK, b.client.Do(http.MethodGet, path, nil, cookie(token)...).StatusCode)
		requireError(t, b.client.Do(http.MethodGet, path, nil, "X-API-Key", b.key, "X-API-Secret", b.secret), http.StatusTooManyRequests, "rate_limited")
		requireError(t, b.client.Do(http.MethodGet, path, nil, cookie(token)...), http.StatusTooManyRequests, "rate_limited")
	})
}
