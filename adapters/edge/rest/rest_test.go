package rest_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/adapters/edge/rest"
	"github.com/switchboard-dev/switchboard/adapters/edge/rest/openapitest"
	"github.com/switchboard-dev/switchboard/adapters/keyring"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/domain/account"
)

// testBundle is a real HTTP server over the real use cases and a fresh
// database, with two accounts to test tenancy.
type testBundle struct {
	client  *openapitest.Client
	url     string
	svc     *accounts.Service
	db      *store.DB
	account account.Account
	key     string
	secret  string
	other   account.Account
	oKey    string
	oSecret string
}

// auth returns the headers of the first account's credentials.
func (b *testBundle) auth() []string { return []string{"X-API-Key", b.key, "X-API-Secret", b.secret} }

func setup(t *testing.T, dialect store.Dialect, limits edge.Limits) *testBundle {
	t.Helper()
	db := dbtest.Open(t, dialect)
	keys, err := keyring.New([]byte(strings.Repeat("k", 32)))
	require.NoError(t, err)
	svc := accounts.NewService(db.AccountStore(), keys, accounts.Options{})
	ctx := context.Background()
	a, cred, err := svc.CreateAccount(ctx, "Acme")
	require.NoError(t, err)
	_, err = svc.AddNumber(ctx, accounts.NumberInput{AccountID: a.ID, Number: "+14155550100", Service: "whatsapp", Provider: "sandbox", Enabled: true})
	require.NoError(t, err)
	o, oCred, err := svc.CreateAccount(ctx, "Other")
	require.NoError(t, err)

	h, err := rest.NewHandler(edge.Deps{
		Accounts: svc, Ready: db.Ready, Registry: prometheus.NewRegistry(), Limits: limits, Logger: slog.New(slog.DiscardHandler),
	}, rest.Deps{Accounts: svc, EmailDomain: "mail.example.test"})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &testBundle{
		client: openapitest.New(t, srv.URL), url: srv.URL, svc: svc, db: db,
		account: a, key: cred.Key, secret: cred.Secret,
		other: o, oKey: oCred.Key, oSecret: oCred.Secret,
	}
}

// unlimited turns the rate limits off for tests that are not about them.
var unlimited = edge.Limits{MaxBodyBytes: 1 << 20}

func requireError(t *testing.T, r openapitest.Response, status int, code string) {
	t.Helper()
	require.Equal(t, status, r.StatusCode, "body: %s", r.Body)
	body := r.JSON(t)
	require.Equal(t, "error", body["status"])
	require.Equal(t, code, body["code"])
	require.Equal(t, body["message"], body["detail"])
}

func requireValidation(t *testing.T, r openapitest.Response, typ string, loc ...any) {
	t.Helper()
	require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "body: %s", r.Body)
	items, ok := r.JSON(t)["detail"].([]any)
	require.True(t, ok, "detail must be a list: %s", r.Body)
	require.NotEmpty(t, items)
	first := items[0].(map[string]any)
	require.Equal(t, typ, first["type"], "body: %s", r.Body)
	if loc != nil {
		require.Equal(t, loc, first["loc"], "body: %s", r.Body)
	}
}

func TestGetAccount(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect, unlimited)
		r := b.client.Do(http.MethodGet, "/v1/accounts/"+b.account.ID, nil, b.auth()...)
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		body := r.JSON(t)
		require.Equal(t, "success", body["status"])
		data := body["data"].(map[string]any)
		require.Equal(t, b.account.ID, data["account_id"])
		require.Equal(t, "Acme", data["name"])
		require.Equal(t, "mail.example.test", data["service_email_domain"])
		numbers := data["numbers"].([]any)
		require.Len(t, numbers, 1)
		require.Equal(t, "+14155550100", numbers[0].(map[string]any)["number"])
		require.Equal(t, "whatsapp", numbers[0].(map[string]any)["service"])
	})
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect, unlimited)
		path := "/v1/accounts/" + b.account.ID
		cases := []struct {
			name    string
			headers []string
			status  int
			code    string
		}{
			{"no credentials", nil, 401, "unauthorized"},
			{"key only", []string{"X-API-Key", b.key}, 401, "unauthorized"},
			{"secret only", []string{"X-API-Secret", b.secret}, 401, "unauthorized"},
			{"wrong secret", []string{"X-API-Key", b.key, "X-API-Secret", b.secret + "x"}, 401, "unauthorized"},
			{"another account's secret", []string{"X-API-Key", b.key, "X-API-Secret", b.oSecret}, 401, "unauthorized"},
			{"unknown key", []string{"X-API-Key", "swk_" + strings.Repeat("A", 32), "X-API-Secret", b.secret}, 401, "unauthorized"},
			{"garbage key", []string{"X-API-Key", "hello", "X-API-Secret", "world"}, 401, "unauthorized"},
			{"huge key", []string{"X-API-Key", "swk_" + strings.Repeat("A", 5000), "X-API-Secret", b.secret}, 401, "unauthorized"},
			{"bearer is for cron routes only", []string{"Authorization", "Bearer " + b.key}, 401, "unauthorized"},
			{"other account's credentials", []string{"X-API-Key", b.oKey, "X-API-Secret", b.oSecret}, 403, "account_mismatch"},
			{"lower-case header names", []string{"x-api-key", b.key, "x-api-secret", b.secret}, 200, ""},
		}
		for _, c := range cases {
			r := b.client.Do(http.MethodGet, path, nil, c.headers...)
			if c.status == 200 {
				require.Equal(t, 200, r.StatusCode, "%s: %s", c.name, r.Body)
				continue
			}
			require.Equal(t, c.status, r.StatusCode, "%s: %s", c.name, r.Body)
			requireError(t, r, c.status, c.code)
		}
		// An account id that does not exist is the path of another account
		// as far as these credentials go: 403, with no hint either way.
		r := b.client.Do(http.MethodGet, "/v1/accounts/acc_doesnotexist", nil, b.auth()...)
		requireError(t, r, 403, "account_mismatch")
	})
}

func TestRevokedKeyStopsWorking(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect, unlimited)
		ctx := context.Background()
		second, err := b.svc.IssueCredential(ctx, b.account.ID, "second")
		require.NoError(t, err)
		path := "/v1/accounts/" + b.account.ID
		r := b.client.Do(http.MethodGet, path, nil, "X-API-Key", second.Key, "X-API-Secret", second.Secret)
		require.Equal(t, 200, r.StatusCode)

		_, err = b.svc.RevokeCredential(ctx, b.account.ID, second.Credential.ID)
		require.NoError(t, err)
		r = b.client.Do(http.MethodGet, path, nil, "X-API-Key", second.Key, "X-API-Secret", second.Secret)
		requireError(t, r, 401, "unauthorized")
		r = b.client.Do(http.MethodGet, path, nil, b.auth()...)
		require.Equal(t, 200, r.StatusCode, "other keys of the account keep working")
	})
}

func TestPatchAccountBadInput(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect, unlimited)
		path := "/v1/accounts/" + b.account.ID
		cases := []struct {
			name string
			body string
			typ  string
			loc  []any
		}{
			{"malformed JSON", `{"name": "x"`, "json_invalid", nil},
			{"not JSON at all", `name=x`, "json_invalid", nil},
			{"wrong type", `{"name": 5}`, "string_type", []any{"body", "name"}},
			{"null", `{"name": null}`, "missing", []any{"body", "name"}},
			{"unknown field", `{"name": "x", "admin": true}`, "extra_forbidden", []any{"body", "admin"}},
			{"missing field", `{}`, "missing", []any{"body", "name"}},
			{"empty name", `{"name": "  "}`, "string_too_short", []any{"body", "name"}},
			{"long name", `{"name": "` + strings.Repeat("n", 201) + `"}`, "string_too_long", []any{"body", "name"}},
			{"array body", `[{"name": "x"}]`, "model_attributes_type", []any{"body"}},
			{"string body", `"x"`, "model_attributes_type", []any{"body"}},
			{"trailing data", `{"name": "x"} {"name": "y"}`, "json_invalid", nil},
			{"empty body", ``, "missing", []any{"body"}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				req, err := http.NewRequest(http.MethodPatch, b.url+path, strings.NewReader(c.body))
				require.NoError(t, err)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-API-Key", b.key)
				req.Header.Set("X-API-Secret", b.secret)
				requireValidation(t, b.client.Send(req), c.typ, c.loc...)
			})
		}

		huge := `{"name": "` + strings.Repeat("x", 2<<20) + `"}`
		requireError(t, b.client.Do(http.MethodPatch, path, huge, b.auth()...), 413, "payload_too_large")

		// A body without a declared length is cut off while reading.
		req, err := http.NewRequest(http.MethodPatch, b.url+path, struct{ *strings.Reader }{strings.NewReader(huge)})
		require.NoError(t, err)
		req.ContentLength = -1
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-API-Key", b.key)
		req.Header.Set("X-API-Secret", b.secret)
		requireError(t, b.client.Send(req), 413, "payload_too_large")

		requireError(t, b.client.Do(http.MethodPatch, path, `{"name":"x"}`, append(b.auth(), "Content-Type", "text/plain")...), 415, "unsupported_media_type")

		// Nothing above changed the account.
		got, err := b.svc.Account(context.Background(), b.account.ID)
		require.NoError(t, err)
		require.Equal(t, "Acme", got.Name)

		// Another account's credentials cannot rename it either.
		r := b.client.Do(http.MethodPatch, path, `{"name":"hijacked"}`, "X-API-Key", b.oKey, "X-API-Secret", b.oSecret)
		requireError(t, r, 403, "account_mismatch")

		r = b.client.Do(http.MethodPatch, path, `{"name":"Acme Ltd"}`, b.auth()...)
		require.Equal(t, 200, r.StatusCode, "body: %s", r.Body)
		require.Equal(t, "Acme Ltd", r.JSON(t)["data"].(map[string]any)["name"])
		got, err = b.svc.Account(context.Background(), b.account.ID)
		require.NoError(t, err)
		require.Equal(t, "Acme Ltd", got.Name)
	})
}

func TestUnknownRoutesAndMethods(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite, unlimited)
	requireError(t, b.client.Do(http.MethodGet, "/v1/nothing-here", nil), 404, "route_not_found")
	requireError(t, b.client.Do(http.MethodGet, "/", nil), 404, "route_not_found")
	requireError(t, b.client.Do(http.MethodDelete, "/v1/accounts/"+b.account.ID, nil, b.auth()...), 405, "method_not_allowed")
	// Routes are grouped by their first segment: a path under a family's
	// prefix that none of its routes take, or a prefix of another family
	// (/group of /group-management), is still not found.
	requireError(t, b.client.Do(http.MethodGet, "/v1/messages/threads/"+b.account.ID+"/nothing", nil, b.auth()...), 404, "route_not_found")
	requireError(t, b.client.Do(http.MethodGet, "/v1/groupies/"+b.account.ID, nil, b.auth()...), 404, "route_not_found")

	// Cron routes answer in their own error shape, even when unmatched.
	r := b.client.Do(http.MethodGet, "/v1/cron-jobs/crn_x/unknown", nil)
	require.Equal(t, 404, r.StatusCode)
	errObj := r.JSON(t)["error"].(map[string]any)
	require.Equal(t, "route_not_found", errObj["code"])
}

func TestRequestID(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite, unlimited)
	r := b.client.Do(http.MethodGet, "/healthz", nil, "X-Request-Id", "trace-123")
	require.Equal(t, "trace-123", r.Header.Get("X-Request-Id"))
	r = b.client.Do(http.MethodGet, "/healthz", nil, "X-Request-Id", "bad id\twith spaces")
	require.True(t, strings.HasPrefix(r.Header.Get("X-Request-Id"), "req_"), "an unsafe id is replaced, got %q", r.Header.Get("X-Request-Id"))
	r = b.client.Do(http.MethodGet, "/v1/accounts/"+b.account.ID, nil)
	require.True(t, strings.HasPrefix(r.Header.Get("X-Request-Id"), "req_"), "errors carry a request id too")
}

func TestOperationalEndpoints(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect, unlimited)
		require.Equal(t, 200, b.client.Do(http.MethodGet, "/healthz", nil).StatusCode)
		require.Equal(t, 200, b.client.Do(http.MethodGet, "/readyz", nil).StatusCode)

		r := b.client.Do(http.MethodGet, "/v1/openapi.json", nil)
		require.Equal(t, 200, r.StatusCode)
		require.Equal(t, "3.1.0", r.JSON(t)["openapi"])

		b.client.Do(http.MethodGet, "/v1/accounts/"+b.account.ID, nil, b.auth()...)
		r = b.client.Do(http.MethodGet, "/metrics", nil)
		require.Equal(t, 200, r.StatusCode)
		require.Contains(t, string(r.Body), `switchboard_http_requests_total{code="200",method="GET",route="/v1/accounts/{accountId}"} 1`)

		// Readiness follows the database.
		require.NoError(t, b.db.Close())
		r = b.client.Do(http.MethodGet, "/readyz", nil)
		require.Equal(t, 503, r.StatusCode)
	})
}

func TestAccountRateLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite, edge.Limits{MaxBodyBytes: 1 << 20, RatePerSecond: 0.01, RateBurst: 2})
	path := "/v1/accounts/" + b.account.ID
	require.Equal(t, 200, b.client.Do(http.MethodGet, path, nil, b.auth()...).StatusCode)
	require.Equal(t, 200, b.client.Do(http.MethodGet, path, nil, b.auth()...).StatusCode)
	r := b.client.Do(http.MethodGet, path, nil, b.auth()...)
	requireError(t, r, 429, "rate_limited")
	require.NotEmpty(t, r.Header.Get("Retry-After"))

	// Another account has its own budget.
	r = b.client.Do(http.MethodGet, "/v1/accounts/"+b.other.ID, nil, "X-API-Key", b.oKey, "X-API-Secret", b.oSecret)
	require.Equal(t, 200, r.StatusCode)
}

func TestFailedAuthenticationLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite, edge.Limits{MaxBodyBytes: 1 << 20, AuthFailuresPerMinute: 3})
	path := "/v1/accounts/" + b.account.ID
	for i := 0; i < 3; i++ {
		requireError(t, b.client.Do(http.MethodGet, path, nil, "X-API-Key", b.key, "X-API-Secret", "guess"), 401, "unauthorized")
	}
	// The address is now throttled, even with the right secret: guessing
	// cannot continue at speed.
	r := b.client.Do(http.MethodGet, path, nil, b.auth()...)
	requireError(t, r, 429, "rate_limited")
	require.NotEmpty(t, r.Header.Get("Retry-After"))
}

// fakeAccounts is a double of the account use cases with function fields.
type fakeAccounts struct {
	overview func(ctx context.Context, id string) (accounts.Overview, error)
}

func (f fakeAccounts) Authenticate(ctx context.Context, key, secret string, keyOnly bool) (accounts.Principal, error) {
	return accounts.Principal{AccountID: "acc_1", CredentialID: "key_1"}, nil
}

func (f fakeAccounts) Overview(ctx context.Context, id string) (accounts.Overview, error) {
	return f.overview(ctx, id)
}

func (f fakeAccounts) Rename(ctx context.Context, id, name string) (account.Account, error) {
	return account.Account{}, errors.New("not used")
}

func (f fakeAccounts) SetHistoryRetention(context.Context, string, *int, ...any) (account.Account, error) {
	return account.Account{}, errors.New("not used")
}

func (f fakeAccounts) SetMessageRetention(context.Context, string, *int, ...any) (account.Account, error) {
	return account.Account{}, errors.New("not used")
}

func (f fakeAccounts) HistoryRetention(account.Account) time.Duration { return 0 }

func TestInternalFailuresDoNotLeak(t *testing.T) {
	t.Parallel()
	for name, overview := range map[string]func(context.Context, string) (accounts.Overview, error){
		"error": func(context.Context, string) (accounts.Overview, error) {
			return accounts.Overview{}, errors.New("pq: password authentication failed for user secret_admin")
		},
		"panic": func(context.Context, string) (accounts.Overview, error) {
			panic("pq: password authentication failed for user secret_admin")
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h, err := rest.NewHandler(edge.Deps{
				Accounts: fakeAccounts{overview: overview}, Limits: unlimited, Logger: slog.New(slog.DiscardHandler),
			}, rest.Deps{Accounts: fakeAccounts{overview: overview}})
			require.NoError(t, err)
			srv := httptest.NewServer(h)
			defer srv.Close()
			r := openapitest.New(t, srv.URL).Do(http.MethodGet, "/v1/accounts/acc_1", nil, "X-API-Key", "k", "X-API-Secret", "s")
			requireError(t, r, 500, "internal_error")
			require.NotContains(t, string(r.Body), "secret_admin")
		})
	}
}
