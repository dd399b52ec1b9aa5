package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/edge/rest/openapitest"
	"github.com/switchboard-dev/switchboard/adapters/store"
)

// TestTheKeyAloneOpensOnlyTheCronRoutes is an attacker who has an API key
// but not its secret, against the built server: "Authorization: Bearer
// <key>" is a full credential on the cron routes the interface defines,
// and nowhere else (not on the A1Cron routes below the same prefix). Every other operation of the OpenAPI document, GraphQL
// over HTTP and over a WebSocket (the key in the upgrade's headers or in
// connection_init, with or without the word Bearer), /mcp and the
// dashboard's sign-in refuse it.
func TestTheKeyAloneOpensOnlyTheCronRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite)
	acc := b.createAccount(t, "Acme")
	// Each refused request below is a failed authentication of this
	// client; none may be refused for being one too many.
	srv := b.serve(t, "--auth-failures-per-minute", "0")
	bearer := http.Header{"Authorization": {"Bearer " + acc.APIKey}}

	send := func(t *testing.T, method, path string, h http.Header, body string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header = h.Clone()
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		return res.StatusCode
	}

	t.Run("REST", func(t *testing.T) {
		param := regexp.MustCompile(`\{[^}]+\}`)
		doc := openapitest.Document(t)
		cron := 0
		for path, item := range doc.Paths.Map() {
			for method, op := range item.Operations() {
				if op.Security != nil && len(*op.Security) == 0 {
					continue // no credentials at all (health, provider callbacks)
				}
				concrete := param.ReplaceAllStringFunc(path, func(p string) string {
					if p == "{accountId}" || p == "{account_id}" {
						return acc.AccountID
					}
					return "x1"
				})
				body := ""
				if op.RequestBody != nil {
					body = "{}"
				}
				status := send(t, method, concrete, bearer, body)
				// The interface's cron routes (tag cron), not A1Cron's
				// under the same prefix, which take the key and secret.
				if slices.Contains(op.Tags, "cron") {
					cron++
					require.NotEqual(t, http.StatusUnauthorized, status, "%s %s takes a bearer key", method, path)
					continue
				}
				require.Equal(t, http.StatusUnauthorized, status, "%s %s with the key alone", method, path)
				// Nor as the key header without its secret.
				require.Equal(t, http.StatusUnauthorized,
					send(t, method, concrete, http.Header{"X-Api-Key": {acc.APIKey}}, body), "%s %s with X-API-Key alone", method, path)
			}
		}
		require.Equal(t, 8, cron, "the cron operations of the document")
	})

	t.Run("GraphQLOverHTTP", func(t *testing.T) {
		require.Equal(t, http.StatusUnauthorized, send(t, http.MethodPost, "/graphql", bearer, `{"query":"{ account { id } }"}`))
	})

	t.Run("MCP", func(t *testing.T) {
		h := bearer.Clone()
		h.Set("Accept", "application/json, text/event-stream")
		require.Equal(t, http.StatusUnauthorized, send(t, http.MethodPost, "/mcp", h,
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
	})

	t.Run("DashboardSignIn", func(t *testing.T) {
		form := url.Values{"api_key": {acc.APIKey}, "api_secret": {""}}
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/dashboard/sign-in", strings.NewReader(form.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", srv.URL)
		res, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		require.NoError(t, err)
		_ = res.Body.Close()
		require.NotEqual(t, http.StatusSeeOther, res.StatusCode, "signed in with the key alone")
		for _, c := range res.Cookies() {
			require.Empty(t, c.Value, "no session for the key alone: %s", c.Name)
		}
	})

	t.Run("GraphQLWebSocket", func(t *testing.T) {
		for name, attempt := range map[string]struct {
			header  http.Header
			payload any
		}{
			"BearerOnTheUpgrade":           {header: bearer, payload: map[string]any{}},
			"BearerInConnectionInit":       {payload: map[string]any{"Authorization": "Bearer " + acc.APIKey}},
			"BearerUnderHeaders":           {payload: map[string]any{"headers": map[string]any{"authorization": "Bearer " + acc.APIKey}}},
			"KeyWithoutSecret":             {payload: map[string]any{"X-API-Key": acc.APIKey}},
			"KeyOnTheUpgradeWithoutSecret": {header: http.Header{"X-Api-Key": {acc.APIKey}}, payload: map[string]any{}},
			"PayloadNotAnObject":           {payload: []any{acc.APIKey, "secret"}},
			"PayloadOfOneMebibyte":         {payload: map[string]any{"X-API-Key": acc.APIKey, "X-API-Secret": acc.APISecret, "pad": strings.Repeat("a", 1<<20)}},
		} {
			t.Run(name, func(t *testing.T) {
				requireSocketRefused(t, srv.URL, attempt.header, attempt.payload)
			})
		}
		// The key and its secret open a socket: the refusals above are not
		// of every socket.
		conn, first := openSocket(t, srv.URL, nil, map[string]any{"X-API-Key": acc.APIKey, "X-API-Secret": acc.APISecret})
		require.NoError(t, first.err)
		require.Equal(t, "connection_ack", first.Type)
		_ = conn.Close(websocket.StatusNormalClosure, "")
	})
}

// socketAnswer is the first message a graphql-transport-ws server sent,
// or the error that ended the socket instead.
type socketAnswer struct {
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
	err     error
}

// openSocket dials /graphql with header and sends connection_init with
// payload (any JSON value), then reads the server's first answer.
func openSocket(t *testing.T, base string, header http.Header, payload any) (*websocket.Conn, socketAnswer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/graphql", &websocket.DialOptions{
		Subprotocols: []string{"graphql-transport-ws"}, HTTPHeader: header,
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.CloseNow() })
	conn.SetReadLimit(1 << 16)
	raw, err := json.Marshal(payload)
	require.NoError(t, err)
	var init bytes.Buffer
	init.WriteString(`{"type":"connection_init","payload":`)
	init.Write(raw)
	init.WriteString(`}`)
	// A server that refuses a long message may close the socket while it
	// is still being written; what it answered is read below either way.
	_ = conn.Write(ctx, websocket.MessageText, init.Bytes())
	var first socketAnswer
	first.err = wsjson.Read(ctx, conn, &first)
	return conn, first
}

// requireSocketRefused requires the socket to be closed without an ack,
// as forbidden (4403) or, for a message too big to read, as such (1009);
// never with the normal closure that makes clients reconnect at once.
func requireSocketRefused(t *testing.T, base string, header http.Header, payload any) {
	t.Helper()
	conn, first := openSocket(t, base, header, payload)
	err := first.err
	if err == nil {
		// The legacy protocol's connection_error, then the close.
		require.NotEqual(t, "connection_ack", first.Type, "payload: %s", first.Payload)
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		_, _, err = conn.Read(ctx)
	}
	require.Error(t, err, "the server closes the socket without an ack")
	require.Contains(t, []websocket.StatusCode{4403, websocket.StatusMessageTooBig, 4400}, websocket.CloseStatus(err),
		"closed as refused: %v", err)
}
