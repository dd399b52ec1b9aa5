package mcp_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/edge/mcp"
	"github.com/switchboard-dev/switchboard/adapters/store"
)

// proxied runs a Proxy to b as c, and connects a client to it as a
// desktop client connects to `switchboard mcp` over standard input and
// output.
func proxied(t *testing.T, b *testBundle, c credentials, opts sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	clientSide, proxySide := sdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- mcp.Proxy(ctx, proxySide, mcp.ProxyOptions{URL: b.base, APIKey: c.key, APISecret: c.secret, Version: "test",
			Logger: slog.New(slog.DiscardHandler)})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("the proxy did not stop")
		}
	})
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "desktop"}, &opts).Connect(t.Context(), clientSide, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// The proxy offers the server's tools and resources and passes calls,
// answers, errors and notifications through.
func TestProxy(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite)
	updated := make(chan string, 10)
	cs := proxied(t, b, b.acme, sdk.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
		updated <- req.Params.URI
	}})

	direct, err := b.connect(t, b.acme).ListTools(t.Context(), nil)
	require.NoError(t, err)
	viaProxy, err := cs.ListTools(t.Context(), nil)
	require.NoError(t, err)
	names := func(tools []*sdk.Tool) []string {
		var out []string
		for _, tool := range tools {
			out = append(out, tool.Name)
		}
		slices.Sort(out)
		return out
	}
	require.Equal(t, names(direct.Tools), names(viaProxy.Tools))
	require.Contains(t, cs.InitializeResult().Instructions, "wait_for_message")

	_, thread := b.inbound(t, b.acme, userA, agentA, "Hi!")
	var sent struct {
		MessageID string `json:"message_id"`
	}
	ok(t, cs, "send_message", map[string]any{"service": "whatsapp", "from": agentA, "to": userA, "text": "Hello via the proxy"}, &sent)
	require.NotEmpty(t, sent.MessageID)
	require.Equal(t, "conversation_not_started", fails(t, cs, "send_message", map[string]any{"service": "whatsapp", "from": agentA, "to": userB, "text": "x"}).Code)
	require.Equal(t, "timeout_seconds", fails(t, cs, "wait_for_message", map[string]any{"timeout_seconds": 0}).Fields[0].Field)

	uri := "switchboard://threads/" + thread
	require.NoError(t, cs.Subscribe(t.Context(), &sdk.SubscribeParams{URI: uri}))
	// A client of the newest protocol subscribes in the background.
	require.Eventually(t, func() bool { return b.mcp.Subscribed(t.Context(), uri) == 1 }, 5*time.Second, 10*time.Millisecond)
	b.inbound(t, b.acme, userA, agentA, "news")
	select {
	case got := <-updated:
		require.Equal(t, uri, got)
	case <-time.After(15 * time.Second):
		t.Fatal("the update notification did not come through")
	}
	res, err := cs.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: uri})
	require.NoError(t, err)
	require.Contains(t, res.Contents[0].Text, "Hello via the proxy")
	_, err = cs.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: "switchboard://threads/thr_missing"})
	require.ErrorContains(t, err, "Resource not found")
}

// A proxy's session outlives a restart of the server (sessions live in
// the database): its calls go on, and its subscriptions once its event
// stream is back. A proxy whose server session is gone (ended on the
// server) opens a new one, with its subscriptions, and the call goes
// through.
func TestProxyReconnects(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite)
	updated := make(chan string, 10)
	cs := proxied(t, b, b.acme, sdk.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
		updated <- req.Params.URI
	}})
	_, thread := b.inbound(t, b.acme, userA, agentA, "Hi!")
	uri := "switchboard://threads/" + thread
	require.NoError(t, cs.Subscribe(t.Context(), &sdk.SubscribeParams{URI: uri}))
	// A client of the newest protocol subscribes in the background.
	require.Eventually(t, func() bool { return b.mcp.Subscribed(t.Context(), uri) == 1 }, 5*time.Second, 10*time.Millisecond)

	b.stop()
	u, err := url.Parse(b.base)
	require.NoError(t, err)
	cfg := b.cfg
	cfg.Addr = u.Host
	restarted := startApp(t, cfg)
	restarted.acme = b.acme

	var list struct {
		TotalCount int `json:"total_count"`
	}
	ok(t, cs, "list_threads", map[string]any{}, &list)
	require.Equal(t, 1, list.TotalCount)
	require.Equal(t, 1, restarted.mcp.HeldSessions(b.acme.accountID), "the same session, resumed")
	require.Eventually(t, func() bool { accounts, _ := restarted.mcp.Waiting(); return accounts == 1 }, 20*time.Second, 10*time.Millisecond,
		"the event stream is back")
	restarted.inbound(t, restarted.acme, userA, agentA, "after the restart")
	select {
	case got := <-updated:
		require.Equal(t, uri, got)
	case <-time.After(15 * time.Second):
		t.Fatal("the subscription did not outlive the restart")
	}

	n, err := restarted.db.MCPSessionStore().PruneSessions(t.Context(), time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, 1, n, "the server ends the session")
	ok(t, cs, "list_threads", map[string]any{}, &list)
	require.Equal(t, 1, list.TotalCount)
	require.Eventually(t, func() bool { return restarted.mcp.HeldSessions(b.acme.accountID) == 1 }, 5*time.Second, 10*time.Millisecond,
		"the ended session is let go, the new one held")
	require.Eventually(t, func() bool { accounts, _ := restarted.mcp.Waiting(); return accounts == 1 }, 20*time.Second, 10*time.Millisecond)
	restarted.inbound(t, restarted.acme, userA, agentA, "in a new session")
	select {
	case got := <-updated:
		require.Equal(t, uri, got)
	case <-time.After(15 * time.Second):
		t.Fatal("the subscription was not taken again")
	}
}

// The server URL is https, or http only to this machine, and carries no
// user name or password; no refusal repeats a password.
func TestCheckServerURL(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		"https://switchboard.example.com",
		"https://switchboard.example.com:8443/base/",
		"HTTPS://switchboard.example.com",
		"http://127.0.0.1:8080",
		"http://127.1.2.3",
		"http://[::1]:8080",
		"http://localhost:8080",
		"http://LocalHost",
	} {
		u, err := mcp.CheckServerURL(raw)
		require.NoError(t, err, raw)
		require.NotNil(t, u, raw)
	}
	for raw, says := range map[string]string{
		"http://switchboard.example.com":       "use https://",
		"http://10.0.0.1:8080":                 "use https://",
		"http://[::2]:8080":                    "use https://",
		"http://127.0.0.1.example.com":         "use https://",
		"http://localhost.example.com":         "use https://",
		"http://0.0.0.0:8080":                  "use https://",
		"ftp://127.0.0.1":                      "scheme must be https",
		"ws://127.0.0.1":                       "scheme must be https",
		"127.0.0.1:8080":                       "does not parse",
		"switchboard.example.com":              "has no host",
		"https://":                             "has no host",
		"https://user:hunter2@example.com":     "must not carry a user name or password",
		"http://user:hunter2@127.0.0.1:8080":   "must not carry a user name or password",
		"https://hunter2@example.com":          "must not carry a user name or password",
		"https://user:hunter2@example.com:x":   "does not parse",
		"https://user:hunter2@[::1":            "does not parse",
		"https://user:hunter2@exa mple.com":    "does not parse",
		"https://user:hunter2%zz@example.com/": "does not parse",
	} {
		_, err := mcp.CheckServerURL(raw)
		require.ErrorContains(t, err, says, raw)
		require.NotContains(t, err.Error(), "hunter2", "%s: the password is never repeated", raw)
	}
}

// The proxy follows no redirect: a server that redirects to another
// origin (another port of 127.0.0.1) never gets the credentials there,
// and the error names that origin and no password of its Location.
func TestProxyFollowsNoRedirect(t *testing.T) {
	t.Parallel()
	var reached, leaked atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		if r.Header.Get("X-API-Key") != "" || r.Header.Get("X-API-Secret") != "" || r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
		http.Error(w, "not here", http.StatusNotFound)
	}))
	t.Cleanup(elsewhere.Close)
	there, err := url.Parse(elsewhere.URL)
	require.NoError(t, err)
	there.User = url.UserPassword("intruder", "locationpassword")
	there.Path = "/mcp"
	redirecting := httptest.NewServer(http.RedirectHandler(there.String(), http.StatusTemporaryRedirect))
	t.Cleanup(redirecting.Close)

	_, proxySide := sdk.NewInMemoryTransports()
	err = mcp.Proxy(t.Context(), proxySide, mcp.ProxyOptions{URL: redirecting.URL, APIKey: "swk_key", APISecret: "sws_secret", Version: "test",
		Logger: slog.New(slog.DiscardHandler)})
	require.Zero(t, leaked.Load(), "the credentials never reached the other origin")
	require.Zero(t, reached.Load(), "the redirect was not followed")
	require.ErrorContains(t, err, "307, a redirect to "+elsewhere.URL)
	for _, secret := range []string{"sws_secret", "locationpassword"} {
		require.NotContains(t, err.Error(), secret)
	}
	require.False(t, strings.Contains(err.Error(), "intruder"), "nothing of the Location but its origin")
}

// A refused URL is refused before any connection.
func TestProxyRefusesAURLBeforeConnecting(t *testing.T) {
	t.Parallel()
	var reached atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached.Add(1) }))
	t.Cleanup(srv.Close)
	withPassword := strings.Replace(srv.URL, "http://", "http://user:hunter2@", 1)
	_, proxySide := sdk.NewInMemoryTransports()
	err := mcp.Proxy(t.Context(), proxySide, mcp.ProxyOptions{URL: withPassword, APIKey: "swk_key", APISecret: "sws_secret",
		Logger: slog.New(slog.DiscardHandler)})
	require.ErrorContains(t, err, "must not carry a user name or password")
	require.NotContains(t, err.Error(), "hunter2")
	require.Zero(t, reached.Load())
}
