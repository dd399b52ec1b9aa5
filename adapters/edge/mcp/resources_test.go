package mcp_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// Each thread is a resource whose content is its transcript, oldest
// first, which no shared cache may keep; another account's thread is
// not found, exactly as a missing one.
func TestThreadTranscriptResource(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		cs := b.connect(t, b.acme)
		templates, err := cs.ListResourceTemplates(t.Context(), nil)
		require.NoError(t, err)
		require.Len(t, templates.ResourceTemplates, 1)
		require.Equal(t, "switchboard://threads/{id}", templates.ResourceTemplates[0].URITemplate)
		require.Equal(t, "text/plain", templates.ResourceTemplates[0].MIMEType)

		_, thread := b.inbound(t, b.acme, userA, agentA, "Hi!")
		var sent struct{}
		ok(t, cs, "send_message", map[string]any{"service": "whatsapp", "from": agentA, "to": userA, "text": "Hello Ann"}, &sent)
		ok(t, cs, "send_message", map[string]any{"service": "whatsapp", "from": agentA, "to": userA,
			"media": map[string]any{"type": "document", "url": "https://example.com/terms.pdf"}}, &sent)

		uri := "switchboard://threads/" + thread
		res, err := cs.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: uri})
		require.NoError(t, err)
		require.Len(t, res.Contents, 1)
		require.Equal(t, "text/plain", res.Contents[0].MIMEType)
		lines := strings.Split(strings.TrimSuffix(res.Contents[0].Text, "\n"), "\n")
		require.Len(t, lines, 3, res.Contents[0].Text)
		require.Regexp(t, `^\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\] Ann \(\+14155550111\): Hi!$`, lines[0])
		require.Regexp(t, `\] agent \(\+14155550100\): Hello Ann$`, lines[1])
		require.Regexp(t, `\] agent \(\+14155550100\): \[document: https://example.com/terms.pdf\]$`, lines[2])
		require.Equal(t, "private", res.CacheScope, "a transcript is the account's alone")
		require.Zero(t, res.TTLMs, "a transcript changes with every message")

		_, otherThread := b.inbound(t, b.other, userA, agentOther, "secret")
		otherURI, missingURI := "switchboard://threads/"+otherThread, "switchboard://threads/thr_missing"
		_, err = cs.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: otherURI})
		var other, missing *jsonrpc.Error
		require.ErrorAs(t, err, &other)
		_, err = cs.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: missingURI})
		require.ErrorAs(t, err, &missing)
		require.Equal(t, missing.Code, other.Code)
		require.Equal(t, strings.ReplaceAll(missing.Message, missingURI, "URI"), strings.ReplaceAll(other.Message, otherURI, "URI"))
		require.Equal(t, strings.ReplaceAll(string(missing.Data), missingURI, "URI"), strings.ReplaceAll(string(other.Data), otherURI, "URI"))
		require.Contains(t, other.Message, "Resource not found")
	})
}

// A subscribed thread's resource is reported updated when a message
// arrives in it, until the subscription ends.
func TestThreadSubscription(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		updated := make(chan string, 10)
		cs := b.connectWith(t, b.acme, clientOptions{ClientOptions: sdk.ClientOptions{
			ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
				updated <- req.Params.URI
			},
		}})
		_, thread := b.inbound(t, b.acme, userA, agentA, "first")
		_, otherThread := b.inbound(t, b.acme, userB, agentA, "elsewhere")
		uri := "switchboard://threads/" + thread
		require.NoError(t, cs.Subscribe(t.Context(), &sdk.SubscribeParams{URI: uri}))

		b.inbound(t, b.acme, userB, agentA, "not in the subscribed thread")
		b.inbound(t, b.acme, userA, agentA, "second")
		select {
		case got := <-updated:
			require.Equal(t, uri, got)
		case <-time.After(15 * time.Second):
			t.Fatal("no notification of the new message")
		}
		res, err := cs.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: uri})
		require.NoError(t, err)
		require.Contains(t, res.Contents[0].Text, ": second\n")
		require.NotContains(t, res.Contents[0].Text, "elsewhere")

		require.NoError(t, cs.Unsubscribe(t.Context(), &sdk.UnsubscribeParams{URI: uri}))
		// Notifications of the messages before it may still be on their
		// way (under load the first message's can come after the
		// subscription, and the second's after the unsubscription); one
		// sent from now on would read the subscription gone.
		for quiet := false; !quiet; {
			select {
			case <-updated:
			case <-time.After(2 * time.Second):
				quiet = true
			}
		}
		b.inbound(t, b.acme, userA, agentA, "third")
		select {
		case got := <-updated:
			if got == uri {
				t.Fatal("notified after unsubscribing")
			}
		case <-time.After(2 * time.Second):
		}

		other := b.connect(t, b.other)
		err = other.Subscribe(t.Context(), &sdk.SubscribeParams{URI: uri})
		require.ErrorContains(t, err, "Resource not found", "another account's thread")
		require.Error(t, cs.Subscribe(t.Context(), &sdk.SubscribeParams{URI: "switchboard://threads/" + otherThread + "/x"}))
	})
}

// A session's subscriptions end with it.
func TestSubscriptionsEndWithTheirSession(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite)
	cs := b.connect(t, b.acme)
	_, thread := b.inbound(t, b.acme, userA, agentA, "first")
	require.NoError(t, cs.Subscribe(t.Context(), &sdk.SubscribeParams{URI: fmt.Sprintf("switchboard://threads/%s", thread)}))
	accounts, _ := b.mcp.Waiting()
	require.Equal(t, 1, accounts)
	require.NoError(t, cs.Close())
	require.Eventually(t, func() bool { accounts, _ := b.mcp.Waiting(); return accounts == 0 }, 5*time.Second, 10*time.Millisecond)
}

// A key revoked while its session's event stream is open ends the
// session, its subscriptions with it, within about a second, as it ends
// GraphQL's sockets.
func TestRevokedKeyEndsItsSessions(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		issued, err := b.acc.IssueCredential(t.Context(), b.acme.accountID, "agent")
		require.NoError(t, err)
		key := credentials{accountID: b.acme.accountID, key: issued.Key, secret: issued.Secret}
		cs := b.connect(t, key)
		_, thread := b.inbound(t, b.acme, userA, agentA, "first")
		require.NoError(t, cs.Subscribe(t.Context(), &sdk.SubscribeParams{URI: "switchboard://threads/" + thread}))
		accounts, _ := b.mcp.Waiting()
		require.Equal(t, 1, accounts)

		_, err = b.replica(t).acc.RevokeCredential(t.Context(), b.acme.accountID, issued.Credential.ID)
		require.NoError(t, err)
		revoked := time.Now()
		require.Eventually(t, func() bool { accounts, _ := b.mcp.Waiting(); return accounts == 0 }, 10*time.Second, 10*time.Millisecond,
			"the subscription of a revoked key stayed")
		t.Logf("session ended %s after the revocation", time.Since(revoked).Round(time.Millisecond))
		_, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "list_threads", Arguments: map[string]any{}})
		require.Error(t, err)
	})
}
