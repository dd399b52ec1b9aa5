package tests

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// webhookAttemptTimeout is how long Switchboard waits for a webhook
// receiver before it gives up on the attempt and its worker moves on.
const webhookAttemptTimeout = 15 * time.Second

// hangingReceiver is a webhook receiver that never answers until the test
// ends; it counts the requests it holds.
type hangingReceiver struct {
	URL           string
	mu            sync.Mutex
	holding, peak int
	got           int
	// first is when the first request came. peak counts only until the
	// first attempt can time out: after that a worker starts a new
	// attempt while the receiver may not yet have seen the abandoned one
	// go, and the two would count as one worker.
	first time.Time
	// release makes the held requests return (and later ones at once).
	release func()
}

func newHangingReceiver(t *testing.T) *hangingReceiver {
	t.Helper()
	h := &hangingReceiver{}
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.holding++
		h.got++
		if h.first.IsZero() {
			h.first = time.Now()
		}
		if time.Since(h.first) < webhookAttemptTimeout-time.Second {
			h.peak = max(h.peak, h.holding)
		}
		h.mu.Unlock()
		defer func() { h.mu.Lock(); h.holding--; h.mu.Unlock() }()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	var once sync.Once
	h.release = func() { once.Do(func() { close(release) }) }
	t.Cleanup(srv.Close)
	t.Cleanup(h.release) // runs first: the handlers return
	h.URL = srv.URL + "/hooks"
	return h
}

func (h *hangingReceiver) counts() (holding, peak, got int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.holding, h.peak, h.got
}

// fairWait bounds how long account B's work may take while account A's
// receiver hangs: well below the webhook attempt timeout (15 s), so that
// B's work cannot be waiting for A's attempts to time out.
const fairWait = 10 * time.Second

// An account whose webhook receiver hangs, with about a hundred events
// queued, holds at most all the job workers but a reserve: another account's
// webhook gets its event, and its sandbox send leaves queued, while the
// first account's deliveries still hang.
func TestHangingWebhookDelaysNoOtherAccount(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		slow, fast := b.createAccount(t, "Hanging receiver"), b.createAccount(t, "Healthy receiver")
		b.addNumber(t, slow.AccountID, "+15550001001")
		b.addNumber(t, fast.AccountID, "+15550002002")
		hanging := newHangingReceiver(t)
		healthy := newHookReceiver(t)
		var hook webhookOut
		b.cliJSON(t, &hook, "webhook", "set", "--account", slow.AccountID, "--url", hanging.URL, "--allow-private-urls", "127.0.0.1/32")
		b.cliJSON(t, &hook, "webhook", "set", "--account", fast.AccountID, "--url", healthy.URL, "--allow-private-urls", "127.0.0.1/32")
		healthy.setSecret(t, hook.Secret)

		// 16 workers: an account's share is 4 of them, and alone it
		// borrows up to 14, keeping 2 free for others; before, every
		// worker waited on A's receiver.
		srv := b.serve(t, "--allow-private-urls", "127.0.0.1/32", "--job-workers", "16")
		client := srv.client(t)

		// A's events: a message.received and a message.sent for each of
		// 50 users, each in its own thread, so that nothing orders them
		// behind each other.
		converse := func(acct createdAccount, agent, user, content string) string {
			t.Helper()
			headers := auth(acct.APIKey, acct.APISecret)
			r := client.Do(http.MethodPost, "/v1/sandbox/"+acct.AccountID+"/inbound",
				map[string]any{"service": "whatsapp", "from": user, "to": agent, "message": "hi"}, headers...)
			require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
			r = client.Do(http.MethodPost, "/v1/messages/individual/"+acct.AccountID+"/send",
				map[string]any{"service": "whatsapp", "from": agent, "to": user, "content": content}, headers...)
			require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
			return r.JSON(t)["message_id"].(string)
		}
		const backlog = 100
		for i := range backlog / 2 {
			converse(slow, "+15550001001", fmt.Sprintf("+1415555%04d", i), "hello")
		}
		require.Eventually(t, func() bool { holding, _, _ := hanging.counts(); return holding >= 2 }, chWait, chTick,
			"A's deliveries reach its receiver and hang")

		headers := auth(fast.APIKey, fast.APISecret)
		start := time.Now()
		messageID := converse(fast, "+15550002002", "+14155550199", "are you there?")
		require.Eventually(t, func() bool { return len(healthy.find("message.sent", messageID)) == 1 }, fairWait, chTick,
			"B's webhook gets its event while A's receiver hangs")
		require.Eventually(t, func() bool {
			r := client.Do(http.MethodGet, "/v1/messages/individual/"+fast.AccountID+"/get-details/"+messageID, nil, headers...)
			return r.StatusCode == http.StatusOK && r.JSON(t)["data"].(map[string]any)["status"] != "queued"
		}, fairWait, chTick, "B's send leaves queued while A's receiver hangs")
		took := time.Since(start)

		holding, peak, got := hanging.counts()
		require.Positive(t, holding, "A's receiver still holds deliveries (B's work took %s)", took)
		require.LessOrEqual(t, peak, 14, "A holds all workers but the reserve at most")
		require.Less(t, got, backlog, "A's other events wait in the queue")
		require.Empty(t, healthy.rejections())
		t.Logf("B's webhook and send done %s after its send, with A's receiver holding %d of %d requests so far", took, holding, got)
		hanging.release() // so that the server's running deliveries end and it stops in time
		srv.stop(t)
	})
}
