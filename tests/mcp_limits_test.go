package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
)

// mcpHeaders adds an account's credentials to every request of an MCP
// client.
type mcpHeaders struct {
	acct createdAccount
	next http.RoundTripper
}

func (h mcpHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-API-Key", h.acct.APIKey)
	r.Header.Set("X-API-Secret", h.acct.APISecret)
	return h.next.RoundTrip(r)
}

// connectMCP opens an MCP session of acct with the official Go SDK's
// client, without the session's event stream (a GET), so that the
// client sends only the requests the test makes.
func connectMCP(t *testing.T, p *serverProc, acct createdAccount) *sdk.ClientSession {
	t.Helper()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, nil).Connect(t.Context(), &sdk.StreamableClientTransport{
		Endpoint: p.URL + "/mcp", HTTPClient: &http.Client{Transport: mcpHeaders{acct: acct, next: http.DefaultTransport}},
		MaxRetries: -1, DisableStandaloneSSE: true,
	}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// mcpAnswer is an HTTP answer of /mcp, read whole.
type mcpAnswer struct {
	status int
	header http.Header
	body   []byte
}

// postMCP posts body to /mcp as acct with extra headers (name, value, …).
func postMCP(t *testing.T, p *serverProc, acct createdAccount, body []byte, headers ...string) mcpAnswer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, p.URL+"/mcp", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-API-Key", acct.APIKey)
	req.Header.Set("X-API-Secret", acct.APISecret)
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			req.Host = headers[i+1]
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return mcpAnswer{status: res.StatusCode, header: res.Header, body: raw}
}

// sendMessageBatch is a JSON-RPC batch of n send_message calls.
func sendMessageBatch(t *testing.T, n int, from, to string) []byte {
	t.Helper()
	calls := make([]json.RawMessage, n)
	for i := range calls {
		id, err := jsonrpc.MakeID(float64(i + 1))
		require.NoError(t, err)
		params, err := json.Marshal(map[string]any{"name": "send_message", "arguments": map[string]any{
			"service": "whatsapp", "from": from, "to": to, "text": "b" + strconv.Itoa(i)}})
		require.NoError(t, err)
		calls[i], err = jsonrpc.EncodeMessage(&jsonrpc.Request{ID: id, Method: "tools/call", Params: params})
		require.NoError(t, err)
	}
	raw, err := json.Marshal(calls)
	require.NoError(t, err)
	return raw
}

// threadMessages lists a thread's messages (up to 100) over REST.
func threadMessages(t *testing.T, p *serverProc, acct createdAccount, threadID string) []any {
	t.Helper()
	r := p.client(t).Do(http.MethodGet, "/v1/messages/threads/"+acct.AccountID+"/get-messages/"+threadID+"?limit=100", nil, auth(acct.APIKey, acct.APISecret)...)
	require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
	return r.JSON(t)["data"].([]any)
}

// startConversation has user write to agent over REST and returns the
// thread.
func startConversation(t *testing.T, p *serverProc, acct createdAccount, user, agent string) string {
	t.Helper()
	r := p.client(t).Do(http.MethodPost, "/v1/sandbox/"+acct.AccountID+"/inbound",
		map[string]any{"service": "whatsapp", "from": user, "to": agent, "message": "Hi!", "sender_name": "Ann"},
		auth(acct.APIKey, acct.APISecret)...)
	require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
	return r.JSON(t)["thread_id"].(string)
}

const mcpBatchRefusal = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"JSON-RPC batches are not accepted: send one message per request"}}`

// A POST whose body is a JSON-RPC batch is refused before any call in it
// runs, without MCP-Protocol-Version (with which the SDK alone runs
// batches) and with it: 5,000 calls without a session, 60 in one. None of
// their messages is queued.
func TestMCPBatchesAreRefused(t *testing.T) {
	t.Parallel()
	const agent, user = "+14155550100", "+14155550111"
	b := setup(t, store.SQLite)
	acct := b.createAccount(t, "Acme")
	b.addNumber(t, acct.AccountID, agent)
	p := b.serve(t, "--max-body-bytes", strconv.Itoa(8<<20))
	thread := startConversation(t, p, acct, user, agent)

	big := sendMessageBatch(t, 5000, agent, user)
	a := postMCP(t, p, acct, big)
	require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
	require.JSONEq(t, mcpBatchRefusal, string(a.body))

	cs := connectMCP(t, p, acct)
	for _, version := range []string{"", "2025-03-26", cs.InitializeResult().ProtocolVersion} {
		headers := []string{"Mcp-Session-Id", cs.ID()}
		if version != "" {
			headers = append(headers, "Mcp-Protocol-Version", version)
		}
		a := postMCP(t, p, acct, sendMessageBatch(t, 60, agent, user), headers...)
		require.Equal(t, http.StatusBadRequest, a.status, "version %q: %.300s", version, a.body)
		require.JSONEq(t, mcpBatchRefusal, string(a.body))
	}
	require.Len(t, threadMessages(t, p, acct, thread), 1, "no batched message was queued")

	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "send_message", Arguments: map[string]any{
		"service": "whatsapp", "from": agent, "to": user, "text": "one at a time"}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	require.Len(t, threadMessages(t, p, acct, thread), 2)
}

// Each tool call spends one token of the account's request budget, the
// one REST spends: over one session, sequential calls are refused once
// the budget is spent, with a rate_limited tool error that sends nothing,
// and REST is refused too.
func TestMCPCallsSpendTheAccountsRateLimit(t *testing.T) {
	t.Parallel()
	const agent, user, burst = "+14155550100", "+14155550111", 10
	b := setup(t, store.SQLite)
	acct := b.createAccount(t, "Acme")
	b.addNumber(t, acct.AccountID, agent)
	// A token every 5 s: the calls below take far less.
	p := b.serve(t, "--rate-limit", "0.2", "--rate-burst", strconv.Itoa(burst))
	thread := startConversation(t, p, acct, user, agent) // one token
	cs := connectMCP(t, p, acct)                         // three: server/discover, initialize, initialized

	sent := 0
	var refused *sdk.CallToolResult
	for refused == nil {
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "send_message", Arguments: map[string]any{
			"service": "whatsapp", "from": agent, "to": user, "text": "call " + strconv.Itoa(sent)}})
		require.NoError(t, err, "a refused call is a tool result, not a transport error")
		if res.IsError {
			refused = res
			break
		}
		sent++
		require.LessOrEqual(t, sent, burst)
	}
	require.Equal(t, burst-4, sent, "each call spent one token")
	raw, err := json.Marshal(refused.StructuredContent)
	require.NoError(t, err)
	var e struct {
		Code              string `json:"code"`
		RetryAfterSeconds int    `json:"retry_after_seconds"`
	}
	require.NoError(t, json.Unmarshal(raw, &e))
	require.Equal(t, "rate_limited", e.Code, "%s", raw)
	require.Positive(t, e.RetryAfterSeconds)

	r := p.client(t).Do(http.MethodGet, "/v1/accounts/"+acct.AccountID, nil, auth(acct.APIKey, acct.APISecret)...)
	require.Equal(t, http.StatusTooManyRequests, r.StatusCode, "one budget with REST: %s", r.Body)

	// Once a token is back, the thread shows the sends and not the
	// refused one.
	time.Sleep(time.Duration(e.RetryAfterSeconds) * time.Second)
	require.Len(t, threadMessages(t, p, acct, thread), 1+sent)
}

// initializeWhenReleased posts an initialize whose body is sent only
// once release is closed; started is called (once) when the server asks
// for the body (Expect: 100-continue) or the request ends without it.
func initializeWhenReleased(p *serverProc, acct createdAccount, client *http.Client, started func(), release <-chan struct{}) (mcpAnswer, error) {
	once := sync.OnceFunc(started)
	defer once()
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"burst","version":"1"}}}`)
	pr, pw := io.Pipe()
	defer pr.Close()
	go func() {
		<-release
		_, _ = pw.Write(body)
		_ = pw.Close()
	}()
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{Got100Continue: once})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL+"/mcp", pr)
	if err != nil {
		return mcpAnswer{}, err
	}
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Expect", "100-continue")
	req.Header.Set("X-API-Key", acct.APIKey)
	req.Header.Set("X-API-Secret", acct.APISecret)
	res, err := client.Do(req)
	if err != nil {
		return mcpAnswer{}, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	return mcpAnswer{status: res.StatusCode, header: res.Header, body: raw}, err
}

// 150 initializes in flight at once (every one in the server before any
// body is sent) open no more sessions than --mcp-max-sessions-per-account;
// the others are refused too_many_sessions.
func TestMCPConcurrentInitializesStayWithinTheCap(t *testing.T) {
	t.Parallel()
	const limit, attempts = 3, 150
	b := setup(t, store.SQLite)
	acct := b.createAccount(t, "Acme")
	p := b.serve(t, "--mcp-max-sessions-per-account", strconv.Itoa(limit))
	client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Minute}}
	var (
		wg, started       sync.WaitGroup
		mu                sync.Mutex
		opened, refusedTo int
		errs              []error
	)
	release := make(chan struct{})
	started.Add(attempts)
	for range attempts {
		wg.Go(func() {
			a, err := initializeWhenReleased(p, acct, client, started.Done, release)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				errs = append(errs, err)
			case a.status == http.StatusOK && a.header.Get("Mcp-Session-Id") != "":
				opened++
			case a.status == http.StatusTooManyRequests && bytes.Contains(a.body, []byte(`"too_many_sessions"`)):
				refusedTo++
			default:
				errs = append(errs, fmt.Errorf("status %d: %s", a.status, a.body))
			}
		})
	}
	started.Wait()
	close(release)
	wg.Wait()
	require.Empty(t, errs)
	require.Equal(t, limit, opened, "as many sessions as the cap")
	require.Equal(t, attempts-limit, refusedTo)
}

// A request to /mcp with an Origin header is refused 403 unless
// --mcp-allowed-origins lists the origin (nothing by default); a request
// without one is served. On the loopback listener, a Host that is not a
// loopback name is refused too.
func TestMCPOriginAndHost(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite)
	acct := b.createAccount(t, "Acme")
	ping := []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	refusedAs := func(t *testing.T, a mcpAnswer) {
		t.Helper()
		require.Equal(t, http.StatusForbidden, a.status, "%s", a.body)
		var e struct {
			ID    any `json:"id"`
			Error struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(a.body, &e), "%s", a.body)
		require.Nil(t, e.ID)
		require.Equal(t, -32600, e.Error.Code)
	}

	p := b.serve(t)
	refusedAs(t, postMCP(t, p, acct, ping, "Origin", p.URL))
	refusedAs(t, postMCP(t, p, acct, ping, "Host", "rebound.example"+p.URL[strings.LastIndex(p.URL, ":"):]))
	require.Equal(t, http.StatusOK, postMCP(t, p, acct, ping).status)
	require.Equal(t, http.StatusOK, postMCP(t, p, acct, ping, "Host", "localhost").status)
	p.stop(t)

	allowed := startServer(t, append([]string{"SWITCHBOARD_MCP_ALLOWED_ORIGINS=https://app.example.com, http://localhost:3000"}, b.env...), "--database-url", b.dbURL)
	require.Equal(t, http.StatusOK, postMCP(t, allowed, acct, ping, "Origin", "https://app.example.com").status)
	require.Equal(t, http.StatusOK, postMCP(t, allowed, acct, ping, "Origin", "http://localhost:3000").status)
	refusedAs(t, postMCP(t, allowed, acct, ping, "Origin", "https://evil.example"))
}
