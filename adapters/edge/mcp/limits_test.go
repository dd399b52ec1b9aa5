package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/bootstrap"
)

// answer is an HTTP answer read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// send sends a request to /mcp and reads its answer; it is safe to call
// from many goroutines (it reports failures as errors).
func (b *testBundle) send(method, host string, h http.Header, body []byte) (answer, error) {
	req, err := http.NewRequest(method, b.base+"/mcp", bytes.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	req.Header = h.Clone()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if host != "" {
		req.Host = host
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	return answer{status: res.StatusCode, header: res.Header, body: raw}, err
}

func (b *testBundle) postBody(t *testing.T, h http.Header, body []byte) answer {
	t.Helper()
	a, err := b.send(http.MethodPost, "", h, body)
	require.NoError(t, err)
	return a
}

// sendCalls is a JSON-RPC batch of n send_message calls from agentA to
// userA.
func sendCalls(t *testing.T, n int) []byte {
	t.Helper()
	calls := make([]json.RawMessage, n)
	for i := range calls {
		id, err := jsonrpc.MakeID(float64(i + 1))
		require.NoError(t, err)
		params, err := json.Marshal(sdk.CallToolParams{Name: "send_message", Arguments: map[string]any{
			"service": "whatsapp", "from": agentA, "to": userA, "text": fmt.Sprintf("batched %d", i)}})
		require.NoError(t, err)
		calls[i], err = jsonrpc.EncodeMessage(&jsonrpc.Request{ID: id, Method: "tools/call", Params: params})
		require.NoError(t, err)
	}
	raw, err := json.Marshal(calls)
	require.NoError(t, err)
	return raw
}

const batchRefusal = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"JSON-RPC batches are not accepted: send one message per request"}}`

// A POST whose body is a batch is refused before any of its calls runs,
// whatever MCP-Protocol-Version says (the SDK itself runs batches when it
// is absent or older than 2025-06-18), in a session or opening one; one
// call in one POST is served.
func TestBatchesAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite)
	_, thread := b.inbound(t, b.acme, userA, agentA, "Hi!")
	cs := b.connectWith(t, b.acme, clientOptions{noEventStream: true})
	batch := sendCalls(t, 60)
	for _, version := range []string{"", "2025-03-26", "2025-06-18", cs.InitializeResult().ProtocolVersion} {
		h := headersOf(b.acme)
		h.Set("Mcp-Session-Id", cs.ID())
		if version != "" {
			h.Set("Mcp-Protocol-Version", version)
		}
		a := b.postBody(t, h, batch)
		require.Equal(t, http.StatusBadRequest, a.status, "version %q: %s", version, a.body)
		require.JSONEq(t, batchRefusal, string(a.body), "version %q", version)
	}
	a := b.postBody(t, headersOf(b.acme), sendCalls(t, 1))
	require.Equal(t, http.StatusBadRequest, a.status, "a batch without a session: %s", a.body)
	require.JSONEq(t, batchRefusal, string(a.body))
	require.Equal(t, 1, b.threadMessages(t, b.acme, thread), "no batched message was queued")

	var sent struct{}
	ok(t, cs, "send_message", map[string]any{"service": "whatsapp", "from": agentA, "to": userA, "text": "one"}, &sent)
	require.Equal(t, 2, b.threadMessages(t, b.acme, thread))
}

// Each tool call and resource read spends one token of the account's
// budget, the one REST spends, and a POST carrying one call spends one
// in all. A refused call is a rate_limited tool error that sends
// nothing; a refused read a protocol error saying the same.
func TestCallsSpendOneTokenEach(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		const burst = 10
		b := setupWith(t, dialect, appOptions{configure: func(c *bootstrap.Config) {
			c.Limits.RatePerSecond, c.Limits.RateBurst = 0.0001, burst
		}})
		// REST's inbound spends one token; the client's connection three
		// (its server/discover probe, initialize, initialized); a refused
		// batch one.
		_, thread := b.inbound(t, b.acme, userA, agentA, "Hi!")
		cs := b.connectWith(t, b.acme, clientOptions{noEventStream: true})
		h := headersOf(b.acme)
		h.Set("Mcp-Session-Id", cs.ID())
		refusedBatch := b.postBody(t, h, sendCalls(t, 3))
		require.Equal(t, http.StatusBadRequest, refusedBatch.status)
		require.Equal(t, `"account";q=10;w=100000`, refusedBatch.header.Get("RateLimit-Policy"), "as on every route")
		sent := 0
		var refused *sdk.CallToolResult
		for refused == nil {
			res := call(t, cs, "send_message", map[string]any{"service": "whatsapp", "from": agentA, "to": userA, "text": "hello"})
			if res.IsError {
				refused = res
				break
			}
			sent++
			require.LessOrEqual(t, sent, burst, "the budget is never refused")
		}
		require.Equal(t, burst-5, sent, "each call spent one token")
		raw, err := json.Marshal(refused.StructuredContent)
		require.NoError(t, err)
		var e toolError
		require.NoError(t, json.Unmarshal(raw, &e))
		require.Equal(t, "rate_limited", e.Code, "%s", raw)
		require.Positive(t, e.RetryAfterSeconds)
		require.Equal(t, 1+sent, b.threadMessages(t, b.acme, thread), "the refused call sent nothing")

		_, err = cs.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: "switchboard://threads/" + thread})
		var rpcErr *jsonrpc.Error
		require.ErrorAs(t, err, &rpcErr)
		require.Equal(t, int64(-32000), rpcErr.Code, "%v", err)
		require.True(t, strings.HasPrefix(rpcErr.Message, "rate_limited: "), rpcErr.Message)
		var data toolError
		require.NoError(t, json.Unmarshal(rpcErr.Data, &data), "%s", rpcErr.Data)
		require.Equal(t, "rate_limited", data.Code)

		status, body := b.rest(t, b.acme, http.MethodGet, "/v1/accounts/"+b.acme.accountID, nil)
		require.Equal(t, http.StatusTooManyRequests, status, "one budget with REST: %s", body)
		other := b.connect(t, b.other)
		var list struct{}
		ok(t, other, "list_threads", map[string]any{}, &list)
	})
}

// initializeBody opens a session.
func initializeBody(t *testing.T) []byte {
	t.Helper()
	id, err := jsonrpc.MakeID(float64(1))
	require.NoError(t, err)
	raw, err := jsonrpc.EncodeMessage(&jsonrpc.Request{ID: id, Method: "initialize",
		Params: json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"burst","version":"1"}}`)})
	require.NoError(t, err)
	return raw
}

// Initializes that arrive at once never leave more sessions open than an
// account may hold; the refused ones hold no place, and a session that
// ends gives its place back. Every request starts (its handler reads its
// body, asking for it with Expect: 100-continue) before any body is
// sent, so that all of them are in the handler at once.
func TestConcurrentInitializesStayWithinTheCap(t *testing.T) {
	t.Parallel()
	const limit, attempts = 5, 150
	b := setupWith(t, store.SQLite, appOptions{configure: func(c *bootstrap.Config) { c.MCP.MaxSessionsPerAccount = limit }})
	body := initializeBody(t)
	client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Minute}}
	var (
		wg       sync.WaitGroup
		started  sync.WaitGroup
		mu       sync.Mutex
		sessions []string
		refused  int
		errs     []error
	)
	release := make(chan struct{})
	started.Add(attempts)
	for range attempts {
		wg.Go(func() {
			a, err := b.initializeWhenReleased(client, body, started.Done, release)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				errs = append(errs, err)
			case a.status == http.StatusOK && a.header.Get("Mcp-Session-Id") != "":
				sessions = append(sessions, a.header.Get("Mcp-Session-Id"))
			case a.status == http.StatusTooManyRequests && bytes.Contains(a.body, []byte(`"too_many_sessions"`)):
				refused++
			default:
				errs = append(errs, fmt.Errorf("status %d: %s", a.status, a.body))
			}
		})
	}
	started.Wait()
	close(release)
	wg.Wait()
	require.Empty(t, errs)
	require.Equal(t, limit, len(sessions), "as many sessions as the cap")
	require.Equal(t, attempts-limit, refused)
	require.Equal(t, limit, b.mcp.HeldSessions(b.acme.accountID), "the refused requests hold no session")

	h := headersOf(b.acme)
	h.Set("Mcp-Session-Id", sessions[0])
	a, err := b.send(http.MethodDelete, "", h, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, a.status, "%s", a.body)
	require.Eventually(t, func() bool { return b.mcp.HeldSessions(b.acme.accountID) == limit-1 },
		10*time.Second, 10*time.Millisecond, "the ended session is no longer held")
	a = b.postBody(t, headersOf(b.acme), body)
	require.Equal(t, http.StatusOK, a.status, "the ended session gave its place back: %s", a.body)
	a = b.postBody(t, headersOf(b.acme), body)
	require.Equal(t, http.StatusTooManyRequests, a.status, "%s", a.body)
	other := b.postBody(t, headersOf(b.other), body)
	require.Equal(t, http.StatusOK, other.status, "another account has places of its own: %s", other.body)
}

// initializeWhenReleased posts an initialize whose body is sent only once
// release is closed, and calls started (once) when the server asks for
// the body or the request ends without it.
func (b *testBundle) initializeWhenReleased(client *http.Client, body []byte, started func(), release <-chan struct{}) (answer, error) {
	once := sync.OnceFunc(started)
	defer once()
	pr, pw := io.Pipe()
	go func() {
		<-release
		_, _ = pw.Write(body)
		_ = pw.Close()
	}()
	defer pr.Close()
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{Got100Continue: once})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.base+"/mcp", pr)
	if err != nil {
		return answer{}, err
	}
	req.ContentLength = int64(len(body))
	req.Header = headersOf(b.acme)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Expect", "100-continue")
	res, err := client.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	return answer{status: res.StatusCode, header: res.Header, body: raw}, err
}

// A request with an Origin header is served only when the origin is
// allowed (none by default); one without is. On a loopback connection,
// the Host must be a loopback name or an allowed host.
func TestOriginAndHost(t *testing.T) {
	t.Parallel()
	b := setupWith(t, store.SQLite, appOptions{configure: func(c *bootstrap.Config) {
		c.MCP.AllowedOrigins = []string{"https://app.example.com"}
		c.MCP.AllowedHosts = []string{"mcp.example.com"}
	}})
	body, err := jsonrpc.EncodeMessage(ping(t))
	require.NoError(t, err)
	port := b.base[strings.LastIndex(b.base, ":"):]
	for _, tc := range []struct {
		origin, host string
		allowed      bool
	}{
		{allowed: true},
		{origin: "https://app.example.com", allowed: true},
		{origin: "HTTPS://App.Example.com", allowed: true},
		{origin: "https://evil.example"},
		{origin: "https://app.example.com:8443"},
		{origin: "http://app.example.com"},
		{origin: "null"},
		{host: "localhost" + port, allowed: true},
		{host: "127.0.0.1", allowed: true},
		{host: "[::1]" + port, allowed: true},
		{host: "MCP.example.com" + port, allowed: true},
		{host: "evil.example" + port},
		{host: "evil.example"},
		{host: "localhost.evil.example" + port},
	} {
		h := headersOf(b.acme)
		if tc.origin != "" {
			h.Set("Origin", tc.origin)
		}
		for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
			a, err := b.send(method, tc.host, h, body)
			require.NoError(t, err)
			if tc.allowed {
				require.NotEqual(t, http.StatusForbidden, a.status, "%s with origin %q, host %q: %s", method, tc.origin, tc.host, a.body)
				continue
			}
			require.Equal(t, http.StatusForbidden, a.status, "%s with origin %q, host %q: %s", method, tc.origin, tc.host, a.body)
			var e struct {
				ID    any           `json:"id"`
				Error jsonrpc.Error `json:"error"`
			}
			require.NoError(t, json.Unmarshal(a.body, &e), "%s", a.body)
			require.Nil(t, e.ID)
			require.Equal(t, int64(jsonrpc.CodeInvalidRequest), e.Error.Code)
		}
	}

	d := setup(t, store.SQLite)
	h := headersOf(d.acme)
	h.Set("Origin", d.base)
	a, err := d.send(http.MethodPost, "", h, body)
	require.NoError(t, err)
	require.Equal(t, http.StatusForbidden, a.status, "by default even the server's own origin is refused: %s", a.body)
}
