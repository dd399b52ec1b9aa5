package mcp_test

import (
	"context"
	"log/slog"
	"net/url"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/mcp"
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
	require.Eventually(t, func() bool { accounts, _ := b.mcp.Waiting(); return accounts == 1 }, 5*time.Second, 10*time.Millisecond)
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

// A proxy whose server session is gone (the server restarted) opens a new
// one, with its subscriptions, and the call goes through.
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
	require.Eventually(t, func() bool { accounts, _ := b.mcp.Waiting(); return accounts == 1 }, 5*time.Second, 10*time.Millisecond)

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
	restarted.inbound(t, restarted.acme, userA, agentA, "after the restart")
	select {
	case got := <-updated:
		require.Equal(t, uri, got)
	case <-time.After(15 * time.Second):
		t.Fatal("the subscription was not taken again")
	}
}
