// Package graphql_test runs the GraphQL API end to end: the app as
// bootstrap assembles it with fx (store, use cases, job runner, REST
// authentication in front of /graphql), listening on 127.0.0.1, against a
// fresh database of each dialect.
package graphql_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/bootstrap"
)

// The agent numbers: the first account has two WhatsApp numbers and a
// Telegram number; the other account has one WhatsApp number.
const (
	agentA     = "+14155550100"
	agentB     = "+14155550102"
	agentTG    = "+14155550103"
	agentOther = "+14155550199"
	userA      = "+14155550111"
	userB      = "+14155550112"
)

// credentials authenticate as one account.
type credentials struct {
	accountID   string
	key, secret string
}

func (c credentials) headers() http.Header {
	return http.Header{"X-Api-Key": {c.key}, "X-Api-Secret": {c.secret}}
}

// testBundle is a running app and two accounts.
type testBundle struct {
	dialect store.Dialect
	dbURL   string
	base    string
	db      *store.DB
	acc     *accounts.Service
	acme    credentials
	other   credentials
}

// appOptions vary the app under test.
type appOptions struct {
	// extra options join the app (fx.Decorate, fx.Populate).
	extra []fx.Option
	// configure changes the configuration.
	configure func(*bootstrap.Config)
}

func setup(t *testing.T, dialect store.Dialect) *testBundle {
	t.Helper()
	return setupWith(t, dialect, appOptions{})
}

func setupWith(t *testing.T, dialect store.Dialect, opts appOptions) *testBundle {
	t.Helper()
	b := startApp(t, dialect, dbtest.URL(t, dialect), opts)
	ctx := context.Background()
	newAccount := func(name string, numbers ...accounts.NumberInput) credentials {
		a, cred, err := b.acc.CreateAccount(ctx, name)
		require.NoError(t, err)
		for _, n := range numbers {
			n.AccountID, n.Provider, n.Enabled = a.ID, "sandbox", true
			_, err := b.acc.AddNumber(ctx, n)
			require.NoError(t, err)
		}
		return credentials{accountID: a.ID, key: cred.Key, secret: cred.Secret}
	}
	b.acme = newAccount("Acme",
		accounts.NumberInput{Number: agentA, Service: "whatsapp"},
		accounts.NumberInput{Number: agentB, Service: "whatsapp"},
		accounts.NumberInput{Number: agentTG, Service: "telegram"},
	)
	b.other = newAccount("Other", accounts.NumberInput{Number: agentOther, Service: "whatsapp"})
	return b
}

// replica starts another app on b's database, as a second replica of the
// same deployment, sharing its accounts.
func (b *testBundle) replica(t *testing.T) *testBundle {
	t.Helper()
	r := startApp(t, b.dialect, b.dbURL, appOptions{})
	r.acme, r.other = b.acme, b.other
	return r
}

// startApp runs the app on the database at dbURL.
func startApp(t *testing.T, dialect store.Dialect, dbURL string, opts appOptions) *testBundle {
	t.Helper()
	cfg := bootstrap.Defaults()
	cfg.Addr = "127.0.0.1:0"
	cfg.DatabaseURL = dbURL
	cfg.SecretKey = strings.Repeat("ab", 32)
	cfg.LogLevel = 12 // quiet
	cfg.Limits = edge.Limits{MaxBodyBytes: 1 << 20}
	cfg.AllowPrivateURLs = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	if opts.configure != nil {
		opts.configure(&cfg)
	}
	var (
		ln  *edge.Listener
		acc *accounts.Service
		db  *store.DB
	)
	app := fxtest.New(t, append([]fx.Option{
		bootstrap.Options(cfg), fx.NopLogger, fx.Populate(&ln, &acc, &db),
	}, opts.extra...)...)
	app.RequireStart()
	t.Cleanup(app.RequireStop)
	return &testBundle{dialect: dialect, dbURL: dbURL, base: "http://" + ln.Addr.String(), db: db, acc: acc}
}

type gqlError struct {
	Message    string         `json:"message"`
	Path       []any          `json:"path"`
	Extensions map[string]any `json:"extensions"`
}

type gqlResponse struct {
	Data   json.RawMessage `json:"data"`
	Errors []gqlError      `json:"errors"`
}

// query posts a GraphQL operation as c and decodes the answer, which must
// be a 200.
func (b *testBundle) query(t *testing.T, c credentials, query string, vars map[string]any) gqlResponse {
	t.Helper()
	status, resp := b.queryStatus(t, c.headers(), query, vars)
	require.Equal(t, http.StatusOK, status)
	return resp
}

func (b *testBundle) queryStatus(t *testing.T, h http.Header, query string, vars map[string]any) (int, gqlResponse) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, b.base+"/graphql", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header = h.Clone()
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	var out gqlResponse
	if res.StatusCode == http.StatusOK {
		require.NoError(t, json.Unmarshal(raw, &out), "body: %s", raw)
	}
	return res.StatusCode, out
}

// data posts a query that must succeed and decodes its data into v.
func (b *testBundle) data(t *testing.T, c credentials, query string, vars map[string]any, v any) {
	t.Helper()
	resp := b.query(t, c, query, vars)
	require.Empty(t, resp.Errors, "data: %s", resp.Data)
	require.NoError(t, json.Unmarshal(resp.Data, v))
}

// inbound delivers a sandbox message from a user to an agent number over
// REST and returns its message and thread ids.
func (b *testBundle) inbound(t *testing.T, c credentials, from, to, text string) (messageID, threadID string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"service": "whatsapp", "from": from, "to": to, "content": text})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, b.base+"/v1/sandbox/"+c.accountID+"/inbound", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header = c.headers()
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	require.Equal(t, http.StatusOK, res.StatusCode, "body: %s", raw)
	var out struct {
		MessageID string `json:"message_id"`
		ThreadID  string `json:"thread_id"`
	}
	require.NoError(t, json.Unmarshal(raw, &out))
	return out.MessageID, out.ThreadID
}

// eventually polls cond until it holds or the test's patience runs out.
func eventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	require.Eventually(t, cond, 20*time.Second, 20*time.Millisecond, msg)
}
