// The MCP adapter's tests run the app as bootstrap assembles it (store,
// use cases, job runner, REST authentication in front of /mcp), listening
// on 127.0.0.1, against a fresh database of each dialect, and talk to it
// with the Go SDK's client over Streamable HTTP.
package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/adapters/edge/mcp"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/application/accounts"
	appemail "github.com/switchboard-dev/switchboard/application/email"
	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/bootstrap"
)

// The agent numbers: the first account has a WhatsApp number; the other
// account has one too.
const (
	agentA     = "+14155550100"
	agentOther = "+14155550199"
	userA      = "+14155550111"
	userB      = "+14155550112"
)

// credentials authenticate as one account.
type credentials struct {
	accountID   string
	key, secret string
}

// testBundle is a running app and two accounts.
type testBundle struct {
	cfg  bootstrap.Config
	base string
	db   *store.DB
	acc  *accounts.Service
	mcp  *mcp.Handler
	// threads reads threads past the API and its rate limit.
	threads *appmessaging.Reader
	// email receives email as the SMTP listener hands it over.
	email *appemail.Service
	// stop stops the app (once; the test's cleanup stops it otherwise).
	stop  func()
	acme  credentials
	other credentials
}

// appOptions vary the app under test.
type appOptions struct {
	configure func(*bootstrap.Config)
	// extra options join the app (fx.Decorate).
	extra []fx.Option
}

func setup(t *testing.T, dialect store.Dialect) *testBundle {
	t.Helper()
	return setupWith(t, dialect, appOptions{})
}

func setupWith(t *testing.T, dialect store.Dialect, opts appOptions) *testBundle {
	t.Helper()
	cfg := bootstrap.Defaults()
	cfg.Addr = "127.0.0.1:0"
	cfg.DatabaseURL = dbtest.URL(t, dialect)
	cfg.SecretKey = strings.Repeat("ab", 32)
	cfg.LogLevel = 12 // quiet
	cfg.Limits = edge.Limits{MaxBodyBytes: 1 << 20, RequestTimeout: 10 * time.Second}
	cfg.AllowPrivateURLs = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	if opts.configure != nil {
		opts.configure(&cfg)
	}
	b := startApp(t, cfg, opts.extra...)

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
	b.acme = newAccount("Acme", accounts.NumberInput{Number: agentA, Service: "whatsapp"})
	b.other = newAccount("Other", accounts.NumberInput{Number: agentOther, Service: "whatsapp"})
	return b
}

// startApp runs the app configured by cfg.
func startApp(t *testing.T, cfg bootstrap.Config, extra ...fx.Option) *testBundle {
	t.Helper()
	b := &testBundle{cfg: cfg}
	var ln *edge.Listener
	app := fxtest.New(t, append([]fx.Option{bootstrap.Options(cfg), fx.NopLogger, fx.Populate(&ln, &b.acc, &b.db, &b.mcp, &b.threads, &b.email)}, extra...)...)
	app.RequireStart()
	b.stop = sync.OnceFunc(app.RequireStop)
	t.Cleanup(b.stop)
	b.base = "http://" + ln.Addr.String()
	return b
}

// replica starts another app on b's database, as a second replica of the
// same deployment, sharing its accounts.
func (b *testBundle) replica(t *testing.T) *testBundle {
	t.Helper()
	r := startApp(t, b.cfg)
	r.acme, r.other = b.acme, b.other
	return r
}

// withHeaders adds the credentials to every request of an MCP client.
type withHeaders struct {
	c    credentials
	next http.RoundTripper
}

func (h withHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-API-Key", h.c.key)
	r.Header.Set("X-API-Secret", h.c.secret)
	return h.next.RoundTrip(r)
}

// clientOptions vary a client.
type clientOptions struct {
	sdk.ClientOptions
	// transport, when set, carries the client's HTTP requests.
	transport http.RoundTripper
	// noEventStream leaves out the session's event stream (a GET), so
	// that the client sends only the requests the test makes.
	noEventStream bool
}

// connect opens an MCP session as c.
func (b *testBundle) connect(t *testing.T, c credentials) *sdk.ClientSession {
	t.Helper()
	return b.connectWith(t, c, clientOptions{})
}

func (b *testBundle) connectWith(t *testing.T, c credentials, opts clientOptions) *sdk.ClientSession {
	t.Helper()
	cs, err := b.dial(t.Context(), c, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func (b *testBundle) dial(ctx context.Context, c credentials, opts clientOptions) (*sdk.ClientSession, error) {
	next := opts.transport
	if next == nil {
		next = http.DefaultTransport
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "switchboard-test", Version: "1"}, &opts.ClientOptions)
	return client.Connect(ctx, &sdk.StreamableClientTransport{
		Endpoint: b.base + "/mcp", HTTPClient: &http.Client{Transport: withHeaders{c: c, next: next}}, MaxRetries: -1,
		DisableStandaloneSSE: opts.noEventStream,
	}, nil)
}

// call calls a tool, which must answer (successfully or with a tool
// error), and returns its result.
func call(t *testing.T, cs *sdk.ClientSession, name string, args any) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, "call %s", name)
	return res
}

// ok calls a tool that must succeed and decodes its structured content
// into out.
func ok(t *testing.T, cs *sdk.ClientSession, name string, args any, out any) {
	t.Helper()
	res := call(t, cs, name, args)
	require.False(t, res.IsError, "%s failed: %s", name, text(res))
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, out), "structured content: %s", raw)
	require.JSONEq(t, string(raw), text(res), "the text is the structured content as JSON")
}

// toolError is a failed call's structured content.
type toolError struct {
	Status  string `json:"status"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Fields  []struct {
		Field   string `json:"field"`
		Message string `json:"message"`
		Type    string `json:"type"`
	} `json:"fields"`
	RetryAfterSeconds int `json:"retry_after_seconds"`
}

// fails calls a tool that must fail with a tool error (never a protocol
// error) and returns it, checking that its text says the same.
func fails(t *testing.T, cs *sdk.ClientSession, name string, args any) toolError {
	t.Helper()
	res := call(t, cs, name, args)
	require.True(t, res.IsError, "%s must fail: %s", name, text(res))
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var e toolError
	require.NoError(t, json.Unmarshal(raw, &e), "structured content: %s", raw)
	require.Equal(t, "error", e.Status)
	require.NotEmpty(t, e.Code)
	require.JSONEq(t, string(raw), text(res), "the text is the structured content as JSON")
	return e
}

func text(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// rest calls the REST API as c and returns the status and body.
func (b *testBundle) rest(t *testing.T, c credentials, method, path string, body any) (int, []byte) {
	t.Helper()
	var reader io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		require.NoError(t, err)
		reader = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, b.base+path, reader)
	require.NoError(t, err)
	req.Header.Set("X-API-Key", c.key)
	req.Header.Set("X-API-Secret", c.secret)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, raw
}

// inbound delivers a sandbox message from a user to an agent number over
// REST and returns its message and thread ids.
func (b *testBundle) inbound(t *testing.T, c credentials, from, to, text string) (messageID, threadID string) {
	t.Helper()
	status, raw := b.rest(t, c, http.MethodPost, "/v1/sandbox/"+c.accountID+"/inbound",
		map[string]any{"service": "whatsapp", "from": from, "to": to, "content": text, "sender_name": "Ann"})
	require.Equal(t, http.StatusOK, status, "body: %s", raw)
	var out struct {
		MessageID string `json:"message_id"`
		ThreadID  string `json:"thread_id"`
	}
	require.NoError(t, json.Unmarshal(raw, &out))
	return out.MessageID, out.ThreadID
}

// threadMessages counts a thread's messages, read past the API and its
// rate limit.
func (b *testBundle) threadMessages(t *testing.T, c credentials, threadID string) int {
	t.Helper()
	pages, err := b.threads.MessagePages(t.Context(), c.accountID, []string{threadID}, nil, appmessaging.MaxPageSize)
	require.NoError(t, err)
	return len(pages[threadID].Messages)
}
