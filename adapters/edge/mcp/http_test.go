package mcp_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/bootstrap"
)

// post sends one JSON-RPC request to /mcp with the given headers, as a
// client of the protocol would, and returns the response.
func (b *testBundle) post(t *testing.T, h http.Header, msg jsonrpc.Message) (*http.Response, []byte) {
	t.Helper()
	body, err := jsonrpc.EncodeMessage(msg)
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, b.base+"/mcp", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header = h.Clone()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, raw
}

func ping(t *testing.T) jsonrpc.Message {
	t.Helper()
	id, err := jsonrpc.MakeID(float64(1))
	require.NoError(t, err)
	return &jsonrpc.Request{ID: id, Method: "ping"}
}

func headersOf(c credentials) http.Header {
	return http.Header{"X-Api-Key": {c.key}, "X-Api-Secret": {c.secret}}
}

// restError is REST's flat error body.
type restError struct {
	Detail  string `json:"detail"`
	Status  string `json:"status"`
	Message string `json:"message"`
	Code    string `json:"code"`
}

// /mcp takes the REST credentials, answers their absence or a wrong
// secret with REST's 401, and counts failures against the same budget of
// failed authentications as REST.
func TestAuthentication(t *testing.T) {
	t.Parallel()
	b := setupWith(t, store.SQLite, appOptions{configure: func(c *bootstrap.Config) { c.Limits.AuthFailuresPerMinute = 3 }})
	wrong := b.acme
	wrong.secret = "sws_wrong"
	for _, h := range []http.Header{{}, headersOf(wrong), {"X-Api-Key": {b.acme.key}}} {
		res, raw := b.post(t, h, ping(t))
		require.Equal(t, http.StatusUnauthorized, res.StatusCode, "body: %s", raw)
		var e restError
		require.NoError(t, json.Unmarshal(raw, &e), "body: %s", raw)
		require.Equal(t, restError{Detail: "missing or invalid API credentials", Status: "error", Message: "missing or invalid API credentials", Code: "unauthorized"}, e)
		require.NotEmpty(t, res.Header.Get("X-Request-Id"))
	}
	// The three failures spent the address's budget: REST refuses it now,
	// even with the right credentials.
	status, raw := b.rest(t, b.acme, http.MethodGet, "/v1/accounts/"+b.acme.accountID, nil)
	require.Equal(t, http.StatusTooManyRequests, status, "body: %s", raw)
	_, err := b.dial(t.Context(), b.acme, clientOptions{})
	require.ErrorContains(t, err, "Too Many Requests")
}

// A client with a wrong secret cannot open a session; the dashboard's
// session cookie does not stand in for the key headers.
func TestClientWithWrongCredentials(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite)
	wrong := b.acme
	wrong.secret = "sws_wrong"
	_, err := b.dial(t.Context(), wrong, clientOptions{})
	require.ErrorContains(t, err, "Unauthorized")

	res, _ := b.post(t, http.Header{"Cookie": {"sb_session=anything"}, "Origin": {b.base}}, ping(t))
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
}

// MCP requests and REST requests spend one budget per account.
func TestRateLimitSharedWithREST(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupWith(t, dialect, appOptions{configure: func(c *bootstrap.Config) {
			c.Limits.RatePerSecond, c.Limits.RateBurst = 0.01, 20
		}})
		cs := b.connect(t, b.acme)
		var list struct {
			TotalCount int `json:"total_count"`
		}
		ok(t, cs, "list_threads", map[string]any{}, &list)

		restAnswered := 0
		for range 30 {
			status, _ := b.rest(t, b.acme, http.MethodGet, "/v1/accounts/"+b.acme.accountID, nil)
			if status == http.StatusTooManyRequests {
				break
			}
			require.Equal(t, http.StatusOK, status)
			restAnswered++
		}
		require.Less(t, restAnswered, 19, "MCP's requests spent some of the burst of 20")
		e := fails(t, cs, "list_threads", map[string]any{})
		require.Equal(t, "rate_limited", e.Code, "REST spent the rest of the budget")

		other := b.connect(t, b.other)
		ok(t, other, "list_threads", map[string]any{}, &list)
	})
}

// Each MCP HTTP request is logged and counted like a REST request, with
// its request id and account.
func TestRequestsAreLogged(t *testing.T) {
	t.Parallel()
	logs := &lines{}
	b := setupWith(t, store.SQLite, appOptions{extra: []fx.Option{fx.Decorate(func() *slog.Logger {
		return slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})}})
	cs := b.connect(t, b.acme)
	var list struct {
		TotalCount int `json:"total_count"`
	}
	ok(t, cs, "list_threads", map[string]any{}, &list)

	var mcpLines []map[string]any
	for _, l := range logs.all() {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &rec))
		if rec["msg"] == "request" && rec["route"] == "/mcp" {
			mcpLines = append(mcpLines, rec)
		}
	}
	require.GreaterOrEqual(t, len(mcpLines), 2, "initialize and the call at least")
	for _, rec := range mcpLines {
		require.Equal(t, b.acme.accountID, rec["account_id"])
		require.NotEmpty(t, rec["request_id"])
		require.Equal(t, "/mcp", rec["path"])
	}

	res, err := http.Get(b.base + "/metrics")
	require.NoError(t, err)
	defer res.Body.Close()
	metrics, _ := io.ReadAll(res.Body)
	require.Contains(t, string(metrics), `switchboard_http_requests_total{code="200",method="POST",route="/mcp"}`)
}

// A session answers its own account only: another account's credentials
// with its id are not found.
func TestSessionsBelongToTheirAccount(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite)
	cs := b.connect(t, b.acme)
	h := headersOf(b.other)
	h.Set("Mcp-Session-Id", cs.ID())
	h.Set("Mcp-Protocol-Version", cs.InitializeResult().ProtocolVersion)
	res, raw := b.post(t, h, ping(t))
	require.Equal(t, http.StatusNotFound, res.StatusCode, "body: %s", raw)
	var e restError
	require.NoError(t, json.Unmarshal(raw, &e))
	require.Equal(t, "session_not_found", e.Code)

	h = headersOf(b.acme)
	h.Set("Mcp-Session-Id", cs.ID())
	h.Set("Mcp-Protocol-Version", cs.InitializeResult().ProtocolVersion)
	res, raw = b.post(t, h, ping(t))
	require.Equal(t, http.StatusOK, res.StatusCode, "body: %s", raw)
}

// lines is a log sink a test reads back.
type lines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Split(strings.TrimSpace(l.buf.String()), "\n")
}
