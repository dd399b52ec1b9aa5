package mcp_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// waitAnswer is wait_for_message's answer.
type waitAnswer struct {
	TimedOut bool `json:"timed_out"`
	Message  *struct {
		MessageID  string `json:"message_id"`
		ThreadID   string `json:"thread_id"`
		Text       string `json:"text"`
		From       string `json:"from"`
		SenderName string `json:"sender_name"`
		Direction  string `json:"direction"`
	} `json:"message"`
}

// waitAsync calls wait_for_message on its own goroutine; the answer and
// how long it took arrive on the channel.
func waitAsync(t *testing.T, cs *sdk.ClientSession, args map[string]any) <-chan waitResult {
	t.Helper()
	out := make(chan waitResult, 1)
	start := time.Now()
	go func() {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "wait_for_message", Arguments: args})
		r := waitResult{err: err, took: time.Since(start)}
		if err == nil {
			r.isError = res.IsError
			raw, _ := json.Marshal(res.StructuredContent)
			_ = json.Unmarshal(raw, &r.answer)
		}
		out <- r
	}()
	return out
}

type waitResult struct {
	answer  waitAnswer
	isError bool
	err     error
	took    time.Duration
}

func receive(t *testing.T, results <-chan waitResult) waitResult {
	t.Helper()
	select {
	case r := <-results:
		require.NoError(t, r.err)
		require.False(t, r.isError)
		return r
	case <-time.After(70 * time.Second):
		t.Fatal("wait_for_message did not answer")
		return waitResult{}
	}
}

// A wait ends as soon as a user writes: here 2 s after it started, long
// before its timeout.
func TestWaitForMessageWokenByAnInboundMessage(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		cs := b.connect(t, b.acme)
		results := waitAsync(t, cs, map[string]any{"timeout_seconds": 30})
		eventuallyWaiting(t, b, 1)
		time.Sleep(2 * time.Second)
		messageID, threadID := b.inbound(t, b.acme, userA, agentA, "Are you there?")

		r := receive(t, results)
		require.False(t, r.answer.TimedOut)
		require.NotNil(t, r.answer.Message)
		require.Equal(t, messageID, r.answer.Message.MessageID)
		require.Equal(t, threadID, r.answer.Message.ThreadID)
		require.Equal(t, "Are you there?", r.answer.Message.Text)
		require.Equal(t, "Ann", r.answer.Message.SenderName)
		require.Equal(t, "inbound", r.answer.Message.Direction)
		require.GreaterOrEqual(t, r.took, 2*time.Second)
		require.Less(t, r.took, 15*time.Second, "woken by the message, not by its timeout")
		eventuallyWaiting(t, b, 0)
	})
}

// A wait for one thread lets the account's other threads' messages pass.
func TestWaitForMessageInOneThread(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite)
	cs := b.connect(t, b.acme)
	_, thread := b.inbound(t, b.acme, userA, agentA, "first")
	results := waitAsync(t, cs, map[string]any{"thread_id": thread, "timeout_seconds": 30})
	eventuallyWaiting(t, b, 1)
	b.inbound(t, b.acme, userB, agentA, "another thread")
	b.inbound(t, b.other, userA, agentOther, "another account")
	time.Sleep(1500 * time.Millisecond) // the live feed reads the log at least once a second
	messageID, _ := b.inbound(t, b.acme, userA, agentA, "this thread")
	r := receive(t, results)
	require.Equal(t, messageID, r.answer.Message.MessageID)
	require.Equal(t, "this thread", r.answer.Message.Text)
}

// A message received on another replica wakes a wait on this one.
func TestWaitForMessageAcrossReplicas(t *testing.T) {
	t.Parallel()
	b := setup(t, store.Postgres)
	other := b.replica(t)
	cs := b.connect(t, b.acme)
	results := waitAsync(t, cs, map[string]any{"timeout_seconds": 30})
	eventuallyWaiting(t, b, 1)
	time.Sleep(2 * time.Second)
	messageID, _ := other.inbound(t, other.acme, userA, agentA, "via the other replica")
	r := receive(t, results)
	require.Equal(t, messageID, r.answer.Message.MessageID)
	require.Less(t, r.took, 15*time.Second)
}

// Without a message, the wait answers timed_out at its timeout.
func TestWaitForMessageTimesOut(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite)
	cs := b.connect(t, b.acme)
	r := receive(t, waitAsync(t, cs, map[string]any{"timeout_seconds": 1}))
	require.True(t, r.answer.TimedOut)
	require.Nil(t, r.answer.Message)
	require.GreaterOrEqual(t, r.took, time.Second)
	require.Less(t, r.took, 10*time.Second)
	eventuallyWaiting(t, b, 0)
}

// A client that goes away mid-wait ends its wait at once, not at its
// timeout: nothing of it stays behind.
func TestWaitEndsWhenTheClientDisconnects(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite)
	var c conns
	cs := b.connectWith(t, b.acme, clientOptions{transport: c.transport()})
	results := waitAsync(t, cs, map[string]any{"timeout_seconds": 60})
	eventuallyWaiting(t, b, 1)
	start := time.Now()
	c.cut()
	eventuallyWaiting(t, b, 0)
	require.Less(t, time.Since(start), 5*time.Second)
	select {
	case r := <-results:
		require.Error(t, r.err, "the client's call fails with its connection")
	case <-time.After(10 * time.Second):
		t.Fatal("the client's call did not end with its connection")
	}
	// The session's event stream (its GET) held the account's live
	// subscription too; it ends with the same connection, a moment later.
	require.Eventually(t, func() bool {
		accounts, _ := b.mcp.Waiting()
		return accounts == 0
	}, 5*time.Second, 10*time.Millisecond, "the account's live subscription ended with its last listener")

	// The server still serves the account.
	cs2 := b.connect(t, b.acme)
	r := receive(t, waitAsync(t, cs2, map[string]any{"timeout_seconds": 1}))
	require.True(t, r.answer.TimedOut)
}

// Stopping the server ends the waits in flight at once.
func TestStopEndsWaits(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite)
	cs := b.connect(t, b.acme)
	results := waitAsync(t, cs, map[string]any{"timeout_seconds": 60})
	eventuallyWaiting(t, b, 1)
	start := time.Now()
	b.stop()
	require.Less(t, time.Since(start), 5*time.Second)
	select {
	case <-results:
	case <-time.After(10 * time.Second):
		t.Fatal("the wait outlived the server")
	}
}

// eventuallyWaiting waits until the server holds n waits.
func eventuallyWaiting(t *testing.T, b *testBundle, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		_, waits := b.mcp.Waiting()
		return waits == n
	}, 10*time.Second, 10*time.Millisecond, "waiting for %d waits", n)
}

// conns remembers the connections a client opened, so that a test can cut
// them as a client that goes away does.
type conns struct {
	mu   sync.Mutex
	list []net.Conn
}

func (c *conns) transport() http.RoundTripper {
	return &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			c.mu.Lock()
			c.list = append(c.list, conn)
			c.mu.Unlock()
		}
		return conn, err
	}}
}

func (c *conns) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range c.list {
		_ = conn.Close()
	}
}

// A key revoked while one of its waits is in flight ends the wait within
// about a second, not at its timeout: the wait would otherwise hand a
// message to a key that may no longer read it.
func TestRevokedKeyEndsItsWaits(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite)
	issued, err := b.acc.IssueCredential(t.Context(), b.acme.accountID, "agent")
	require.NoError(t, err)
	cs := b.connect(t, credentials{accountID: b.acme.accountID, key: issued.Key, secret: issued.Secret})
	results := waitAsync(t, cs, map[string]any{"timeout_seconds": 60})
	eventuallyWaiting(t, b, 1)

	_, err = b.acc.RevokeCredential(t.Context(), b.acme.accountID, issued.Credential.ID)
	require.NoError(t, err)
	revoked := time.Now()
	eventuallyWaiting(t, b, 0)
	t.Logf("the wait ended %s after the revocation", time.Since(revoked).Round(time.Millisecond))
	select {
	case r := <-results:
		require.True(t, r.err != nil || r.isError, "a revoked key's wait ended with an answer: %+v", r.answer)
		require.False(t, r.answer.TimedOut)
		require.Nil(t, r.answer.Message)
	case <-time.After(10 * time.Second):
		t.Fatal("the revoked key's wait did not end")
	}
}
