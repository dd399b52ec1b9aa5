package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/graph"
)

// fakeAccounts is an AccountReader whose behaviour each test sets.
type fakeAccounts struct {
	OverviewFn func(ctx context.Context, accountID string) (accounts.Overview, error)
}

var _ graph.AccountReader = (*fakeAccounts)(nil)

func (f *fakeAccounts) Overview(ctx context.Context, accountID string) (accounts.Overview, error) {
	return f.OverviewFn(ctx, accountID)
}

const accountQuery = `{ account { id name numbers { number service enabled } emailAddresses { address } } }`

var (
	created  = time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	acme     = account.Account{ID: "acc_1", Name: "Acme", CreatedAt: created, UpdatedAt: created}
	overview = accounts.Overview{
		Account: acme,
		Holdings: accounts.Holdings{Numbers: []account.Number{
			{ID: "num_1", AccountID: "acc_1", Number: "+15550000001", Service: account.WhatsApp, Provider: account.ProviderSandbox, Enabled: true, CreatedAt: created},
			{ID: "num_2", AccountID: "acc_1", Number: "+15550000002", Service: account.Telegram, Provider: account.ProviderTelegram, Enabled: false, CreatedAt: created},
		},
			EmailAddresses: []account.EmailAddress{
				{ID: "eml_1", AccountID: "acc_1", LocalPart: "support", Domain: "acme.example", CreatedAt: created},
			}},
	}
	principal = accounts.Principal{AccountID: "acc_1", CredentialID: "cred_1"}
)

type testBundle struct {
	accounts *fakeAccounts
	// calls counts Overview calls.
	calls atomic.Int32
	// handler is the GraphQL handler without authentication in front.
	handler http.Handler
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	b := &testBundle{}
	b.accounts = &fakeAccounts{OverviewFn: func(_ context.Context, accountID string) (accounts.Overview, error) {
		b.calls.Add(1)
		if accountID != acme.ID {
			return accounts.Overview{}, failure.NotFound("account")
		}
		return overview, nil
	}}
	b.handler = graph.NewHandler(graph.NewResolver(graph.Deps{Accounts: b.accounts}))
	return b
}

// authenticated stands in for the REST authentication middleware: every
// request acts as p.
func authenticated(h http.Handler, p accounts.Principal) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(accounts.WithPrincipal(r.Context(), p)))
	})
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

// post sends query as a JSON POST and returns the raw body and its decoding.
func post(t *testing.T, h http.Handler, query string) (string, gqlResponse) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"query": query})
	require.NoError(t, err)
	req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return serve(t, h, req)
}

func serve(t *testing.T, h http.Handler, req *http.Request) (string, gqlResponse) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	raw := rec.Body.String()
	var resp gqlResponse
	require.NoError(t, json.Unmarshal([]byte(raw), &resp), "body: %s", raw)
	return raw, resp
}

func TestHandler(t *testing.T) {
	t.Parallel()

	t.Run("ReturnsTheCallersAccount", func(t *testing.T) {
		t.Parallel()
		b := setup(t)

		_, resp := post(t, authenticated(b.handler, principal), accountQuery)

		require.Empty(t, resp.Errors)
		require.JSONEq(t, `{"account": {
			"id": "acc_1",
			"name": "Acme",
			"numbers": [
				{"number": "+15550000001", "service": "WHATSAPP", "enabled": true},
				{"number": "+15550000002", "service": "TELEGRAM", "enabled": false}
			],
			"emailAddresses": [{"address": "support@acme.example"}]
		}}`, string(resp.Data))
		require.Equal(t, int32(1), b.calls.Load())
	})

	t.Run("EveryField", func(t *testing.T) {
		t.Parallel()
		b := setup(t)

		_, resp := post(t, authenticated(b.handler, principal), `{ account {
			id name createdAt
			numbers { id number service provider enabled createdAt }
			emailAddresses { id address createdAt }
		} }`)

		require.Empty(t, resp.Errors)
		require.JSONEq(t, `{"account": {
			"id": "acc_1", "name": "Acme", "createdAt": "2026-01-02T03:04:05.0000006Z",
			"numbers": [
				{"id": "num_1", "number": "+15550000001", "service": "WHATSAPP", "provider": "sandbox", "enabled": true, "createdAt": "2026-01-02T03:04:05.0000006Z"},
				{"id": "num_2", "number": "+15550000002", "service": "TELEGRAM", "provider": "telegram", "enabled": false, "createdAt": "2026-01-02T03:04:05.0000006Z"}
			],
			"emailAddresses": [{"id": "eml_1", "address": "support@acme.example", "createdAt": "2026-01-02T03:04:05.0000006Z"}]
		}}`, string(resp.Data))
		require.Equal(t, int32(1), b.calls.Load())
	})

	t.Run("OverGET", func(t *testing.T) {
		t.Parallel()
		b := setup(t)

		req := httptest.NewRequestWithContext(t.Context(), http.MethodGet,
			"/graphql?query="+url.QueryEscape(`{ account { name } }`), nil)
		_, resp := serve(t, authenticated(b.handler, principal), req)

		require.Empty(t, resp.Errors)
		require.JSONEq(t, `{"account": {"name": "Acme"}}`, string(resp.Data))
	})

	t.Run("WithoutPrincipalIsUnauthenticated", func(t *testing.T) {
		t.Parallel()
		b := setup(t)

		_, resp := post(t, b.handler, accountQuery)

		require.Len(t, resp.Errors, 1)
		require.Equal(t, "unauthenticated", resp.Errors[0].Extensions["code"])
		require.Equal(t, []any{"account"}, resp.Errors[0].Path)
		require.JSONEq(t, `null`, string(resp.Data))
		require.Zero(t, b.calls.Load())
	})

	t.Run("NotFoundKeepsItsCodeAndMessage", func(t *testing.T) {
		t.Parallel()
		b := setup(t)

		_, resp := post(t, authenticated(b.handler, accounts.Principal{AccountID: "acc_gone"}), accountQuery)

		require.Len(t, resp.Errors, 1)
		require.Equal(t, "account not found", resp.Errors[0].Message)
		require.Equal(t, map[string]any{"code": "not_found"}, resp.Errors[0].Extensions)
	})

	t.Run("InternalErrorIsHidden", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.accounts.OverviewFn = func(context.Context, string) (accounts.Overview, error) {
			return accounts.Overview{}, errors.New("dial tcp 10.0.0.7:5432: connection refused")
		}

		raw, resp := post(t, authenticated(b.handler, principal), accountQuery)

		require.Len(t, resp.Errors, 1)
		require.Equal(t, "internal server error", resp.Errors[0].Message)
		require.Equal(t, map[string]any{"code": "internal_error"}, resp.Errors[0].Extensions)
		require.NotContains(t, raw, "10.0.0.7")
		require.NotContains(t, raw, "connection refused")
	})

	t.Run("InternalFailureIsHidden", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.accounts.OverviewFn = func(context.Context, string) (accounts.Overview, error) {
			return accounts.Overview{}, &failure.Error{Kind: failure.KindInternal, Code: "db_down", Message: "replica lag on db-3"}
		}

		raw, resp := post(t, authenticated(b.handler, principal), accountQuery)

		require.Len(t, resp.Errors, 1)
		require.Equal(t, "internal server error", resp.Errors[0].Message)
		require.Equal(t, map[string]any{"code": "internal_error"}, resp.Errors[0].Extensions)
		require.NotContains(t, raw, "db-3")
	})

	t.Run("PanicIsAnInternalError", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.accounts.OverviewFn = func(context.Context, string) (accounts.Overview, error) {
			panic("secret state 42")
		}

		raw, resp := post(t, authenticated(b.handler, principal), accountQuery)

		require.Len(t, resp.Errors, 1)
		require.Equal(t, "internal server error", resp.Errors[0].Message)
		require.Equal(t, map[string]any{"code": "internal_error"}, resp.Errors[0].Extensions)
		require.NotContains(t, raw, "secret state")
	})

	t.Run("ValidationErrorsReachTheClient", func(t *testing.T) {
		t.Parallel()
		b := setup(t)

		_, resp := post(t, authenticated(b.handler, principal), `{ account { password } }`)

		require.Len(t, resp.Errors, 1)
		require.Contains(t, resp.Errors[0].Message, `Cannot query field "password" on type "Account"`)
		require.Equal(t, "GRAPHQL_VALIDATION_FAILED", resp.Errors[0].Extensions["code"])
		require.Zero(t, b.calls.Load())
	})

	t.Run("ComplexityIsLimited", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		var q strings.Builder
		q.WriteString("{")
		for i := range graph.MaxComplexity/2 + 1 {
			fmt.Fprintf(&q, " a%d: account { id }", i)
		}
		q.WriteString(" }")

		_, resp := post(t, authenticated(b.handler, principal), q.String())

		require.Len(t, resp.Errors, 1)
		require.Equal(t, "COMPLEXITY_LIMIT_EXCEEDED", resp.Errors[0].Extensions["code"])
		require.Zero(t, b.calls.Load())
	})

	t.Run("IntrospectionIsOn", func(t *testing.T) {
		t.Parallel()
		b := setup(t)

		_, resp := post(t, authenticated(b.handler, principal), `{ __type(name: "Service") { enumValues { name } } }`)

		require.Empty(t, resp.Errors)
		require.JSONEq(t, `{"__type": {"enumValues": [{"name": "WHATSAPP"}, {"name": "TELEGRAM"}, {"name": "WEB_UI"}]}}`, string(resp.Data))
	})
}

func TestModule(t *testing.T) {
	t.Parallel()

	var handler http.Handler
	app := fxtest.New(t,
		fx.NopLogger,
		graph.Module,
		fx.Provide(func() graph.Deps { return graph.Deps{Accounts: setup(t).accounts} }),
		fx.Invoke(fx.Annotate(func(h http.Handler) { handler = h }, fx.ParamTags(`name:"graphql"`))),
	)
	app.RequireStart()
	t.Cleanup(app.RequireStop)

	_, resp := post(t, authenticated(handler, principal), `{ account { name } }`)
	require.Empty(t, resp.Errors)
	require.JSONEq(t, `{"account": {"name": "Acme"}}`, string(resp.Data))
}

// NewHandler serves the account of whoever the authentication middleware in
// front of it put in the request context.
func ExampleNewHandler() {
	reader := &fakeAccounts{OverviewFn: func(context.Context, string) (accounts.Overview, error) {
		return accounts.Overview{Account: account.Account{ID: "acc_1", Name: "Acme"}}, nil
	}}
	h := graph.NewHandler(graph.NewResolver(graph.Deps{Accounts: reader}))

	req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(`{"query": "{ account { name numbers { number } } }"}`))
	req.Header.Set("Content-Type", "application/json")
	req = req.WithContext(accounts.WithPrincipal(req.Context(), accounts.Principal{AccountID: "acc_1"}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)

	body, _ := io.ReadAll(rec.Body)
	fmt.Println(string(body))
	// Output: {"data":{"account":{"name":"Acme","numbers":[]}}}
}

// A connection's selection counts once per item it may return, so a wide
// page of deep selections is refused before anything runs.
func TestConnectionsCountPerItem(t *testing.T) {
	t.Parallel()
	b := setup(t)
	q := `{ threads(first: 100) { nodes { messages(first: 100) { nodes { id } } } } }`

	_, resp := post(t, authenticated(b.handler, principal), q)

	require.Len(t, resp.Errors, 1)
	require.Equal(t, "COMPLEXITY_LIMIT_EXCEEDED", resp.Errors[0].Extensions["code"])
}

func TestDepthIsLimited(t *testing.T) {
	t.Parallel()
	b := setup(t)
	q := `{ message(id: "msg_x") { thread { messages(first: 1) { nodes { thread { messages(first: 1) { nodes { thread { messages(first: 1) { nodes { thread { id } } } } } } } } } } } }`

	_, resp := post(t, authenticated(b.handler, principal), q)

	require.Len(t, resp.Errors, 1)
	require.Equal(t, "DEPTH_LIMIT_EXCEEDED", resp.Errors[0].Extensions["code"])
	require.Contains(t, resp.Errors[0].Message, "the limit is 10")
}
